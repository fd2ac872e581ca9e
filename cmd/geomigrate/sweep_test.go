package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateSweepsTheTempFilesOfAKilledRun: the hidden
// temporary files a killed run leaves in the output root, in _staging/ and
// beside sidecars are removed when the next run starts (it is then the only
// process writing there); other files are not touched.
func TestMigrateSweepsTheTempFilesOfAKilledRun(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	left := []string{
		filepath.Join(dest, ".geomigrate-tmp-5d1e0c3a9b7f2e41"),
		filepath.Join(dest, "_staging", "abc-def", ".geomigrate-tmp-0a1b2c3d4e5f6071"),
		filepath.Join(dest, "samples", ".geomigrate-meta", ".geomigrate-tmp-1122334455667788"),
	}
	mine := filepath.Join(dest, "notes", "geomigrate-tmp-mine.txt")
	for _, p := range append(append([]string(nil), left...), mine) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half a COG"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, _ := run(t, "migrate", samples, "--dest", dest, "--progress", "plain")
	if !strings.Contains(stderr, "removed 3 temporary file(s)") {
		t.Errorf("stderr does not say what was swept:\n%s", stderr)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived the next run (%v)", p, err)
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a file not named as the store's temporaries was removed: %v", err)
	}
	if r := lastReport(t, out); r.Totals.Completed == 0 {
		t.Errorf("nothing converted: %+v", r.Totals)
	}
}
