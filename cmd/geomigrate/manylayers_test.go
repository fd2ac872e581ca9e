package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// manyLayersGPKG writes a GeoPackage of n point layers (layer_000 …) with
// GDAL's Python bindings: each layer becomes an output of its own, and
// the outputs list of such a source is far over the state machine's
// payload quota.
func manyLayersGPKG(t *testing.T, path string, n int) {
	t.Helper()
	g := &gen{t: t}
	g.py(filepath.Dir(path), fmt.Sprintf(`
srs = osr.SpatialReference(); srs.ImportFromEPSG(4326)
ds = ogr.GetDriverByName('GPKG').CreateDataSource(%q)
ds.StartTransaction()
for i in range(%d):
    l = ds.CreateLayer('layer_%%03d' %% i, srs, ogr.wkbPoint)
    l.CreateField(ogr.FieldDefn('n', ogr.OFTInteger))
    f = ogr.Feature(l.GetLayerDefn()); f.SetField('n', i)
    f.SetGeometry(ogr.CreateGeometryFromWkt('POINT (%%d %%d)' %% (i %% 180, i %% 90)))
    l.CreateFeature(f)
ds.CommitTransaction()
ds = None
`, filepath.Base(path), n))
}

// TestAManyLayerGeoPackageCompletesLocally: GeoPackages of 300 and 500
// layers, whose outputs lists (about 1.8 kB a layer) are two and four
// times Step Functions' payload quota, which the local executor enforces,
// complete through `geomigrate migrate`: every layer is at its final key
// and staging is empty.
func TestAManyLayerGeoPackageCompletesLocally(t *testing.T) {
	for _, layers := range []int{300, 500} {
		t.Run(fmt.Sprint(layers), func(t *testing.T) {
			if layers > 300 && testing.Short() {
				t.Skip("-short: 300 layers only")
			}
			dir := t.TempDir()
			src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			manyLayersGPKG(t, filepath.Join(src, "many.gpkg"), layers)
			out, stderr, err := run(t, "migrate", src, "--dest", dest, "--progress", "plain")
			if err != nil {
				t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
			}
			r := lastReport(t, out)
			// Completed by its own execution: not an execution that failed
			// after Promote recorded the job (the executionfailed path
			// reports that as completed too, with a message and without
			// the outputs' size).
			if len(r.Files) != 1 || r.Files[0].Status != "completed" || r.Files[0].Message != "" || r.Files[0].BytesOut == 0 {
				b, _ := json.Marshal(r.Files)
				t.Fatalf("report: %.2000s\n%s", b, stderr)
			}
			for i := range layers {
				if _, err := os.Stat(filepath.Join(dest, "many", fmt.Sprintf("layer_%03d.parquet", i))); err != nil {
					t.Fatalf("layer %d: %v", i, err)
				}
			}
			staged, _ := filepath.Glob(filepath.Join(dest, "_staging", "*", "*"))
			if len(staged) != 0 {
				t.Errorf("staging holds %v", staged)
			}
		})
	}
}
