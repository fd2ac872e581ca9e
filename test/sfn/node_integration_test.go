//go:build integration

package sfn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
)

// secondEngine is the repository's root, the Node 22 binary that
// `make test-sfn-tools` installs, and this directory, whose node_modules
// hold aws-local-stepfunctions; it skips the test when either is missing.
func secondEngine(t *testing.T) (root, node, dir string) {
	t.Helper()
	root, err := lambdatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	arch := "x64"
	if runtime.GOARCH == "arm64" {
		arch = "arm64"
	}
	node = filepath.Join(root, ".tools", "node22", "node_modules", "node-linux-"+arch, "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Skipf("Node 22 not installed at %s: run `make test-sfn-tools`", node)
	}
	dir = filepath.Join(root, "test", "sfn")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "aws-local-stepfunctions")); err != nil {
		t.Skip("test/sfn/node_modules/aws-local-stepfunctions missing: run `make test-sfn-tools`")
	}
	return root, node, dir
}

// runNodeScript runs one of this directory's aws-local-stepfunctions
// scripts (run.mjs, container.mjs, backfillpolicy.mjs) with job as JSON on
// its stdin, and decodes the one JSON document it prints.
func runNodeScript[T any](t *testing.T, node, dir, script string, job any, timeout time.Duration) T {
	t.Helper()
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var out T
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%s output %q: %v\nstderr %s", script, stdout.String(), err, stderr.String())
	}
	return out
}
