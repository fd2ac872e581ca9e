package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

// gdalTool runs one of GDAL's command-line tools, skipping the test where
// they are not installed.
func gdalTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestClashesAreRoutedTheRestMigrates: a tree with two clashes (dem.tif
// beside dem.img, x.tif beside x.tiff), a GML file with the schema GDAL
// wrote beside it, a File Geodatabase directory and an ordinary raster.
// plan lists both clashes in one pass and nothing else as one; migrate
// routes the four clashing files (DestinationConflict, each naming its
// partner) and migrates the rest: the .gdb as one source, its values read
// back by an outside Parquet reader.
func TestClashesAreRoutedTheRestMigrates(t *testing.T) {
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, filepath.Join(src, "a"), filepath.Join(src, "b"))
	dem := sampleFile(t, "dem_utm33.tif")
	copyFile(t, dem, filepath.Join(src, "a", "dem.tif"))
	gdalTool(t, "gdal_translate", "-q", "-of", "HFA", dem, filepath.Join(src, "a", "dem.img"))
	copyFile(t, dem, filepath.Join(src, "b", "x.tif"))
	copyFile(t, dem, filepath.Join(src, "b", "x.tiff"))
	copyFile(t, dem, filepath.Join(src, "ok.tif"))
	geojson := filepath.Join(dir, "parks.geojson")
	if err := os.WriteFile(geojson, []byte(`{"type":"FeatureCollection","features":[`+
		`{"type":"Feature","properties":{"name":"north","n":1},"geometry":{"type":"Point","coordinates":[10.5,59.9]}},`+
		`{"type":"Feature","properties":{"name":"south","n":2},"geometry":{"type":"Point","coordinates":[10.7,59.8]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	gdalTool(t, "ogr2ogr", "-f", "OpenFileGDB", filepath.Join(src, "city.gdb"), geojson, "-nln", "parks")
	gdalTool(t, "ogr2ogr", "-f", "GML", filepath.Join(src, "roads.gml"), geojson)
	if !fileExists(filepath.Join(src, "roads.xsd")) || !fileExists(filepath.Join(src, "city.gdb", "a00000001.gdbtable")) {
		t.Fatal("GDAL did not write roads.xsd or the geodatabase's tables")
	}

	out, stderr, err := run(t, "plan", src, "--dest", dest)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"2 output key(s) claimed by more than one source",
		filepath.Join(dest, "a", "dem.tif") + " <- src/a/dem.img, src/a/dem.tif",
		filepath.Join(dest, "b", "x.tif") + " <- src/b/x.tif, src/b/x.tiff",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	if strings.Count(out, " <- ") != 2 || strings.Contains(out, "gdbtable") || strings.Contains(out, "roads.xsd <-") {
		t.Errorf("plan lists more than the two clashes:\n%s", out)
	}

	out, stderr, err = run(t, "migrate", src, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	got := outcomesByKey(lastReport(t, out))
	for key, partner := range map[string]string{
		"src/a/dem.tif": "src/a/dem.img", "src/a/dem.img": "src/a/dem.tif",
		"src/b/x.tif": "src/b/x.tiff", "src/b/x.tiff": "src/b/x.tif",
	} {
		o := got[key]
		if o.Status != localrun.StatusRemediation || o.Code != string(fault.DestinationTaken) || !strings.Contains(o.Message, partner) {
			t.Errorf("%s: %s %s %q, want routed %s naming %s", key, o.Status, o.Code, o.Message, fault.DestinationTaken, partner)
		}
	}
	for _, key := range []string{"src/ok.tif", "src/city.gdb"} {
		if o := got[key]; o.Status != localrun.StatusCompleted {
			t.Errorf("%s: %s %s %s, want completed", key, o.Status, o.Code, o.Message)
		}
	}
	// The GML file is no part of a clash (whether GML is converted is
	// another matter); its schema is its sidecar, never an input.
	if o := got["src/roads.gml"]; o.Status == "" || o.Code == string(fault.DestinationTaken) {
		t.Errorf("src/roads.gml: %s %s %s", o.Status, o.Code, o.Message)
	}
	for key := range got {
		if strings.Contains(key, ".gdb/") || strings.HasSuffix(key, ".xsd") {
			t.Errorf("%s is in the report as a file of its own", key)
		}
	}
	if len(got) != 7 {
		t.Errorf("report holds %d files, want 7: %v", len(got), got)
	}
	for _, p := range []string{"a/dem.tif", "b/x.tif"} {
		if fileExists(filepath.Join(dest, p)) {
			t.Errorf("%s was written from one of its clashing sources", p)
		}
	}
	if !fileExists(filepath.Join(dest, "ok.tif")) {
		t.Error("ok.tif not written")
	}
	names := parquetColumn(t, filepath.Join(dest, "city.parquet"), "name")
	if names != `["north","south"]` {
		t.Errorf("city.parquet names %s, want north and south", names)
	}
}

// parquetColumn is column col of a Parquet file as hyparquet reads it, as
// JSON (skips where node or hyparquet is not installed).
func parquetColumn(t *testing.T, p, col string) string {
	t.Helper()
	script := filepath.Join("..", "..", "scripts", "hyparquet", "values.mjs")
	if _, err := exec.LookPath("node"); err != nil || !fileExists(filepath.Join("..", "..", "scripts", "hyparquet", "node_modules")) {
		t.Skip("node or hyparquet not installed")
	}
	out, err := exec.Command("node", script, p, col).Output()
	if err != nil {
		t.Fatalf("hyparquet %s %s: %v", p, col, err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("hyparquet output %q: %v", out, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
