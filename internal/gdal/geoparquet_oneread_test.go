package gdal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// oneReadProps are attributes of every field type the GeoParquet writer
// maps: integer, 64-bit, real, string, date, date-time, boolean and an
// integer list.
const oneReadProps = `"properties":{"id":%d,"name":"n%d","area":%d.25,"day":"2024-01-0%d","at":"2024-01-02T03:04:0%dZ","ok":true,"big":1234567890123,"tags":[%d,7]}`

// oneReadCollection is a GeoJSON FeatureCollection of one feature per
// geometry ("null" for none), with oneReadProps.
func oneReadCollection(geoms ...string) string {
	s := `{"type":"FeatureCollection","name":"things","features":[`
	for i, g := range geoms {
		if i > 0 {
			s += ","
		}
		n := i + 1
		s += `{"type":"Feature",` + fmt.Sprintf(oneReadProps, n, n, n, n, n, n) + `,"geometry":` + g + `}`
	}
	return s + "]}"
}

// oneReadGPKG converts a GeoJSON text to a GeoPackage with ogr2ogr's
// switches (its declared type and dimensions); the list, which a
// GeoPackage cannot hold, as its text.
func oneReadGPKG(t *testing.T, dir, name, text string, switches ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := sampledata.FromGeoJSON(text, p, append([]string{"-f", "GPKG", "-mapFieldType", "IntegerList=String"}, switches...)); err != nil {
		t.Fatal(err)
	}
	return p
}

// typedGPKG writes a GeoPackage layer declared of type gt holding one
// feature per WKT, whatever its type.
func typedGPKG(t *testing.T, p string, gt godal.GeometryType, wkts ...string) string {
	t.Helper()
	ds, err := godal.CreateVector(godal.GeoPackage, p)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(32633)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	l, err := ds.CreateLayer("things", sr, gt)
	if err != nil {
		t.Fatal(err)
	}
	for _, wkt := range wkts {
		g, err := godal.NewGeometryFromWKT(wkt, sr)
		if err != nil {
			t.Fatal(err)
		}
		// GDAL warns of a type other than the layer's, and writes it.
		f, err := l.NewFeature(g, godal.ErrLogger(newRecorder().handle))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		g.Close()
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// circleWKT is a valid polygon of n vertices.
func circleWKT(n int) string {
	var b strings.Builder
	b.WriteString("POLYGON ((")
	for i := 0; i <= n; i++ {
		a := 2 * math.Pi * float64(i%n) / float64(n)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%.9f %.9f", 500000+1000*math.Cos(a), 1000*math.Sin(a))
	}
	b.WriteString("))")
	return b.String()
}

// The one-read path writes the file the scan-first path writes, byte for
// byte, and leaves the layer's scan as the scan finds it (nulls counted):
// one source per declared type and dimensions, every field type, and the
// writer handed the same features (the same digest).
func TestGeoParquetOneReadSameBytes(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"points and a null": writeFile(t, dir, "points.geojson", oneReadCollection(`{"type":"Point","coordinates":[10,50]}`, `null`, `{"type":"Point","coordinates":[11.5,51.25]}`, `{"type":"Point","coordinates":[-3,7]}`)),
		"lines 3D":          writeFile(t, dir, "lines.geojson", oneReadCollection(`{"type":"LineString","coordinates":[[10,50,1],[11,51,2]]}`, `{"type":"LineString","coordinates":[[12,52,3],[13,53,4],[14,53,5]]}`)),
		"polygons":          writeFile(t, dir, "polygons.geojson", oneReadCollection(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, `{"type":"Polygon","coordinates":[[[2,2],[3,2],[3,3],[2,2]]]}`)),
		"gpkg multipolygons": oneReadGPKG(t, dir, "multi.gpkg", oneReadCollection(`{"type":"MultiPolygon","coordinates":[[[[500000,0],[500010,0],[500010,10],[500000,0]]],[[[500020,0],[500030,0],[500030,10],[500020,0]]]]}`,
			`{"type":"MultiPolygon","coordinates":[[[[500040,0],[500050,0],[500050,10],[500040,0]]]]}`), "-nlt", "MULTIPOLYGON", "-a_srs", "EPSG:32633"),
		// Latitude first in EPSG:4326: the writer swaps the axes.
		"gpkg EPSG:4326 points": oneReadGPKG(t, dir, "geographic.gpkg", oneReadCollection(`{"type":"Point","coordinates":[10,50]}`, `{"type":"Point","coordinates":[11,51]}`), "-a_srs", "EPSG:4326"),
		// M is dropped (with a warning) from a layer declared with it.
		"gpkg points M": oneReadGPKG(t, dir, "measured.gpkg", oneReadCollection(`{"type":"Point","coordinates":[10,50]}`, `{"type":"Point","coordinates":[11,51]}`), "-dim", "XYM"),
	} {
		t.Run(name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ds, declared, scanned := declaredAndScanned(t, src, gpRecipe())
			work := t.TempDir()
			one, oneDigest, err := writeGeoParquet(context.Background(), ds, &declared, filepath.Join(work, "one.parquet"), gpRecipe(), newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			two, twoDigest, err := writeGeoParquet(context.Background(), ds, &scanned, filepath.Join(work, "two.parquet"), gpRecipe(), newRecorder())
			if err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(one.Path)
			b, _ := os.ReadFile(two.Path)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("one read wrote %d bytes, scan first %d: not the same file", len(a), len(b))
			}
			declared.declared = false
			if !reflect.DeepEqual(declared, scanned) {
				t.Errorf("after the write the layer is %+v, the scan found %+v", declared, scanned)
			}
			if !reflect.DeepEqual(one.Stats, two.Stats) || !reflect.DeepEqual(one.Warnings, two.Warnings) || !oneDigest.Equal(*twoDigest) {
				t.Errorf("one read: %v %q %v; scan first: %v %q %v", one.Stats, one.Warnings, oneDigest, two.Stats, two.Warnings, twoDigest)
			}
			if rep := validateGeoParquet(t, one.Path); rep.Rows != scanned.features {
				t.Errorf("validator reads %d rows of %d", rep.Rows, scanned.features)
			}
			if j := hyparquet(t, one.Path); j.Rows != scanned.features { // skips without node
				t.Errorf("hyparquet reads %d rows of %d", j.Rows, scanned.features)
			}
		})
	}
}

// convertBothWays converts src under r in one read where the engine takes
// it and with every layer scanned first, and fails unless both give the
// same outcome: the same error, or the same files, warnings, statistics
// and fidelity records.
func convertBothWays(t *testing.T, src string, r recipe.Recipe) ([]recipe.Output, error) {
	t.Helper()
	convert := func(first bool) ([]recipe.Output, [][]byte, error) {
		scanFirst = first
		defer func() { scanFirst = false }()
		outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
		var files [][]byte
		for i, o := range outs {
			b, rerr := os.ReadFile(o.Path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			files = append(files, b)
			delete(outs[i].Stats, "fidelity_ns") // a duration
			outs[i].Path = filepath.Base(o.Path)
		}
		return outs, files, err
	}
	one, oneFiles, oneErr := convert(false)
	old, oldFiles, oldErr := convert(true)
	if fmt.Sprint(oneErr) != fmt.Sprint(oldErr) || fault.CodeOf(oneErr) != fault.CodeOf(oldErr) {
		t.Fatalf("one read: %v; scan first: %v", oneErr, oldErr)
	}
	if !reflect.DeepEqual(one, old) {
		t.Errorf("one read: %+v\nscan first: %+v", one, old)
	}
	for i := range oneFiles {
		if !bytes.Equal(oneFiles[i], oldFiles[i]) {
			t.Errorf("output %d: one read wrote %d bytes, scan first %d: not the same file", i, len(oneFiles[i]), len(oldFiles[i]))
		}
	}
	return one, oneErr
}

// A feature that is not as the layer declares stops the one-read path and
// leaves nothing behind; the layer then takes the scan-first path, so
// every outcome is the one a scan gives: invalid geometries refused,
// kept with a warning or repaired as the policy says, single and multi
// promoted, a 2D feature in a 3D layer written with Z, a layer without
// any geometry written with null geometries and a warning.
func TestGeoParquetOneReadStopsAtAnUndeclaredFeature(t *testing.T) {
	dir := t.TempDir()
	policy := func(p string) recipe.Recipe {
		r := gpRecipe()
		r.GeometryPolicy = p
		return r
	}
	bowtieGeom := `{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`
	square := `{"type":"Polygon","coordinates":[[[2,2],[3,2],[3,3],[2,3],[2,2]]]}`
	invalid := writeFile(t, dir, "bowtie.geojson", oneReadCollection(square, bowtieGeom, square))
	// 16 MiB: the scan's meter takes a geometry of at most 2 MiB of WKB.
	budgetRecipe := gpRecipe()
	budgetRecipe.MaxMemory = 16 << 20
	cases := []struct {
		name, src string
		r         recipe.Recipe
		code      fault.Code // the refusal, "" none
		warning   string     // a warning the outputs carry
	}{
		{"invalid, strict", invalid, policy(recipe.GeometryStrict), fault.InvalidGeometry, ""},
		{"invalid, keep", invalid, policy(recipe.GeometryKeep), "", "invalid geometries kept"},
		{"invalid, repair", invalid, policy(recipe.GeometryRepair), "", "repaired"},
		{"2D point in a 3D layer", writeFile(t, dir, "dims.geojson", oneReadCollection(`{"type":"Point","coordinates":[10,50,5]}`, `{"type":"Point","coordinates":[11,51]}`)), gpRecipe(), "", ""},
		{"a multipolygon in a polygon layer", typedGPKG(t, filepath.Join(dir, "promote.gpkg"), godal.GTPolygon,
			"POLYGON ((2 2,3 2,3 3,2 3,2 2))", "MULTIPOLYGON (((5 5,6 5,6 6,5 5)),((7 7,8 7,8 8,7 7)))"), gpRecipe(), "", "promoted to multi"},
		{"a geometry over the budget", typedGPKG(t, filepath.Join(dir, "huge.gpkg"), godal.GTPolygon, "POLYGON ((2 2,3 2,3 3,2 3,2 2))", circleWKT(150_000)),
			budgetRecipe, fault.BudgetExceeded, ""},
		{"no geometry at all", oneReadGPKG(t, dir, "nulls.gpkg", oneReadCollection(`null`, `null`), "-nlt", "POINT"), gpRecipe(), "", "none of its 2 features has a geometry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ds, l := openLayer(t, c.src)
				n, _ := l.FeatureCount()
				sc, ok := declaredScan(l, int64(n))
				if !ok {
					t.Fatalf("layer of type %v not taken as declared", l.Type())
				}
				dst := filepath.Join(t.TempDir(), "stopped.parquet")
				if _, _, err := writeGeoParquet(context.Background(), ds, &sc, dst, c.r, newRecorder()); !errors.Is(err, errNotAsDeclared) {
					t.Fatalf("got %v, want errNotAsDeclared", err)
				}
				if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("partial output left behind: %v", err)
				}
			}()
			outs, err := convertBothWays(t, c.src, c.r)
			if fault.CodeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("got %v, want code %q", err, c.code)
			}
			if c.code != "" {
				return
			}
			if len(outs) != 1 || (c.warning != "" && !strings.Contains(strings.Join(outs[0].Warnings, "\n"), c.warning)) {
				t.Errorf("outputs %+v, want one warning of %q", outs, c.warning)
			}
		})
	}
}

// Sources the one-read path takes whole give the scan-first outcome too.
func TestGeoParquetOneReadSameOutcome(t *testing.T) {
	dir := t.TempDir()
	points := writeFile(t, dir, "points.geojson", oneReadCollection(`{"type":"Point","coordinates":[10,50]}`, `null`, `{"type":"Point","coordinates":[11.5,51.25]}`))
	measured := oneReadGPKG(t, dir, "measured.gpkg", oneReadCollection(`{"type":"Point","coordinates":[10,50]}`), "-dim", "XYM")
	for name, src := range map[string]string{"points and a null": points, "points M": measured} {
		t.Run(name, func(t *testing.T) {
			outs, err := convertBothWays(t, src, gpRecipe())
			if err != nil || len(outs) != 1 || outs[0].Fidelity == nil {
				t.Fatalf("outputs %+v", outs)
			}
		})
	}
}
