package gdal

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// pyOGR is the outside party of these tests: GDAL's own Python bindings
// make the sources and say what their geometries are.
const pyOGR = `
import sys, json
from osgeo import ogr, osr, gdal
gdal.UseExceptions()
mode = sys.argv[1]
if mode == "make":
    path, wkts = sys.argv[2], json.loads(sys.argv[3])
    srs = osr.SpatialReference(); srs.ImportFromEPSG(32631)
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(path)
    l = ds.CreateLayer("l", srs, ogr.wkbUnknown)
    l.CreateField(ogr.FieldDefn("n", ogr.OFTInteger64))
    l.CreateField(ogr.FieldDefn("name", ogr.OFTString))
    for i, w in enumerate(wkts):
        f = ogr.Feature(l.GetLayerDefn()); f.SetField("n", i); f.SetField("name", "f%d" % i)
        if w: f.SetGeometry(ogr.CreateGeometryFromWkt(w))
        l.CreateFeature(f)
    ds = None
else:
    # wkb PATH OPS: ISO WKB (hex) of each feature by its "n", after the
    # operations OPS names (linear, 2d3d, multi).
    path, ops = sys.argv[2], sys.argv[3].split(",")
    out = {}
    ds = ogr.Open(path)
    for f in ds.GetLayer(0):
        g = f.GetGeometryRef()
        if g is None: out[f.GetField("name")] = None; continue
        g = g.Clone()
        if "linear" in ops: g = g.GetLinearGeometry(4)
        if "multi" in ops:
            t = ogr.GT_Flatten(g.GetGeometryType())
            g = ogr.ForceToMultiPolygon(g) if t == ogr.wkbPolygon else ogr.ForceToMultiLineString(g) if t == ogr.wkbLineString else g
        if "2d3d" in ops: g.SetMeasured(False)
        out[f.GetField("name")] = g.ExportToIsoWkb().hex()
    print(json.dumps(out))
`

func pyRun(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(cogValidatorPython, append([]string{"-c", pyOGR}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 with osgeo: %v\n%s", err, out)
	}
	return out
}

// makeGPKG writes a GeoPackage of one layer (declared GEOMETRY, EPSG:32631)
// holding one feature per WKT ("" for a null geometry), n = its index.
func makeGPKG(t *testing.T, wkts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src.gpkg")
	b, _ := json.Marshal(wkts)
	pyRun(t, "make", p, string(b))
	return p
}

// ogrWKB is OGR's ISO WKB of each source feature, by name.
func ogrWKB(t *testing.T, src, ops string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(pyRun(t, "wkb", src, ops), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// hyparquetWKB is hyparquet's reading of the output's geometry column
// (the WKB bytes as stored, hex), by the feature's name.
func hyparquetWKB(t *testing.T, path string) map[string]string {
	t.Helper()
	hyparquet(t, path) // skips without node or hyparquet
	col := func(name string) []json.RawMessage {
		cmd := exec.Command("node", filepath.Join(hyparquetDir, "values.mjs"), path, name, "raw")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("values.mjs %s %s: %v\n%s", path, name, err, stderr.String())
		}
		var v []json.RawMessage
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("values.mjs: %v\n%s", err, out)
		}
		return v
	}
	ns, gs := col("name"), col("geometry")
	m := map[string]string{}
	for i := range ns {
		n := strings.Trim(string(ns[i]), `"`)
		if string(gs[i]) == "null" {
			m[n] = ""
			continue
		}
		var h string
		if err := json.Unmarshal(gs[i], &h); err != nil {
			t.Fatalf("geometry %s: %v", gs[i], err)
		}
		m[n] = h
	}
	return m
}

func sameWKB(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d geometries read back, want %d", len(got), len(want))
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("feature %s: output WKB %s, OGR says %s", n, got[n], w)
		}
	}
}

func warned(o recipe.Output, s string) bool {
	return strings.Contains(strings.Join(o.Warnings, "\n"), s)
}

func convertOne(t *testing.T, src string, r recipe.Recipe) recipe.Output {
	t.Helper()
	outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("%d outputs", len(outs))
	}
	return outs[0]
}

func fidelityChecks(t *testing.T, o recipe.Output, want ...string) {
	t.Helper()
	if o.Fidelity == nil {
		t.Fatal("no fidelity record")
	}
	for _, w := range want {
		found := false
		for _, c := range o.Fidelity.Checks {
			found = found || c == w
		}
		if !found {
			t.Errorf("fidelity checks %v lack %q", o.Fidelity.Checks, w)
		}
	}
}

// M values: GeoParquet 1.1 has no M (docs/decisions/0090), so they are
// dropped with a warning saying so and the rest of every coordinate is
// kept exactly; FlatGeobuf keeps Z and M even where the source declares a
// 2D layer type.
func TestMeasuredLines(t *testing.T) {
	src := makeGPKG(t, "LINESTRING ZM (500000 0 1 2, 500001 1 3 4)", "LINESTRING ZM (500002 2 5 6, 500003 3 7 8, 500004 3 9 10)")
	o := convertOne(t, src, gpRecipe())
	if !warned(o, "has M values: dropped (GeoParquet 1.1 allows only 2D and 3D geometries") {
		t.Errorf("warnings %v", o.Warnings)
	}
	if rep := validateGeoParquet(t, o.Path); strings.Join(rep.GeometryTypes, ",") != "LineString Z" {
		t.Errorf("geometry_types %v", rep.GeometryTypes)
	}
	fidelityChecks(t, o, "geometries", "attribute values")
	sameWKB(t, hyparquetWKB(t, o.Path), ogrWKB(t, src, "2d3d"))

	f := convertOne(t, src, fgbRecipe())
	fidelityChecks(t, f, "geometries", "attribute values")
	info := ogrInfo(t, f.Path)
	if !strings.Contains(info, "LINESTRING ZM (500002 2 5 6,500003 3 7 8,500004 3 9 10)") {
		t.Errorf("FlatGeobuf lost Z or M:\n%s", info)
	}
}

var curveWKTs = []string{
	"CIRCULARSTRING (500000 0, 500001 1, 500002 0)",
	"COMPOUNDCURVE ((500000 0, 500001 0), CIRCULARSTRING (500001 0, 500002 1, 500003 0))",
	"MULTICURVE (CIRCULARSTRING (500000 0, 500001 1, 500002 0))",
}

// Curves: refused for GeoParquet with their own code before anything is
// written; linearised when the recipe asks (the step recorded in the
// lineage); kept by FlatGeobuf.
func TestCurveGeometries(t *testing.T) {
	lines := makeGPKG(t, curveWKTs...)
	surfaces := makeGPKG(t, "CURVEPOLYGON (CIRCULARSTRING (500000 0, 500001 1, 500002 0, 500001 -1, 500000 0))",
		"MULTISURFACE (CURVEPOLYGON (CIRCULARSTRING (500000 0, 500001 1, 500002 0, 500001 -1, 500000 0)))")
	for _, src := range []string{lines, surfaces} {
		work := t.TempDir()
		_, err := engine.Convert(context.Background(), src, work, gpRecipe())
		if fault.CodeOf(err) != fault.CurveGeometry || !strings.Contains(err.Error(), "FlatGeobuf") || !strings.Contains(err.Error(), `layer "l"`) {
			t.Fatalf("%s: %v, want CurveGeometry naming the layer and FlatGeobuf", src, err)
		}
		if ents, _ := os.ReadDir(work); len(ents) != 0 {
			t.Errorf("refused, yet %d files written", len(ents))
		}
	}

	r := gpRecipe()
	r.Curves = recipe.CurvesLinearize
	o := convertOne(t, lines, r)
	if !warned(o, "3 curve geometries linearised") || o.Stats["curves"] != 3 {
		t.Errorf("warnings %v stats %v", o.Warnings, o.Stats)
	}
	rep := validateGeoParquet(t, o.Path)
	// CircularString and CompoundCurve become LineStrings, MultiCurve a
	// MultiLineString: promoted to multi, like any mixed layer.
	if strings.Join(rep.GeometryTypes, ",") != "MultiLineString" {
		t.Errorf("geometry_types %v", rep.GeometryTypes)
	}
	fidelityChecks(t, o, "geometries", "attribute values")
	sameWKB(t, hyparquetWKB(t, o.Path), ogrWKB(t, lines, "linear,multi"))
	f, err := os.Open(o.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	info, err := geoparquet.ReadInfo(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if lin, err := recipe.ParseLineage(info.KeyValue[geoparquet.LineageKey]); err != nil || lin.CurveStepDegrees != recipe.DefaultCurveStepDegrees {
		t.Errorf("lineage %+v (%v): want the curve step", lin, err)
	}

	sr := gpRecipe()
	sr.Curves, sr.CurveStepDegrees = recipe.CurvesLinearize, 1
	so := convertOne(t, surfaces, sr)
	if rep := validateGeoParquet(t, so.Path); strings.Join(rep.GeometryTypes, ",") != "MultiPolygon" {
		t.Errorf("surfaces: geometry_types %v (CurvePolygon with MultiSurface promoted to multi)", rep.GeometryTypes)
	}

	fo := convertOne(t, lines, fgbRecipe())
	fidelityChecks(t, fo, "geometries", "attribute values")
	text := ogrInfo(t, fo.Path)
	for _, w := range []string{"CIRCULARSTRING (500000 0,500001 1,500002 0)", "COMPOUNDCURVE ((500000 0,500001 0),CIRCULARSTRING (500001 0,500002 1,500003 0))"} {
		if !strings.Contains(text, w) {
			t.Errorf("FlatGeobuf lacks %s:\n%s", w, text)
		}
	}
}

// A bow-tie, a polygon with a spike, and a valid one: kept as they are by
// default (byte for byte OGR's), made valid as polygons on request.
func TestInvalidPolygons(t *testing.T) {
	src := makeGPKG(t,
		"POLYGON ((500000 0, 500002 2, 500002 0, 500000 2, 500000 0))",
		"POLYGON ((500000 0, 500010 0, 500010 10, 500005 10, 500005 15, 500005 10, 500000 10, 500000 0))",
		"POLYGON ((500020 0, 500030 0, 500030 10, 500020 0))")
	o := convertOne(t, src, gpRecipe())
	if !warned(o, "2 invalid geometries kept as they are") || o.Stats["repaired"] != 0 {
		t.Errorf("warnings %v stats %v", o.Warnings, o.Stats)
	}
	sameWKB(t, hyparquetWKB(t, o.Path), ogrWKB(t, src, ""))

	r := gpRecipe()
	r.GeometryPolicy = recipe.GeometryRepair
	o = convertOne(t, src, r)
	if o.Stats["repaired"] != 2 {
		t.Errorf("stats %v", o.Stats)
	}
	if rep := validateGeoParquet(t, o.Path); strings.Join(rep.GeometryTypes, ",") != "MultiPolygon" {
		t.Errorf("repair changed the geometry type: %v", rep.GeometryTypes)
	}
	// Every repaired geometry is a valid (multi)polygon for OGR too.
	out, err := exec.Command(cogValidatorPython, append([]string{"-c", `
import sys
from osgeo import ogr
for w in sys.argv[1:]:
    g = ogr.CreateGeometryFromWkb(bytes.fromhex(w))
    print(g.GetGeometryName(), g.IsValid())
`}, valuesOf(hyparquetWKB(t, o.Path))...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); strings.Count(got, "MULTIPOLYGON True") != 3 {
		t.Errorf("OGR reads the repaired geometries as:\n%s", got)
	}
}

// Where METHOD=STRUCTURE is missing, GEOS's default method turns the
// spike into GeometryCollection(Polygon, LineString): the line is dropped,
// counted and warned, and the layer stays MultiPolygon.
func TestRepairKeepsTheFamily(t *testing.T) {
	src := makeGPKG(t,
		"POLYGON ((500000 0, 500010 0, 500010 10, 500005 10, 500005 15, 500005 10, 500000 10, 500000 0))",
		"POLYGON ((500020 0, 500030 0, 500030 10, 500020 0))")
	r := gpRecipe()
	r.GeometryPolicy = recipe.GeometryRepair
	repairLinework = true
	defer func() { repairLinework = false }()
	o := convertOne(t, src, r)
	if o.Stats["repaired"] != 1 || o.Stats["repair_dropped_parts"] != 1 || !warned(o, "the repair of 1 geometries left parts of another dimension") {
		t.Errorf("stats %v warnings %v", o.Stats, o.Warnings)
	}
	if rep := validateGeoParquet(t, o.Path); strings.Join(rep.GeometryTypes, ",") != "MultiPolygon" {
		t.Errorf("geometry_types %v", rep.GeometryTypes)
	}
	out, err := exec.Command(cogValidatorPython, append([]string{"-c", `
import sys
from osgeo import ogr
for w in sys.argv[1:]:
    g = ogr.CreateGeometryFromWkb(bytes.fromhex(w))
    print(g.GetGeometryName(), g.IsValid(), g.GetArea())
`}, valuesOf(hyparquetWKB(t, o.Path))...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := string(out); !strings.Contains(got, "MULTIPOLYGON True 100.0") || !strings.Contains(got, "MULTIPOLYGON True 50.0") {
		t.Errorf("OGR reads the repaired geometries as:\n%s", got)
	}
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A layer whose features all lack a geometry is written (null geometries,
// geometry_types [], no bbox) rather than refused.
func TestAllNullGeometries(t *testing.T) {
	src := makeGPKG(t, "", "", "")
	o := convertOne(t, src, gpRecipe())
	if o.Stats["features"] != 3 || o.Stats["null_geometries"] != 3 || !warned(o, "none of its 3 features has a geometry") {
		t.Errorf("stats %v warnings %v", o.Stats, o.Warnings)
	}
	rep := validateGeoParquet(t, o.Path)
	if len(rep.GeometryTypes) != 0 {
		t.Errorf("geometry_types %v", rep.GeometryTypes)
	}
	j := hyparquet(t, o.Path)
	col, _ := j.Geo["columns"].(map[string]any)["geometry"].(map[string]any)
	if types, ok := col["geometry_types"].([]any); !ok || len(types) != 0 {
		t.Errorf("geo metadata geometry_types %v", col["geometry_types"])
	}
	if _, has := col["bbox"]; has || j.Rows != 3 {
		t.Errorf("rows %d, geo column %v", j.Rows, col)
	}
	fidelityChecks(t, o, "geometries", "attribute values")
}

// The value check can fail: one coordinate byte flipped, or one attribute
// altered, after the features were digested, fails the conversion.
func TestValueFidelityFindsAlteration(t *testing.T) {
	src := makeGPKG(t, "POINT (500000 0)", "LINESTRING (500001 1, 500002 2)", "POINT (500003 3)")
	convertOne(t, src, gpRecipe()) // unaltered: passes
	cases := map[string]func(*geoparquet.Feature){
		"coordinate byte": func(f *geoparquet.Feature) {
			if len(f.WKB) > 30 {
				f.WKB = append([]byte(nil), f.WKB...)
				f.WKB[len(f.WKB)-1] ^= 0x01
			}
		},
		"attribute": func(f *geoparquet.Feature) {
			if s, ok := f.Values[1].(string); ok && s == "f2" {
				f.Values[1] = "f2 "
			}
		},
	}
	for name, corrupt := range cases {
		corruptFeature = corrupt
		_, err := engine.Convert(context.Background(), src, t.TempDir(), gpRecipe())
		corruptFeature = nil
		if err == nil || !strings.Contains(err.Error(), "differ from those written") {
			t.Errorf("%s altered: %v, want the fidelity check to fail", name, err)
		}
	}
}
