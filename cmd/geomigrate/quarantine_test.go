package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/quarantine"
)

// TestBundleReproducesTheFailure takes the bundles of a failed run (asked
// to copy their inputs) and runs each one's reproduction command (in process: realMain, as the
// binary would) on the bundle alone — the source directory is gone — and
// gets the same route and error code.
func TestBundleReproducesTheFailure(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--vector-format", "FlatGeobuf", "--zstd-level", "9", "--quarantine-copy-input")
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
			if qdir := filepath.Join(pathsFor(dest, "").dir, quarantineDirName); !strings.HasPrefix(o.Bundle, qdir+string(filepath.Separator)) {
				t.Fatalf("bundle %q is not under %s", o.Bundle, qdir)
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
				!strings.Contains(rp.Command, "--vector-format FlatGeobuf --zstd-level 9") {
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

// TestDestinationHoldsOnlyOutputs: after a run with bad inputs, the
// destination holds outputs, their STAC metadata and nothing else — no
// bundle, no copy of a bad source (every .tif under it passes GDAL's COG
// validator), no local path of the run and no host name. The bundles are
// in the state directory and reference their inputs.
func TestDestinationHoldsOnlyOutputs(t *testing.T) {
	const script = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_cloud_optimized_geotiff.py"
	if _, err := os.Stat(script); err != nil {
		t.Skipf("GDAL's COG validator is not installed (%s): apt-get install python3-gdal", script)
	}
	dir := t.TempDir()
	samples, dest, state := filepath.Join(dir, "samples"), filepath.Join(dir, "out"), filepath.Join(dir, "state")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--state-dir", state)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	report := lastReport(t, out)
	routed := 0
	for _, o := range report.Files {
		if o.Status != localrun.StatusRemediation && o.Status != localrun.StatusDeadLetter {
			continue
		}
		routed++
		if !strings.HasPrefix(o.Bundle, filepath.Join(state, quarantineDirName)+string(filepath.Separator)) {
			t.Errorf("%s: bundle %q is not in the state directory", o.Key, o.Bundle)
			continue
		}
		var m quarantine.Manifest
		b, err := os.ReadFile(filepath.Join(o.Bundle, quarantine.ManifestFile))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil || m.Copied || m.Input.URI == "" || len(m.Input.SHA256) != 64 || m.Input.Size < 0 {
			t.Errorf("%s: manifest %v: copied %v, input %+v; want a reference", o.Key, err, m.Copied, m.Input)
		}
		if ins, _ := filepath.Glob(filepath.Join(o.Bundle, "input", "*")); len(ins) != 0 {
			t.Errorf("%s: the bundle copies its input: %v", o.Key, ins)
		}
	}
	if routed < 4 {
		t.Fatalf("%d routed files; the samples hold more bad ones", routed)
	}
	host, _ := os.Hostname()
	tifs := 0
	err = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		switch name := d.Name(); {
		case name == quarantine.ManifestFile || name == quarantine.LogsFile || strings.Contains(rel, quarantineDirName):
			t.Errorf("a bundle file under the destination: %s", rel)
		case strings.HasSuffix(name, ".tif"):
			tifs++
			if out, err := exec.Command("/usr/bin/python3", script, p).CombinedOutput(); err != nil || !strings.Contains(string(out), "is a valid cloud optimized GeoTIFF") {
				t.Errorf("%s is not a COG: %v\n%s", rel, err, out)
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			// The host name as a JSON string (a record's host field), or
			// anywhere when it is too long to occur by chance in binary data.
			named := bytes.Contains(b, []byte(`"`+host+`"`)) || (len(host) >= 8 && bytes.Contains(b, []byte(host)))
			if bytes.Contains(b, []byte(dir)) || (host != "" && named) {
				t.Errorf("%s names a local path of the run or the host %q", rel, host)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tifs == 0 {
		t.Fatal("no .tif under the destination")
	}
}

// TestQuarantineOffWritesNoBundles: --quarantine-prefix off is honoured
// by local runs as by AWS ones.
func TestQuarantineOffWritesNoBundles(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--quarantine-prefix", "off")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	routed := 0
	for _, o := range lastReport(t, out).Files {
		if o.Status == localrun.StatusRemediation || o.Status == localrun.StatusDeadLetter {
			routed++
			if o.Bundle != "" {
				t.Errorf("%s has a bundle: %s", o.Key, o.Bundle)
			}
		}
	}
	if routed == 0 {
		t.Fatal("no routed file")
	}
	if left, _ := filepath.Glob(filepath.Join(pathsFor(dest, "").dir, quarantineDirName, "*")); len(left) != 0 {
		t.Errorf("bundles written: %v", left)
	}
}
