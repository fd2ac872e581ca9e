package gdal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// openLayer opens a vector source and returns its one layer.
func openLayer(t *testing.T, src string) (*godal.Dataset, godal.Layer) {
	t.Helper()
	ds, err := godal.Open(src, godal.VectorOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	ls := ds.Layers()
	if len(ls) != 1 {
		t.Fatalf("%d layers", len(ls))
	}
	return ds, ls[0]
}

// declaredAndScanned opens src's one layer and takes it both as declared
// (the one-read paths) and by a full scan, for the tests that compare them.
// The caller locks its goroutine to the OS thread (GDAL's error state).
func declaredAndScanned(t *testing.T, src string, r recipe.Recipe) (*godal.Dataset, layerScan, layerScan) {
	t.Helper()
	ds, l := openLayer(t, src)
	n, err := l.FeatureCount()
	if err != nil {
		t.Fatal(err)
	}
	declared, ok := declaredScan(l, int64(n))
	if !ok {
		t.Fatalf("layer of type %v not taken as declared", l.Type())
	}
	scanned, err := scanLayer(context.Background(), l, budget.NewVectorMeter(l.Name(), r))
	if err != nil {
		t.Fatal(err)
	}
	return ds, declared, scanned
}

func declaredOK(l godal.Layer) bool {
	_, ok := declaredScan(l, 1)
	return ok
}

// The one-read path writes the file ogr2ogr writes after a scan, byte for
// byte, and takes the digest of the features the GeoParquet writer would
// be handed: one source per declared type, dimensions and field type
// FlatGeobuf holds.
func TestFlatGeobufOneReadSameBytes(t *testing.T) {
	const props = `"properties":{"id":%d,"name":"n%d","area":%d.25,"day":"2024-01-0%d","at":"2024-01-02T03:04:0%dZ","ok":true,"big":1234567890123}`
	feature := func(i int, geom string) string {
		return `{"type":"Feature",` + fmt.Sprintf(props, i, i, i, i, i) + `,"geometry":` + geom + `}`
	}
	collection := func(geoms ...string) string {
		s := `{"type":"FeatureCollection","name":"things","features":[`
		for i, g := range geoms {
			if i > 0 {
				s += ","
			}
			s += feature(i+1, g)
		}
		return s + "]}"
	}
	dir := t.TempDir()
	gpkg := filepath.Join(dir, "multi.gpkg")
	if err := sampledata.FromGeoJSON(collection(`{"type":"MultiPolygon","coordinates":[[[[500000,0],[500010,0],[500010,10],[500000,0]]],[[[500020,0],[500030,0],[500030,10],[500020,0]]]]}`,
		`{"type":"MultiPolygon","coordinates":[[[[500040,0],[500050,0],[500050,10],[500040,0]]]]}`), gpkg,
		[]string{"-f", "GPKG", "-nlt", "MULTIPOLYGON", "-a_srs", "EPSG:32633"}); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"points":             writeFile(t, dir, "points.geojson", collection(`{"type":"Point","coordinates":[10,50]}`, `{"type":"Point","coordinates":[11.5,51.25]}`, `{"type":"Point","coordinates":[-3,7]}`)),
		"lines 3D":           writeFile(t, dir, "lines.geojson", collection(`{"type":"LineString","coordinates":[[10,50,1],[11,51,2]]}`, `{"type":"LineString","coordinates":[[12,52,3],[13,53,4],[14,53,5]]}`)),
		"polygons":           writeFile(t, dir, "polygons.geojson", collection(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, `{"type":"Polygon","coordinates":[[[2,2],[3,2],[3,3],[2,2]]]}`)),
		"gpkg multipolygons": gpkg,
	} {
		t.Run(name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ds, declared, scanned := declaredAndScanned(t, src, fgbRecipe())
			if declared.targetType(false) != scanned.targetType(false) || declared.hasZ != scanned.hasZ || declared.hasM != scanned.hasM {
				t.Fatalf("declared %+v, scanned %+v", declared, scanned)
			}
			work := t.TempDir()
			one, digest, err := copyFlatGeobuf(context.Background(), ds, declared, filepath.Join(work, "one.fgb"), fgbRecipe(), newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			two, err := writeFlatGeobuf(ds, scanned, filepath.Join(work, "two.fgb"), fgbRecipe(), newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(one.Path)
			b, _ := os.ReadFile(two.Path)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("one read wrote %d bytes, ogr2ogr %d: not the same file", len(a), len(b))
			}
			// The features handed over are those the GeoParquet writer is
			// handed: the same digest, taken by the other reader.
			gp := convertOK(t, src, gpRecipe())[0].Fidelity
			if digest.String() != gp.Digest || digest.N != scanned.features || one.Stats["features"] != scanned.features {
				t.Errorf("digest %v of %d features, GeoParquet's %s", digest, digest.N, gp.Digest)
			}
		})
	}
}

// A feature that is not as the layer declares stops the one-read path,
// leaving nothing behind; the conversion then scans the layer and keeps
// what it finds (a 2D point in a 3D layer: written with Z, as a scanned
// layer is).
func TestFlatGeobufOneReadStopsAtAnUndeclaredFeature(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "mixed.geojson", `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[10,50,5]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"Point","coordinates":[11,51]}}]}`)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ds, l := openLayer(t, src)
	sc, ok := declaredScan(l, 2)
	if !ok || !sc.hasZ {
		t.Fatalf("declared %+v (%v)", sc, ok)
	}
	dst := filepath.Join(t.TempDir(), "mixed.fgb")
	if _, _, err := copyFlatGeobuf(context.Background(), ds, sc, dst, fgbRecipe(), newRecorder()); !errors.Is(err, errNotAsDeclared) {
		t.Fatalf("got %v, want errNotAsDeclared", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial output left behind: %v", err)
	}
	outs := convertOK(t, src, fgbRecipe())
	if f := outs[0].Fidelity; f == nil || f.Features != 2 {
		t.Fatalf("fidelity %+v", f)
	}
	fidelityChecks(t, outs[0], "geometries", "attribute values")
}

// Layers the one-read path does not take: no single linear declared type.
func TestFlatGeobufOneReadNeedsALinearType(t *testing.T) {
	src := writeFile(t, t.TempDir(), "mixed.geojson", `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[10,50]}},
{"type":"Feature","properties":{"id":2},"geometry":{"type":"LineString","coordinates":[[11,51],[12,52]]}}]}`)
	_, l := openLayer(t, src)
	if sc, ok := declaredScan(l, 2); ok {
		t.Fatalf("a mixed layer taken as declared: %+v", sc)
	}
	outs := convertOK(t, src, fgbRecipe())
	fidelityChecks(t, outs[0], "geometries", "attribute values")
	if !warned(outs[0], "mixes geometry kinds") {
		t.Errorf("warnings %v", outs[0].Warnings)
	}
}
