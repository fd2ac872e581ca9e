package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, doc string
		want      string // in stdout, or in the error when bad
		bad       bool
	}{
		{"defaults filled in", `{"version": 1, "backfill": {"max_concurrency": 8}}`, `"tolerated_failure_percentage": 100`, false},
		{"refused", `{"version": 1, "alarms": {"transient_rate": 15}}`, "/alarms/transient_rate: maximum: got 15, want 1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(dir, tt.name+".json"), tt.doc)
			out, _, err := run(t, "policy", "check", path)
			switch {
			case tt.bad && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			case !tt.bad && (err != nil || !strings.Contains(out, tt.want)):
				t.Errorf("error %v, stdout %s, want %q", err, out, tt.want)
			}
		})
	}
}

// policy init prints a document that policy check accepts unchanged and
// that a run takes with --policy.
func TestPolicyInitIsAValidStartingPoint(t *testing.T) {
	doc, _, err := run(t, "policy", "init")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "policy.json"), doc)
	checked, _, err := run(t, "policy", "check", path)
	if err != nil {
		t.Fatalf("policy check of policy init's output: %v", err)
	}
	if checked != doc {
		t.Errorf("policy check changed the built-in document:\ninit:  %s\ncheck: %s", doc, checked)
	}
	for _, want := range []string{`"version": 1`, `"classification"`, `"job_deadline_seconds": 7200`, `"backfill"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("policy init lacks %s:\n%s", want, doc)
		}
	}
}

// A run given a bad document does not start.
func TestMigrateRefusesABadPolicy(t *testing.T) {
	src, dest := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeFile(t, filepath.Join(src, "a.tif"), "not a raster")
	bad := writeFile(t, filepath.Join(t.TempDir(), "policy.json"), `{"version": 1, "job_deadline_seconds": 10}`)
	_, _, err := run(t, "migrate", src, "--dest", dest, "--policy", bad)
	if err == nil || !strings.Contains(err.Error(), "--policy "+bad) || !strings.Contains(err.Error(), "/job_deadline_seconds") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(dest, ".geomigrate-state", "state.db")); !os.IsNotExist(err) {
		t.Errorf("a refused run opened its state store: %v", err)
	}
}

// The local backfill's Distributed Map takes ToleratedFailurePercentage
// from the document when the flag is not given, and the flag wins over it.
func TestBackfillMapSettingsFromThePolicy(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.tif"), "not a raster") // routed: a failed item
	strict := writeFile(t, filepath.Join(t.TempDir(), "policy.json"), `{"version": 1, "backfill": {"max_concurrency": 1, "tolerated_failure_percentage": 0}}`)
	tests := []struct {
		name   string
		args   []string
		failed bool
	}{
		{"no document", nil, false},
		{"document tolerates none", []string{"--policy", strict}, true},
		{"flag over the document", []string{"--policy", strict, "--tolerated-failure-percentage", "100"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"backfill", src, "--dest", filepath.Join(t.TempDir(), "out"), "--progress", "plain"}, tt.args...)
			_, stderr, err := run(t, args...)
			if failed := err != nil && strings.Contains(err.Error(), "States.ExceedToleratedFailureThreshold"); failed != tt.failed {
				t.Errorf("error %v, want the map stopped: %v\n%s", err, tt.failed, stderr)
			}
			if tt.failed && !strings.Contains(stderr, "(1 at a time)") {
				t.Errorf("max_concurrency not from the document:\n%s", stderr)
			}
		})
	}
}
