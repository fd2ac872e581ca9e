//go:build integration

package sfn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"
)

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
