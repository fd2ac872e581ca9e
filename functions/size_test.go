package functions_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
)

// MaxBootstrapBytes is the size budget of each pure-Go bootstrap.
const MaxBootstrapBytes = 15 << 20

// TestPureGoBootstrapSizes builds the four pure-Go functions exactly as
// `make build` does (linux/arm64, CGO_ENABLED=0, lambda.norpc, -trimpath,
// -s -w) and checks each stays under 15 MB.
func TestPureGoBootstrapSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four linux/arm64 binaries")
	}
	root, err := lambdatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"hashcheck", "classify", "promote", "executionfailed"} {
		out := filepath.Join(dir, name, "bootstrap")
		if err := lambdatest.BuildFor(root, out, name, "linux", "arm64", "0"); err != nil {
			t.Fatal(err)
		}
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
