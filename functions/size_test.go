package functions_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
)

// MaxBootstrapBytes is the size budget of each pure-Go bootstrap.
const MaxBootstrapBytes = 15 << 20

// TestPureGoBootstrapSizes checks the four pure-Go bootstraps `make build`
// writes (linux/arm64, CGO_ENABLED=0, lambda.norpc, -trimpath, -s -w) each
// stay under 15 MB. It compiles nothing: make test runs make build first.
func TestPureGoBootstrapSizes(t *testing.T) {
	root, err := lambdatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hashcheck", "classify", "promote", "executionfailed"} {
		out := lambdatest.RequireBuilt(t, filepath.Join(root, "build", name, "bootstrap"), "make build")
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes (%.1f MiB)", name, fi.Size(), float64(fi.Size())/(1<<20))
		if fi.Size() >= MaxBootstrapBytes {
			t.Errorf("%s bootstrap is %d bytes, budget %d", name, fi.Size(), MaxBootstrapBytes)
		}
	}
}
