package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/quarantine"
)

// TestBundleReproducesTheFailure takes the bundles of a failed run and
// runs each one's reproduction command (in process: realMain, as the
// binary would) on the bundle alone — the source directory is gone — and
// gets the same route and error code.
func TestBundleReproducesTheFailure(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--vector-format", "FlatGeobuf", "--zstd-level", "3")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	report := lastReport(t, out)
	if err := os.RemoveAll(samples); err != nil {
		t.Fatal(err)
	}
	routed := 0
	for _, o := range report.Files {
		if o.Status != localrun.StatusRemediation && o.Status != localrun.StatusDeadLetter {
			continue
		}
		routed++
		t.Run(o.Key, func(t *testing.T) {
			if !strings.HasPrefix(o.Bundle, filepath.Join(dest, quarantineDirName)+string(filepath.Separator)) {
				t.Fatalf("bundle %q is not under DEST/%s", o.Bundle, quarantineDirName)
			}
			if !strings.Contains(out, "bundle: "+o.Bundle) {
				t.Errorf("the summary does not show the bundle %s", o.Bundle)
			}
			b, err := os.ReadFile(filepath.Join(o.Bundle, quarantine.ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			var m quarantine.Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			rp := m.Reproduce
			if !m.Copied || !strings.HasPrefix(rp.Input, quarantine.InputDir) || !strings.Contains(rp.Command, filepath.Join(o.Bundle, rp.Input)) ||
				!strings.Contains(rp.Command, "--vector-format FlatGeobuf --zstd-level 3") {
				t.Fatalf("reproduction: %+v", rp)
			}
			if m.Versions.GDAL == "" || m.Versions.PROJ == "" || m.Versions.Geomigrate == "" {
				t.Errorf("versions: %+v", m.Versions)
			}
			repro := filepath.Join(t.TempDir(), "repro")
			args := append([]string{"migrate", filepath.Join(o.Bundle, filepath.FromSlash(rp.Input)), "--dest", repro,
				"--report", filepath.Join(repro, "report.json")}, rp.Flags...)
			rout, rerr, err := run(t, args...)
			if err != nil && o.Status == localrun.StatusRemediation {
				t.Fatalf("reproduction: %v\n%s\n%s", err, rout, rerr)
			}
			again := lastReport(t, rout)
			if len(again.Files) != 1 {
				t.Fatalf("reproduction ran %d files", len(again.Files))
			}
			got := again.Files[0]
			if got.Status != o.Status || got.Error != o.Error || got.Code != o.Code || got.Code != rp.Expect.Code || got.Error != rp.Expect.Error {
				t.Errorf("reproduction ended %s %s/%s, the run %s %s/%s (manifest expects %+v)", got.Status, got.Error, got.Code, o.Status, o.Error, o.Code, rp.Expect)
			}
		})
	}
	if routed < 4 {
		t.Fatalf("%d routed files in the run; the samples hold more bad ones", routed)
	}
}
