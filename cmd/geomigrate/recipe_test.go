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
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// cogCompression is the COMPRESSION GDAL reports for a GeoTIFF (gdalinfo,
// an independent reader of what was written).
func cogCompression(t *testing.T, path string) string {
	t.Helper()
	bin, err := exec.LookPath("gdalinfo")
	if err != nil {
		t.Skip("gdalinfo not installed (apt-get install gdal-bin)")
	}
	out, err := exec.Command(bin, "-json", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var info struct {
		Metadata map[string]map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	return info.Metadata["IMAGE_STRUCTURE"]["COMPRESSION"]
}

const e2eRecipe = `version: 1
exclude: ["scratch/**"]
defaults:
  raster: {compression: ZSTD, level: 9}
rules:
  - match: "dem/**"
    raster: {compression: DEFLATE, level: 6}
  - match: "other/**"
    raster: {overview_resampling: nearest}
`

// TestRecipeEditConvertsOnlyTheGlobsFiles: migrate with a recipe file,
// change one glob's compression, migrate again: exactly the files of that
// glob are converted again, with the new compression; excluded and
// non-geospatial files are listed as ignored.
func TestRecipeEditConvertsOnlyTheGlobsFiles(t *testing.T) {
	dir := t.TempDir()
	samples, src, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if _, err := sampledata.Write(samples); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, filepath.Join(src, "dem"), filepath.Join(src, "other"), filepath.Join(src, "scratch"))
	for from, to := range map[string]string{
		"dem_utm33.tif": "dem/a.tif", "temperature_f32.tif": "dem/b.tif",
		"landcover_4326.tif": "other/c.tif", "parks.geojson": "parks.geojson",
	} {
		copyFile(t, filepath.Join(samples, from), filepath.Join(src, to))
	}
	copyFile(t, filepath.Join(samples, "dem_utm33.tif"), filepath.Join(src, "scratch", "x.tif"))
	if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("not data"), 0o644); err != nil {
		t.Fatal(err)
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	write := func(text string) {
		if err := os.WriteFile(recipePath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	migrate := func() map[string]localrun.Outcome {
		t.Helper()
		out, stderr, err := run(t, "migrate", src, "--dest", dest, "--recipe", recipePath, "--progress", "plain")
		if err != nil {
			t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
		}
		byKey := map[string]localrun.Outcome{}
		for _, o := range lastReport(t, out).Files {
			byKey[o.Key] = o
		}
		return byKey
	}
	statuses := func(byKey map[string]localrun.Outcome) map[string]string {
		m := map[string]string{}
		for k, o := range byKey {
			m[k] = o.Status
		}
		return m
	}
	expect := func(got map[string]string, want map[string]string) {
		t.Helper()
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s, want %s (all: %v)", k, got[k], w, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("outcomes %v, want %v", got, want)
		}
	}

	write(e2eRecipe)
	first := migrate()
	expect(statuses(first), map[string]string{
		"dem/a.tif": localrun.StatusCompleted, "dem/b.tif": localrun.StatusCompleted,
		"other/c.tif": localrun.StatusCompleted, "parks.geojson": localrun.StatusCompleted,
		"scratch/x.tif": localrun.StatusIgnored, "notes.txt": localrun.StatusIgnored,
	})
	if _, err := os.Stat(filepath.Join(dest, "scratch")); err == nil {
		t.Error("an excluded file was converted")
	}
	want := map[string]string{"dem/a.tif": "DEFLATE", "dem/b.tif": "DEFLATE", "other/c.tif": "ZSTD"}
	for key, codec := range want {
		if got := cogCompression(t, filepath.Join(dest, key)); got != codec {
			t.Errorf("%s: compression %q, want %q", key, got, codec)
		}
	}

	// Unchanged recipe: everything skipped.
	expect(statuses(migrate()), map[string]string{
		"dem/a.tif": localrun.StatusSkipped, "dem/b.tif": localrun.StatusSkipped,
		"other/c.tif": localrun.StatusSkipped, "parks.geojson": localrun.StatusSkipped,
		"scratch/x.tif": localrun.StatusIgnored, "notes.txt": localrun.StatusIgnored,
	})

	// One glob's compression changed: its files alone are converted again.
	write(strings.Replace(e2eRecipe, "raster: {compression: DEFLATE, level: 6}", "raster: {compression: LZW}", 1))
	third := migrate()
	expect(statuses(third), map[string]string{
		"dem/a.tif": localrun.StatusCompleted, "dem/b.tif": localrun.StatusCompleted,
		"other/c.tif": localrun.StatusSkipped, "parks.geojson": localrun.StatusSkipped,
		"scratch/x.tif": localrun.StatusIgnored, "notes.txt": localrun.StatusIgnored,
	})
	want = map[string]string{"dem/a.tif": "LZW", "dem/b.tif": "LZW", "other/c.tif": "ZSTD"}
	for key, codec := range want {
		if got := cogCompression(t, filepath.Join(dest, key)); got != codec {
			t.Errorf("after the edit, %s: compression %q, want %q", key, got, codec)
		}
	}
	if third["dem/a.tif"].JobID == first["dem/a.tif"].JobID {
		t.Error("a new recipe kept the job ID (the recipe hash is part of it)")
	}
}

func TestRecipeShow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(path, []byte(e2eRecipe), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "recipe", "show", path, "dem/x.tif", "other/y.tif", "scratch/z.tif", "README.md", "roads.shp", "roads.dbf", "--co", "BIGTIFF=YES")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	blocks := map[string]string{}
	var cur string
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, " ") {
			cur = line
			continue
		}
		blocks[cur] += line + "\n"
	}
	cases := map[string][]string{
		"dem/x.tif":     {"#1 dem/**", "compression=DEFLATE level=6", "co:     BIGTIFF=YES", "recipe: "},
		"other/y.tif":   {"#2 other/**", "compression=ZSTD level=9", "overview_resampling=nearest"},
		"scratch/z.tif": {"ignored: excluded by the recipe"},
		"README.md":     {"ignored: not a geospatial format (.md)"},
		"roads.shp":     {"none (defaults)", "vector: format=GeoParquet"},
		"roads.dbf":     {"ignored: sidecar"},
	}
	for key, wants := range cases {
		for _, w := range wants {
			if !strings.Contains(blocks[key], w) {
				t.Errorf("%s: output lacks %q:\n%s", key, w, blocks[key])
			}
		}
	}
	// The hash shown is the one a run uses: differs between the globs.
	js, _, err := run(t, "recipe", "show", path, "dem/x.tif", "other/y.tif", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b shown
	dec := json.NewDecoder(strings.NewReader(js))
	if err := dec.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&b); err != nil {
		t.Fatal(err)
	}
	if a.Hash == "" || a.Hash == b.Hash || a.Recipe.Compression != "DEFLATE" || b.Recipe.Compression != "ZSTD" {
		t.Fatalf("json: %+v %+v", a, b)
	}
	// Errors: a broken file names its line, --co is checked against GDAL's
	// COG driver.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ndefaults:\n  raster: {compresion: ZSTD}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "recipe", "show", bad, "a.tif"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad recipe: %v", err)
	}
	if _, _, err := run(t, "recipe", "show", path, "a.tif", "--co", "TILED=YES"); err == nil || !strings.Contains(err.Error(), "TILED") {
		t.Errorf("unknown --co: %v", err)
	}
	src := filepath.Dir(sampleFile(t, "dem_utm33.tif"))
	if _, _, err := run(t, "migrate", src, "--dest", filepath.Join(dir, "out"), "--recipe", bad); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("migrate with a bad recipe: %v", err)
	}
}

// TestReplayRunsUnderTheRecipeOfTheRun: a file sent to remediation by a
// migrate with --recipe, fixed, and replayed without --recipe is converted
// under the recipe it was migrated with; a migrate without --recipe makes
// the destination forget it.
func TestReplayRunsUnderTheRecipeOfTheRun(t *testing.T) {
	dir := t.TempDir()
	samples, src, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if _, err := sampledata.Write(samples); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, filepath.Join(src, "dem"))
	copyFile(t, filepath.Join(samples, "dem_utm33.tif"), filepath.Join(src, "dem", "good.tif"))
	copyFile(t, filepath.Join(samples, "truncated.tif"), filepath.Join(src, "dem", "fixme.tif"))
	recipePath := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(recipePath, []byte(e2eRecipe), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", src, "--dest", dest, "--recipe", recipePath, "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	if r := lastReport(t, out); r.Totals.Remediation != 1 || r.Totals.Completed != 1 {
		t.Fatalf("first run: %+v", r.Totals)
	}
	// The recipe file changes after the run: the replay still uses the
	// run's (its remembered copy).
	if err := os.WriteFile(recipePath, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(samples, "dem_utm33.tif"), filepath.Join(src, "dem", "fixme.tif"))
	out, stderr, err = run(t, "replay", "--dest", dest, "--queue", "remediation", "--progress", "plain")
	if err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "recipe of the last run") {
		t.Errorf("replay did not say which recipe it used:\n%s", stderr)
	}
	if got := cogCompression(t, filepath.Join(dest, "dem", "fixme.tif")); got != "DEFLATE" {
		t.Errorf("replayed file: compression %q, want the run's DEFLATE", got)
	}
	// A migrate without --recipe runs with none and forgets it.
	if _, _, err := run(t, "migrate", src, "--dest", dest, "--progress", "plain"); err != nil {
		t.Fatal(err)
	}
	if fileExists(rememberedRecipe(pathsFor(dest, "").dir)) {
		t.Error("a migrate without --recipe left the old recipe remembered")
	}
	if got := cogCompression(t, filepath.Join(dest, "dem", "good.tif")); got != "ZSTD" {
		t.Errorf("after a migrate without a recipe: %q, want the default ZSTD", got)
	}
}

// TestCollisionCheckFollowsTheRecipe: x.shp and x.geojson would both be
// x.parquet and are routed (DestinationConflict, with the recipe rule that
// separates them); a recipe writing GeoJSON as FlatGeobuf gives them two
// keys, and both migrate.
func TestCollisionCheckFollowsTheRecipe(t *testing.T) {
	dir := t.TempDir()
	samples, src := filepath.Join(dir, "samples"), filepath.Join(dir, "src")
	if _, err := sampledata.Write(samples); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, src)
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		copyFile(t, filepath.Join(samples, "places"+ext), filepath.Join(src, "x"+ext))
	}
	copyFile(t, filepath.Join(samples, "parks.geojson"), filepath.Join(src, "x.geojson"))
	out, stderr, err := run(t, "migrate", src, "--dest", filepath.Join(dir, "out1"))
	if err != nil {
		t.Fatalf("without a recipe: %v\n%s", err, stderr)
	}
	for key, o := range outcomesByKey(lastReport(t, out)) {
		if o.Status != localrun.StatusRemediation || o.Code != string(fault.DestinationTaken) || !strings.Contains(o.Message, "vector: {format: FlatGeobuf}") {
			t.Errorf("without a recipe, %s: %s %s %q, want routed with the recipe rule", key, o.Status, o.Code, o.Message)
		}
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(recipePath, []byte("version: 1\nrules:\n  - match: \"**/*.geojson\"\n    vector: {format: FlatGeobuf}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = run(t, "migrate", src, "--dest", filepath.Join(dir, "out2"), "--recipe", recipePath)
	if err != nil {
		t.Fatalf("with the recipe: %v\n%s\n%s", err, out, stderr)
	}
	for _, p := range []string{"x.parquet", "x.fgb"} {
		if !fileExists(filepath.Join(dir, "out2", p)) {
			t.Errorf("%s not written", p)
		}
	}
}
