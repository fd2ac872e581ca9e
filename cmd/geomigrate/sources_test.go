package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// sampleFile writes the demo data once per test and returns one of them.
func sampleFile(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "samples")
	if _, err := sampledata.Write(dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func outcomesByKey(r localrun.Report) map[string]localrun.Outcome {
	m := map[string]localrun.Outcome{}
	for _, o := range r.Files {
		m[o.Bucket+"/"+o.Key] = o
	}
	return m
}

// TestSameNameInTwoSourcesIsRoutedNotRefused: a/dem.tif and b/dem.tif
// would both become out/dem.tif; which one won was a race. Both are routed
// to remediation (DestinationConflict), each naming the other, and a third
// file of the run migrates.
func TestSameNameInTwoSourcesIsRoutedNotRefused(t *testing.T) {
	dir := t.TempDir()
	a, b, dest := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "out")
	mkdirs(t, a, b)
	dem := sampleFile(t, "dem_utm33.tif")
	copyFile(t, dem, filepath.Join(a, "dem.tif"))
	copyFile(t, sampleFile(t, "landcover_4326.tif"), filepath.Join(b, "dem.tif"))
	copyFile(t, dem, filepath.Join(b, "other.tif"))
	out, stderr, err := run(t, "migrate", a, b, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate a b: %v\n%s\n%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "2 source(s) would share 1 output key(s)") {
		t.Errorf("stderr does not announce the clash:\n%s", stderr)
	}
	got := outcomesByKey(lastReport(t, out))
	for key, other := range map[string]string{"a/dem.tif": "b/dem.tif", "b/dem.tif": "a/dem.tif"} {
		o := got[key]
		if o.Status != localrun.StatusRemediation || o.Code != string(fault.DestinationTaken) || !strings.Contains(o.Message, other) {
			t.Errorf("%s: %s %s %q, want remediation %s naming %s", key, o.Status, o.Code, o.Message, fault.DestinationTaken, other)
		}
	}
	if o := got["b/other.tif"]; o.Status != localrun.StatusCompleted {
		t.Errorf("b/other.tif: %s %s, want completed", o.Status, o.Reason)
	}
	if _, serr := os.Stat(filepath.Join(dest, "dem.tif")); !os.IsNotExist(serr) {
		t.Errorf("one of the clashing sources was written: %v", serr)
	}
}

// TestSymlinksInTheSource: links inside the source root are followed
// (files and directories, loops cut); links pointing outside it, broken
// links and loops are listed as skipped with the reason.
func TestSymlinksInTheSource(t *testing.T) {
	dir := t.TempDir()
	root, outside, dest := filepath.Join(dir, "src"), filepath.Join(dir, "elsewhere"), filepath.Join(dir, "out")
	mkdirs(t, filepath.Join(root, "real"), outside)
	dem := sampleFile(t, "dem_utm33.tif")
	copyFile(t, dem, filepath.Join(root, "real", "dem.tif"))
	copyFile(t, dem, filepath.Join(outside, "secret.tif"))
	for link, target := range map[string]string{
		"linked":      "real",                               // directory inside the root
		"alias.tif":   filepath.Join("real", "dem.tif"),     // file inside the root
		"outside.tif": filepath.Join(outside, "secret.tif"), // file outside
		"outdir":      outside,                              // directory outside
		"real/loop":   "..",                                 // a loop
		"broken.tif":  "missing.tif",                        // dangling
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := run(t, "migrate", root, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	got := outcomesByKey(lastReport(t, out))
	for key, want := range map[string]string{
		"src/real/dem.tif":   localrun.StatusCompleted,
		"src/linked/dem.tif": localrun.StatusCompleted,
		"src/alias.tif":      localrun.StatusCompleted,
		"src/outside.tif":    localrun.StatusSkipped,
		"src/outdir":         localrun.StatusSkipped,
		"src/real/loop":      localrun.StatusSkipped,
		"src/linked/loop":    localrun.StatusSkipped, // the same loop, reached through the link
		"src/broken.tif":     localrun.StatusSkipped,
	} {
		o, ok := got[key]
		if !ok || o.Status != want {
			t.Errorf("%s: %+v, want %s", key, o, want)
			continue
		}
		if want == localrun.StatusSkipped && (o.Reason == "" || !strings.Contains(stderr, strings.TrimPrefix(key, "src/"))) {
			t.Errorf("%s skipped without a reason in the report (%q) or a progress line:\n%s", key, o.Reason, stderr)
		}
	}
	if !strings.Contains(got["src/outside.tif"].Reason, "outside") || !strings.Contains(got["src/real/loop"].Reason, "loop") {
		t.Errorf("reasons: outside %q, loop %q", got["src/outside.tif"].Reason, got["src/real/loop"].Reason)
	}
	if _, err := os.Stat(filepath.Join(dest, "secret.tif")); !os.IsNotExist(err) {
		t.Errorf("a file outside the source root was migrated")
	}
	if len(got) != 8 {
		t.Errorf("%d report entries, want 8: %v", len(got), got)
	}
}

// TestNonGeospatialFilesAreIgnored: README.txt, Thumbs.db, .DS_Store and
// desktop.ini are listed as ignored; nothing about them is queued.
func TestNonGeospatialFilesAreIgnored(t *testing.T) {
	dir := t.TempDir()
	root, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, root)
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(root, "dem.tif"))
	for name, body := range map[string]string{"README.txt": "about this data\n", "Thumbs.db": "", ".DS_Store": "\x00\x00\x00\x01Bud1", "desktop.ini": "[.ShellClassInfo]\n",
		"orphan.dbf": "a sidecar without its .shp", "dem.tfw": "1\n0\n0\n-1\n0\n0\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := run(t, "migrate", root, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	got := outcomesByKey(r)
	for _, name := range []string{"README.txt", "Thumbs.db", ".DS_Store", "desktop.ini", "orphan.dbf"} {
		if o := got["src/"+name]; o.Status != localrun.StatusIgnored || o.Reason == "" {
			t.Errorf("%s: %+v, want ignored with a reason", name, o)
		}
	}
	if r.Totals.Ignored != 5 || r.Totals.Remediation != 0 || r.Totals.Completed != 1 {
		t.Errorf("totals %+v, want 5 ignored, 1 completed, no remediation", r.Totals)
	}
	if _, listed := got["src/dem.tfw"]; listed {
		t.Errorf("dem.tfw, the world file of dem.tif, is listed on its own: %+v", got["src/dem.tfw"])
	}
	st, err := jsonlqueue.Scan(context.Background(), pathsFor(dest, "").remediation, func(queue.Message) error { return nil })
	if err != nil || st.Messages != 0 {
		t.Errorf("remediation queue holds %d message(s) (%v)", st.Messages, err)
	}
	if !strings.Contains(out, "ignored") || strings.Contains(out, "damaged") {
		t.Errorf("summary:\n%s", out)
	}
}

// TestEmptySourceIsAnError: a source with no file to migrate exits non-zero
// with one line saying so, and creates nothing.
func TestEmptySourceIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"empty directory", nil},
		{"only non-geospatial files", map[string]string{"README.txt": "hello"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
			mkdirs(t, root)
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, err := run(t, "migrate", root, "--dest", dest)
			if err == nil || !strings.Contains(err.Error(), "nothing to migrate") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("migrate of %s: %v, want one line 'nothing to migrate'\n%s\n%s", tc.name, err, out, stderr)
			}
			if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
				t.Errorf("destination created for an empty run")
			}
		})
	}
}

// mixedGeoJSON has a Polygon and a MultiPolygon: the output layer is
// promoted to multi, which the engine reports as a warning.
const mixedGeoJSON = `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}},"features":[
{"type":"Feature","properties":{"n":1},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
{"type":"Feature","properties":{"n":2},"geometry":{"type":"MultiPolygon","coordinates":[[[[2,2],[3,2],[3,3],[2,2]]]]}}]}`

// TestConversionWarningsAreReported: a warning of the engine reaches the
// report (files[].warnings), the progress line and the summary.
func TestConversionWarningsAreReported(t *testing.T) {
	dir := t.TempDir()
	root, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, root)
	if err := os.WriteFile(filepath.Join(root, "mixed.geojson"), []byte(mixedGeoJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", root, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	o := outcomesByKey(r)["src/mixed.geojson"]
	if o.Status != localrun.StatusCompleted || len(o.Warnings) == 0 || !strings.Contains(strings.Join(o.Warnings, "|"), "promoted to multi") {
		t.Fatalf("outcome %+v, want completed with the 'promoted to multi' warning", o)
	}
	if r.Totals.Warned != 1 {
		t.Errorf("totals.warned = %d, want 1", r.Totals.Warned)
	}
	if !strings.Contains(stderr, "warnings: 1") {
		t.Errorf("progress line lacks the warning count:\n%s", stderr)
	}
	if !strings.Contains(out, "promoted to multi") {
		t.Errorf("summary lacks the warning:\n%s", out)
	}
}
