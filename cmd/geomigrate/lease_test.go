package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/gdal"
)

// goodRaster writes the sample data and returns one raster that converts.
func goodRaster(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "samples")
	ss, err := gdal.WriteSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" {
			return s.Path
		}
	}
	t.Fatal("no good raster among the samples")
	return ""
}

// TestSameFileFourTimesIsConvertedOnce (issue 9): the local lease defaults
// were never applied (lease 0 s), so every execution of the same file took
// the others' lease over, converted it again, and some ended in the
// dead-letter queue with "COMPLETED → COMPLETED is not allowed".
func TestSameFileFourTimesIsConvertedOnce(t *testing.T) {
	f := goodRaster(t)
	dest := filepath.Join(t.TempDir(), "out")
	out, stderr, err := run(t, "migrate", f, f, f, f, "--dest", dest, "--workers", "4", "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	if r.Totals.Completed != 1 || r.Totals.Skipped != 3 || r.Totals.Files != 4 {
		t.Fatalf("totals %+v, want 1 completed and 3 skipped", r.Totals)
	}
	for _, o := range r.Files {
		if o.Status == "skipped" && o.Reason != "in_progress" && o.Reason != "already_migrated" {
			t.Errorf("%s skipped for %q", o.Key, o.Reason)
		}
	}
}

func TestLeaseFlagIsDocumentedAndValidated(t *testing.T) {
	_, stderr, _ := run(t, "migrate", "--help")
	if !strings.Contains(stderr, "-lease") {
		t.Fatalf("migrate usage does not document --lease:\n%s", stderr)
	}
	f := goodRaster(t)
	if _, _, err := run(t, "migrate", f, "--dest", t.TempDir(), "--lease", "10s"); err == nil || !strings.Contains(err.Error(), "--lease") {
		t.Fatalf("a lease shorter than a minute was accepted: %v", err)
	}
}
