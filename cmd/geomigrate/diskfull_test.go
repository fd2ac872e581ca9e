package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
)

// TestDiskFullStopsMigrateWithAReport: the destination disk fills up at the
// first staged write. The run stops at once (no other file converts and
// none spends its retries on a write that cannot succeed), exits non-zero
// with one line naming the cause, and writes a report in which every input
// has exactly one entry: the file that met the full disk in the
// dead-letter queue, the rest not started.
func TestDiskFullStopsMigrateWithAReport(t *testing.T) {
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, src)
	names := []string{"dem_utm33.tif", "landcover_4326.tif", "temperature_f32.tif", "parks.geojson"}
	samples := filepath.Dir(sampleFile(t, names[0]))
	for _, n := range names {
		copyFile(t, filepath.Join(samples, n), filepath.Join(src, n))
	}
	var injected *faultstore.Store
	wrapObjects = func(s objectstore.Store) objectstore.Store {
		injected = faultstore.New(s, faultstore.Rule{Op: faultstore.OpPut,
			Match: func(_, k string) bool { return strings.HasPrefix(k, migration.DefaultStagingPrefix) },
			Err: fault.FromOS("dirstore.Put dest/"+migration.DefaultStagingPrefix+"x",
				&os.PathError{Op: "write", Path: filepath.Join(dest, "_staging", ".geomigrate-tmp-1"), Err: syscall.ENOSPC})})
		return injected
	}
	t.Cleanup(func() { wrapObjects = func(s objectstore.Store) objectstore.Store { return s } })

	out, stderr, err := run(t, "migrate", src, "--dest", dest, "--workers", "1", "--progress", "plain")
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "3 file(s) not started") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("migrate on a full disk: %v, want one line: stopped, disk full, 3 not started\n%s\n%s", err, out, stderr)
	}
	if n := injected.Calls(faultstore.OpPut); n != 1 {
		t.Errorf("%d staged writes attempted, want 1: the run went on after the disk was full", n)
	}
	r := lastReport(t, out)
	if len(r.Files) != len(names) {
		t.Fatalf("report has %d entries for %d inputs", len(r.Files), len(names))
	}
	if tot := r.Totals; tot.DeadLetter != 1 || tot.NotStarted != 3 || tot.Retries != 0 {
		t.Errorf("totals %+v, want 1 dlq, 3 not started, no retries", tot)
	}
	for _, o := range r.Files {
		if o.Status == localrun.StatusDeadLetter && o.Tier != string(fault.TierSystemic) {
			t.Errorf("%s: tier %s, want systemic", o.Key, o.Tier)
		}
	}
	if !strings.Contains(out, "Not started: 3 file(s)") {
		t.Errorf("summary does not say what was not started:\n%s", out)
	}
}
