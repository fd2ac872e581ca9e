//go:build integration

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// TestContainerRouteThroughTheBinary: with a one-byte container limit,
// `geomigrate migrate` converts every sample within the recipe's budgets
// in a child process of the same binary (`geomigrate task convert`, the
// local ecs:runTask.sync), which reaches the run's state store through
// its parent; the good samples complete, and the task's DataError for a
// raster without a CRS is classified as the Lambda's is (remediation,
// MissingCRS). A second run skips every file, as after a Lambda run.
func TestContainerRouteThroughTheBinary(t *testing.T) {
	bin := cliBinary(t)
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if out, err := exec.Command(bin, "sample-data", src).CombinedOutput(); err != nil {
		t.Fatalf("sample-data: %v\n%s", err, out)
	}
	run := func() localrun.Report {
		t.Helper()
		cmd := exec.Command(bin, "migrate", src, "--dest", dest, "--progress", "plain")
		cmd.Env = append(os.Environ(), "GEOMIGRATE_CONTAINER_BYTES=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return lastReport(t, stdout.String()+"\n"+stderr.String())
	}
	r := run()
	byKey := map[string]localrun.Outcome{}
	for _, o := range r.Files {
		byKey[o.Key] = o
	}
	inContainer := 0
	for key, o := range byKey {
		if o.Engine == migration.EngineContainer {
			inContainer++
		}
		if strings.HasSuffix(key, "pixel_bomb.tif") && o.Engine != migration.EngineLambda {
			t.Errorf("%s: over the recipe's pixel budget, converted on %q; want the Lambda, whose preflight refuses it", key, o.Engine)
		}
	}
	if inContainer < 7 {
		t.Fatalf("%d files converted in the container, want every good sample at least: %+v", inContainer, r.Files)
	}
	for _, key := range []string{"dem_utm33.tif", "places.shp", "city.gpkg"} {
		if o := byKey[key]; o.Status != localrun.StatusCompleted || o.Engine != migration.EngineContainer {
			t.Errorf("%s: %s on %q (%s %s), want completed in the container", key, o.Status, o.Engine, o.Error, o.Message)
		}
	}
	if o := byKey["no_crs.tif"]; o.Status != localrun.StatusRemediation || o.Error != "DataError" || o.Code != string(fault.MissingCRS) || o.Engine != migration.EngineContainer {
		t.Errorf("no_crs.tif: %+v, want remediation DataError MissingCRS from the container", o)
	}
	if r.Totals.DeadLetter != 0 || r.Totals.Failed != 0 {
		t.Errorf("dlq %d, failed %d on a fault-free run", r.Totals.DeadLetter, r.Totals.Failed)
	}
	second := run()
	for _, o := range second.Files {
		if o.Status != localrun.StatusSkipped && o.Status != localrun.StatusIgnored {
			t.Errorf("second run: %s is %s, want skipped", o.Key, o.Status)
		}
	}
}
