package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/stac"
)

// TestAssignCRSRuleConvertsTheRefusedFiles: a CSV and a TopoJSON, which
// declare no CRS, go to remediation; a recipe rule naming the CSV's
// geometry columns and assign_crs changes their recipe, so the next
// migrate converts them, and the STAC items name the assigned CRS.
func TestAssignCRSRuleConvertsTheRefusedFiles(t *testing.T) {
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, filepath.Join(src, "stations"))
	files := map[string]string{
		"stations/a.csv": "name,lon,lat\nAlpha,13.4,52.5\nBeta,2.35,48.86\n",
		"stations/b.topojson": `{"type":"Topology","objects":{"b":{"type":"GeometryCollection","geometries":[` +
			`{"type":"Point","coordinates":[13.4,52.5],"properties":{"name":"Alpha"}}]}},"arcs":[]}`,
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(src, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	migrate := func(args ...string) map[string]localrun.Outcome {
		t.Helper()
		out, stderr, _ := run(t, append([]string{"migrate", src, "--dest", dest, "--progress", "plain"}, args...)...)
		byKey := map[string]localrun.Outcome{}
		for _, o := range lastReport(t, out).Files {
			byKey[o.Key] = o
		}
		if len(byKey) != len(files) {
			t.Fatalf("outcomes %v\n%s\n%s", byKey, out, stderr)
		}
		return byKey
	}
	first := migrate()
	for key, code := range map[string]string{"stations/a.csv": "UnsupportedFormat", "stations/b.topojson": "MissingCRS"} {
		if o := first[key]; o.Status != localrun.StatusRemediation || o.Code != code {
			t.Errorf("%s: %s %s (%s), want remediation %s", key, o.Status, o.Code, o.Message, code)
		}
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(recipePath, []byte(`version: 1
rules:
  - match: "stations/**"
    assign_crs: "EPSG:4326"
  - match: "stations/*.csv"
    csv: {geometry: xy, x_column: lon, y_column: lat}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	second := migrate("--recipe", recipePath)
	for _, key := range []string{"stations/a.csv", "stations/b.topojson"} {
		o := second[key]
		if o.Status != localrun.StatusCompleted {
			t.Errorf("%s: %s %s (%s), want completed", key, o.Status, o.Code, o.Message)
			continue
		}
		if o.RecipeHash == first[key].RecipeHash {
			t.Errorf("%s: the recipe hash did not change", key)
		}
	}
	items, _ := filepath.Glob(filepath.Join(dest, "stations", "*"+stac.ItemSuffix))
	if len(items) != 2 {
		t.Fatalf("STAC items %v", items)
	}
	for _, p := range items {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var it struct{ Properties map[string]any }
		if err := json.Unmarshal(b, &it); err != nil {
			t.Fatal(err)
		}
		if it.Properties[stac.PropAssignedCRS] != "EPSG:4326" {
			t.Errorf("%s: %s = %v", filepath.Base(p), stac.PropAssignedCRS, it.Properties[stac.PropAssignedCRS])
		}
	}
}
