package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := realMain(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"no-such-command"},
		{"migrate"},
		{"migrate", "somewhere"},
		{"status"},
		{"sample-data"},
		{"validate"},
	} {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("geomigrate %v succeeded", args)
		}
	}
	if stdout, _, err := run(t, "help"); err != nil || !strings.Contains(stdout, "migrate") {
		t.Errorf("help: %v\n%s", err, stdout)
	}
}

func TestGraphIsMermaidOfTheStateMachine(t *testing.T) {
	out, _, err := run(t, "graph")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flowchart", "HashCheck", "Convert", "Promote", "Classify", "SendToRemediation", "SendToDeadLetter"} {
		if !strings.Contains(out, want) {
			t.Errorf("graph lacks %q", want)
		}
	}
}

// lastReport reads the newest run report in dest.
func lastReport(t *testing.T, stdout string) localrun.Report {
	t.Helper()
	i := strings.LastIndex(stdout, "report: ")
	if i < 0 {
		t.Fatalf("no report path in output:\n%s", stdout)
	}
	path := strings.TrimSpace(strings.SplitN(stdout[i+len("report: "):], "\n", 2)[0])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r localrun.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMakeRunFlow is what `make run` does, twice: sample data, migrate,
// status; the second migrate converts nothing.
func TestMakeRunFlow(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("first migrate: %v\n%s\n%s", err, out, stderr)
	}
	first := lastReport(t, out)
	if first.Totals.Completed == 0 || first.Totals.Remediation == 0 || first.Totals.DeadLetter+first.Totals.Failed != 0 {
		t.Fatalf("first run totals %+v", first.Totals)
	}
	if !strings.Contains(out, "Needs attention:") || !strings.Contains(stderr, "[1/") {
		t.Errorf("summary or progress lines missing:\n%s\n%s", out, stderr)
	}
	out, _, err = run(t, "migrate", samples, "--dest", dest)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	second := lastReport(t, out)
	if second.Totals.Skipped != second.Totals.Files || second.Totals.Files != first.Totals.Files {
		t.Fatalf("second run totals %+v, want every file skipped", second.Totals)
	}
	// README: "Change one file under samples/ and run again: only that
	// file is converted."
	copyFile(t, filepath.Join(samples, "landcover_4326.tif"), filepath.Join(samples, "dem_utm33.tif"))
	out, _, err = run(t, "migrate", samples, "--dest", dest)
	if err != nil {
		t.Fatalf("third migrate: %v", err)
	}
	third := lastReport(t, out)
	if third.Totals.Completed != 1 || third.Totals.Skipped != third.Totals.Files-1 {
		t.Fatalf("after changing one file, totals %+v, want that file alone converted", third.Totals)
	}
	status, _, err := run(t, "status", "--dest", dest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"COMPLETED", "REMEDIAL", "remediation"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	var tifs []string
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tif") && !strings.Contains(p, stateDirName) && !strings.Contains(p, quarantineDirName) {
			tifs = append(tifs, p)
		}
		return nil
	})
	if len(tifs) == 0 {
		t.Fatal("no COG outputs")
	}
	if out, _, err := run(t, append([]string{"validate"}, tifs...)...); err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	// A recipe the pipeline cannot honour is refused before any work.
	if _, _, err := run(t, "migrate", samples, "--dest", dest, "--vector-format", "Shapefile"); err == nil {
		t.Fatal("migrate with an unsupported vector format succeeded")
	}
}

func TestReplayNeedsAKnownQueue(t *testing.T) {
	_, _, err := run(t, "replay", "--dest", t.TempDir(), "--queue", "elsewhere")
	if err == nil || errors.Is(err, errUsage) {
		t.Fatalf("err = %v", err)
	}
}

// TestLeftoverStagingIsSwept: a staged output whose job never promoted it
// (interrupted, routed after Convert) does not outlive the next run.
func TestLeftoverStagingIsSwept(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if err := os.MkdirAll(samples, 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty source is refused before the run: give it one file.
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(samples, "dem.tif"))
	// An output staged by a killed run (in the directory store's scratch
	// directory, and nested as older versions staged it), and a quarantine
	// bundle file.
	leftovers := []string{filepath.Join(dest, ".geomigrate-scratch", "_staging%2Fabc-124%2Fdem.tif"),
		filepath.Join(dest, "_staging", "abc-123", "dem.tif"),
		filepath.Join(pathsFor(dest, "").dir, quarantineDirName, "_staging", "job", "exec", "manifest.json")}
	for _, leftover := range leftovers {
		if err := os.MkdirAll(filepath.Dir(leftover), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(leftover, []byte("half a file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, err := run(t, "migrate", samples, "--dest", dest); err != nil || !strings.Contains(stderr, "removed 3 staged object") {
		t.Fatalf("migrate: %v\n%s", err, stderr)
	}
	for _, leftover := range leftovers {
		if _, err := os.Stat(leftover); !os.IsNotExist(err) {
			t.Fatalf("leftover staging object %s still there: %v", leftover, err)
		}
	}
}

// TestReadmeBackfillExample runs the README's backfill line on the samples:
// its prefix must select some of them.
func TestReadmeBackfillExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "geomigrate backfill samples/ ") {
			args = strings.Fields(strings.SplitN(line, "#", 2)[0])[1:]
			break
		}
	}
	if len(args) == 0 {
		t.Fatal("README has no 'geomigrate backfill samples/ ...' line")
	}
	dir := t.TempDir()
	if _, _, err := run(t, "sample-data", filepath.Join(dir, "samples")); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		switch a {
		case "samples/":
			args[i] = filepath.Join(dir, "samples")
		case "out/":
			args[i] = filepath.Join(dir, "out")
		}
	}
	out, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("geomigrate %v: %v\n%s\n%s", args, err, out, stderr)
	}
	if r := lastReport(t, out); r.Totals.Completed == 0 {
		t.Fatalf("the README's backfill converted nothing: totals %+v\n%s", r.Totals, out)
	}
}

// TestCPUProfile: the hidden --cpuprofile writes Go's CPU profile (a
// gzipped protobuf) of the command, refuses a path it cannot create, and
// stays out of the usage.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path string
		wantErr    bool
	}{
		{"written", filepath.Join(dir, "cpu.prof"), false},
		{"a directory that does not exist", filepath.Join(dir, "absent", "cpu.prof"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, "--cpuprofile", tc.path, "graph")
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
					t.Fatalf("err = %v, want a --cpuprofile error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(tc.path)
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatalf("profile %d bytes, %v: not a gzipped profile", len(b), err)
			}
		})
	}
	if stdout, _, err := run(t, "--help"); err != nil || !strings.Contains(stdout, "migrate") || strings.Contains(stdout, "cpuprofile") {
		t.Errorf("--help shows the hidden flag (%v):\n%s", err, stdout)
	}
}
