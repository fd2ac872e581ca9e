package gdal

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// valuesFixture writes, with GDAL's Python bindings, one source per
// driver holding the field types and subtypes that driver keeps: a
// GeoJSON with the lists, Time and DateTimes with and without zones, and a
// GeoPackage with the subtypes and Binary. Every field is null on one
// feature, lists of one to three elements (GeoJSON reads a field with an empty list as JSON text).
const valuesFixture = `
import sys
from osgeo import ogr, osr
ogr.UseExceptions()
out = sys.argv[1]
sr = osr.SpatialReference(); sr.ImportFromEPSG(4326)

def layer(driver, path, name):
    ds = ogr.GetDriverByName(driver).CreateDataSource(path)
    return ds, ds.CreateLayer(name, sr, ogr.wkbPoint)

def field(l, name, t, sub=None):
    fd = ogr.FieldDefn(name, t)
    if sub is not None:
        fd.SetSubType(sub)
    l.CreateField(fd)

def feature(l, i, values):
    f = ogr.Feature(l.GetLayerDefn())
    f.SetGeometry(ogr.CreateGeometryFromWkt('POINT (%d %d)' % (i, -i)))
    for k, v in values.items():
        if v is None:
            f.SetFieldNull(k)
        elif isinstance(v, tuple):
            f.SetField(k, *v)
        elif isinstance(v, list):
            idx = f.GetFieldIndex(k)
            t = l.GetLayerDefn().GetFieldDefn(idx).GetType()
            {ogr.OFTIntegerList: f.SetFieldIntegerList, ogr.OFTInteger64List: f.SetFieldInteger64List,
             ogr.OFTRealList: f.SetFieldDoubleList, ogr.OFTStringList: f.SetFieldStringList}[t](idx, v)
        elif isinstance(v, bytes):
            f.SetFieldBinaryFromHexString(k, v.hex())
        else:
            f.SetField(k, v)
    l.CreateFeature(f)

ds, l = layer('GeoJSON', out + '/values.geojson', 'values')
for n, t, s in [('i', ogr.OFTInteger, None), ('big', ogr.OFTInteger64, None), ('r', ogr.OFTReal, None),
                ('s', ogr.OFTString, None), ('b', ogr.OFTInteger, ogr.OFSTBoolean), ('d', ogr.OFTDate, None),
                ('t', ogr.OFTTime, None), ('dto', ogr.OFTDateTime, None), ('dtw', ogr.OFTDateTime, None),
                ('dtm', ogr.OFTDateTime, None), ('il', ogr.OFTIntegerList, None), ('bl', ogr.OFTIntegerList, ogr.OFSTBoolean),
                ('i64l', ogr.OFTInteger64List, None), ('rl', ogr.OFTRealList, None), ('sl', ogr.OFTStringList, None)]:
    field(l, n, t, s)
zones = [128, 86, 100, 101]  # +07:00, -03:30, UTC, +00:15
for i in range(6):
    v = {'i': -7 * i, 'big': 5000000000 + i, 'r': 1.5 / (i + 1), 's': 'ä,(%d)' % i, 'b': i % 2, 'd': (2024, 2, 29 - i, 0, 0, 0, 0),
         't': (0, 0, 0, 13, 5 + i, 7.25 + i, 0), 'dto': (2024, 3, 1, 23, 30, 1.125 * i, zones[i % 4]),
         'dtw': (2024, 3, 1, 10, i, 59.5, 0), 'dtm': (2024, 3, 1, 10, i, 1.5, [0, 128][i % 2]),
         'il': [i, -i, 2 ** 31 - 1][: 1 + i % 3], 'bl': [1, 0, 1][: 1 + i % 3], 'i64l': [2 ** 40 + i, -1][: 1 + i % 2],
         'rl': [0.1 * i, -2.0, 1e300][: 1 + i % 3], 'sl': ['a,b', '(2:x)', 'é'][: 1 + i % 3]}
    if i == 3:
        v = {k: None for k in v}
    feature(l, i, v)
ds = None

ds, l = layer('GPKG', out + '/subtypes.gpkg', 'subtypes')
for n, t, s in [('i16', ogr.OFTInteger, ogr.OFSTInt16), ('f32', ogr.OFTReal, ogr.OFSTFloat32),
                ('js', ogr.OFTString, ogr.OFSTJSON), ('bin', ogr.OFTBinary, None), ('dtu', ogr.OFTDateTime, None)]:
    field(l, n, t, s)
for i in range(4):
    v = {'i16': -300 + i, 'f32': 0.25 * i - 1, 'js': '{"a": [%d, null]}' % i, 'bin': bytes([i, 0, 255]),
         'dtu': (2024, 3, 1 + i, 10, 0, 0.001 * i, 100)}
    if i == 2:
        v = {k: None for k in v}
    feature(l, i, v)
ds = None
`

// valuesRead prints what OGR reads from a source, field by field, each
// value in the form the output's outside reader is compared in: integers
// and reals as JSON numbers (64-bit integers as text), dates as
// YYYY-MM-DD, times of day as milliseconds, DateTimes as ISO text in UTC
// to the millisecond (a value without a zone as its reading) with whether
// it had a zone, binaries as hex, lists as lists.
const valuesRead = `
import sys, json, datetime
from osgeo import ogr
ogr.UseExceptions()
ds = ogr.Open(sys.argv[1]); l = ds.GetLayer(0); d = l.GetLayerDefn()
fields = [{'name': d.GetFieldDefn(i).GetName(), 'type': d.GetFieldDefn(i).GetTypeName(),
           'subtype': ogr.GetFieldSubTypeName(d.GetFieldDefn(i).GetSubType())} for i in range(d.GetFieldCount())]
def ms(sec):
    return int(round(sec * 1000))
def value(f, i):
    if not f.IsFieldSetAndNotNull(i):
        return None
    t = d.GetFieldDefn(i).GetType()
    if t in (ogr.OFTInteger, ogr.OFTInteger64):
        return str(f.GetFieldAsInteger64(i))
    if t == ogr.OFTReal:
        return f.GetFieldAsDouble(i)
    if t == ogr.OFTDate:
        y, m, dd, *_ = f.GetFieldAsDateTime(i)
        return '%04d-%02d-%02d' % (y, m, dd)
    if t == ogr.OFTTime:
        _, _, _, h, mi, s, _ = f.GetFieldAsDateTime(i)
        return (h * 3600 + mi * 60) * 1000 + ms(s)
    if t == ogr.OFTDateTime:
        y, m, dd, h, mi, s, tz = f.GetFieldAsDateTime(i)
        v = datetime.datetime(y, m, dd, h, mi) + datetime.timedelta(milliseconds=ms(s))
        if tz > 1:
            v -= datetime.timedelta(minutes=(tz - 100) * 15)
        return {'iso': v.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (v.microsecond // 1000), 'zoned': tz > 1}
    if t == ogr.OFTBinary:
        return f.GetFieldAsBinary(i).hex()
    if t in (ogr.OFTIntegerList, ogr.OFTInteger64List):
        return [str(e) for e in (f.GetFieldAsIntegerList(i) if t == ogr.OFTIntegerList else f.GetFieldAsInteger64List(i))]
    if t == ogr.OFTRealList:
        return f.GetFieldAsDoubleList(i)
    if t == ogr.OFTStringList:
        return f.GetFieldAsStringList(i)
    return f.GetFieldAsString(i)
rows = [{fd['name']: value(f, i) for i, fd in enumerate(fields)} for f in l]
print(json.dumps({'fields': fields, 'rows': rows}))
`

type ogrRead struct {
	Fields []struct{ Name, Type, Subtype string }
	Rows   []map[string]any
}

func python(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(cogValidatorPython); err != nil {
		t.Skip("python3-gdal not installed")
	}
	var so, se bytes.Buffer
	cmd := exec.Command(cogValidatorPython, append([]string{"-c", script}, args...)...)
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\n%s", err, se.String())
	}
	return so.Bytes()
}

// columnValues is one column of every row as hyparquet reads it
// (values.mjs).
func columnValues(t *testing.T, path, column string) []any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH (needed by the hyparquet judge)")
	}
	if _, err := os.Stat(filepath.Join(hyparquetDir, "node_modules", "hyparquet")); err != nil {
		t.Skip("hyparquet not installed: run `make hyparquet`")
	}
	var so, se bytes.Buffer
	cmd := exec.Command(node, filepath.Join(hyparquetDir, "values.mjs"), path, column)
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("values.mjs %s: %v\n%s", column, err, se.String())
	}
	var out []any
	if err := json.Unmarshal(so.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// duckType is the type DuckDB reads a column as (duckdb-values.mjs).
func duckType(t *testing.T, path, column string) string {
	t.Helper()
	node, _ := exec.LookPath("node")
	if _, err := os.Stat(filepath.Join(hyparquetDir, "node_modules", "@duckdb", "node-api")); err != nil || node == "" {
		t.Skip("DuckDB judge not installed: run `make hyparquet`")
	}
	var so, se bytes.Buffer
	cmd := exec.Command(node, filepath.Join(hyparquetDir, "duckdb-values.mjs"), path, column)
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckdb-values.mjs %s: %v\n%s", column, err, se.String())
	}
	var v struct{ Type string }
	if err := json.Unmarshal(so.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v.Type
}

// canon is a value as text, the same for OGR's and hyparquet's forms of
// one value: numbers shortest, lists bracketed, hyparquet's bytes (a JSON
// object of indexes) as hex, its dates and timestamps (ISO text) cut to
// what the column holds.
func canon(v any, written geoparquet.FieldType) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case string:
		if written == geoparquet.Date && len(x) == len("2006-01-02T00:00:00.000Z") {
			return strings.TrimSuffix(x, "T00:00:00.000Z")
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canon(e, written)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		if iso, ok := x["iso"]; ok { // OGR's DateTime
			return canon(iso, written)
		}
		b := make([]byte, len(x))
		for k, e := range x {
			i, _ := strconv.Atoi(k)
			b[i] = byte(e.(float64))
		}
		return hex.EncodeToString(b)
	}
	return fmt.Sprint(v)
}

// TestEveryOGRFieldTypeKeepsItsValues converts sources holding every OGR
// field type and subtype GDAL's drivers here write (UUID is a subtype no
// 3.6 driver keeps: it reads as String) and compares every value hyparquet
// reads from the output with what OGR (the Python bindings) reads from the
// source; the column types are checked with ReadInfo and DuckDB, and each
// type the output does not keep in full is named in a warning.
func TestEveryOGRFieldTypeKeepsItsValues(t *testing.T) {
	dir := t.TempDir()
	python(t, valuesFixture, dir)
	cases := []struct {
		src, field, ogrType, subtype string
		column                       geoparquet.FieldType
		duck                         string
		warning                      string // in the output's warnings, "" for none about the field
	}{
		{"values.geojson", "i", "Integer", "None", geoparquet.Int32, "INTEGER", ""},
		{"values.geojson", "big", "Integer64", "None", geoparquet.Int64, "BIGINT", ""},
		{"values.geojson", "r", "Real", "None", geoparquet.Float64, "DOUBLE", ""},
		{"values.geojson", "s", "String", "None", geoparquet.String, "VARCHAR", ""},
		{"values.geojson", "b", "Integer", "Boolean", geoparquet.Bool, "BOOLEAN", ""},
		{"values.geojson", "d", "Date", "None", geoparquet.Date, "DATE", ""},
		{"values.geojson", "t", "Time", "None", geoparquet.Time, "TIME", ""},
		{"values.geojson", "dto", "DateTime", "None", geoparquet.DateTime, "TIMESTAMP WITH TIME ZONE", "offsets are not kept"},
		{"values.geojson", "dtw", "DateTime", "None", geoparquet.LocalDateTime, "TIMESTAMP", ""},
		// Both warnings: the offsets normalised, the zone-less values
		// taken as UTC.
		{"values.geojson", "dtm", "DateTime", "None", geoparquet.DateTime, "TIMESTAMP WITH TIME ZONE", "as if they were UTC"},
		{"values.geojson", "il", "IntegerList", "None", geoparquet.Int32List, "INTEGER[]", ""},
		{"values.geojson", "bl", "IntegerList", "Boolean", geoparquet.Int32List, "INTEGER[]", "list of 0/1 integers"},
		{"values.geojson", "i64l", "Integer64List", "None", geoparquet.Int64List, "BIGINT[]", ""},
		{"values.geojson", "rl", "RealList", "None", geoparquet.Float64List, "DOUBLE[]", ""},
		{"values.geojson", "sl", "StringList", "None", geoparquet.StringList, "VARCHAR[]", ""},
		{"subtypes.gpkg", "i16", "Integer", "Int16", geoparquet.Int32, "INTEGER", ""},
		{"subtypes.gpkg", "f32", "Real", "Float32", geoparquet.Float64, "DOUBLE", ""},
		{"subtypes.gpkg", "js", "String", "JSON", geoparquet.String, "VARCHAR", ""},
		{"subtypes.gpkg", "bin", "Binary", "None", geoparquet.Binary, "BLOB", ""},
		{"subtypes.gpkg", "dtu", "DateTime", "None", geoparquet.DateTime, "TIMESTAMP WITH TIME ZONE", ""},
	}
	type converted struct {
		out  recipe.Output
		info geoparquet.Info
		src  ogrRead
	}
	done := map[string]converted{}
	for _, tc := range cases {
		t.Run(tc.src+"/"+tc.field, func(t *testing.T) {
			c, ok := done[tc.src]
			if !ok {
				src := filepath.Join(dir, tc.src)
				// Outside the subtest's own directory: later cases read it.
				work := filepath.Join(dir, "out-"+tc.src)
				if err := os.Mkdir(work, 0o755); err != nil {
					t.Fatal(err)
				}
				outs, err := engine.Convert(context.Background(), src, work, gpRecipe())
				if err != nil {
					t.Fatal(err)
				}
				c.out = outs[0]
				validateGeoParquet(t, c.out.Path)
				f, err := os.Open(c.out.Path)
				if err != nil {
					t.Fatal(err)
				}
				fi, _ := f.Stat()
				c.info, err = geoparquet.ReadInfo(f, fi.Size())
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(python(t, valuesRead, src), &c.src); err != nil {
					t.Fatal(err)
				}
				done[tc.src] = c
			}
			var ogrType, subtype string
			for _, f := range c.src.Fields {
				if f.Name == tc.field {
					ogrType, subtype = f.Type, f.Subtype
				}
			}
			if ogrType != tc.ogrType || subtype != tc.subtype {
				t.Fatalf("the fixture's field %s reads as %s (%s), want %s (%s)", tc.field, ogrType, subtype, tc.ogrType, tc.subtype)
			}
			var written geoparquet.FieldType
			for _, f := range c.info.Fields {
				if f.Name == tc.field {
					written = f.Type
				}
			}
			if written != tc.column {
				t.Errorf("column %s written as %s, want %s", tc.field, written, tc.column)
			}
			if got := duckType(t, c.out.Path, tc.field); got != tc.duck {
				t.Errorf("DuckDB reads column %s as %s, want %s", tc.field, got, tc.duck)
			}
			var mine []string
			for _, w := range c.out.Warnings {
				if strings.Contains(w, fmt.Sprintf("%q", tc.field)) {
					mine = append(mine, w)
				}
			}
			if named := strings.Join(mine, "\n"); tc.warning == "" && named != "" || !strings.Contains(named, tc.warning) {
				t.Errorf("warnings about %s: %q, want one containing %q", tc.field, mine, tc.warning)
			}
			got := columnValues(t, c.out.Path, tc.field)
			if len(got) != len(c.src.Rows) {
				t.Fatalf("%d values, the source has %d features", len(got), len(c.src.Rows))
			}
			// Points without a covering stay in input order (FID order).
			for r, row := range c.src.Rows {
				want := canon(row[tc.field], written)
				if g := canon(got[r], written); g != want {
					t.Errorf("feature %d field %s: output %s, source %s", r, tc.field, g, want)
				}
			}
		})
	}
	// Every field of both sources is a case.
	var names []string
	for _, c := range done {
		for _, f := range c.src.Fields {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	if len(names) != len(cases) {
		t.Errorf("the sources have fields %v, the table %d cases", names, len(cases))
	}
}

// TestAttributeTables: a layer without a geometry column (a GeoPackage
// attributes table) is refused with NoGeometry by default, and with the
// whole source when it sits beside a spatial layer; with attribute_tables:
// parquet it is written as plain Parquet (no "geo"), its rows and values
// as OGR reads them, beside the spatial layer's GeoParquet.
func TestAttributeTables(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, dir, "t.csv", "id,name,when\n1,a,2024-03-01T10:00:00+07:00\n2,,2024-03-02\n3,c,\n")
	only := filepath.Join(dir, "table.gpkg")
	if out, err := exec.Command("ogr2ogr", "-f", "GPKG", only, csv, "-nln", "t", "-oo", "AUTODETECT_TYPE=YES").CombinedOutput(); err != nil {
		t.Fatalf("ogr2ogr: %v\n%s", err, out)
	}
	both := filepath.Join(dir, "both.gpkg")
	for _, args := range [][]string{
		{"-f", "GPKG", both, sample(t, "parks.geojson").Path, "-nln", "parks"},
		{"-update", both, csv, "-nln", "t", "-oo", "AUTODETECT_TYPE=YES"},
	} {
		if out, err := exec.Command("ogr2ogr", args...).CombinedOutput(); err != nil {
			t.Fatalf("ogr2ogr %v: %v\n%s", args, err, out)
		}
	}
	for _, src := range []string{only, both} {
		_, err := engine.Convert(context.Background(), src, t.TempDir(), gpRecipe())
		if fault.CodeOf(err) != fault.NoGeometry || !strings.Contains(err.Error(), `layer "t" has no geometry column`) || !strings.Contains(err.Error(), "attribute_tables: parquet") {
			t.Errorf("%s: %v, want NoGeometry naming the table", filepath.Base(src), err)
		}
		if src == both && !strings.Contains(fmt.Sprint(err), "spatial layers are not converted either") {
			t.Errorf("both: %v does not say the spatial layer is refused too", err)
		}
	}
	r := gpRecipe()
	r.AttributeTables = recipe.AttributeTablesParquet
	for _, src := range []string{only, both} {
		outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(src), err)
		}
		var table *recipe.Output
		for i, o := range outs {
			if o.Layer == "t" {
				table = &outs[i]
			} else if o.Format != recipe.FormatGeoParquet {
				t.Errorf("layer %s: format %s", o.Layer, o.Format)
			}
		}
		if table == nil || len(outs) != map[string]int{only: 1, both: 2}[src] {
			t.Fatalf("%s: outputs %+v", filepath.Base(src), outs)
		}
		if table.Format != recipe.FormatParquet || filepath.Ext(table.Path) != ".parquet" || table.Fidelity == nil ||
			!strings.Contains(strings.Join(table.Fidelity.Checks, ","), "no_geometry") || table.Fidelity.Features != 3 {
			t.Errorf("table output %+v fidelity %+v", table, table.Fidelity)
		}
		f, err := os.Open(table.Path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		info, err := geoparquet.ReadTableInfo(f, fi.Size())
		f.Close()
		if err != nil {
			t.Fatalf("not a plain Parquet table: %v", err)
		}
		lin, err := recipe.ParseLineage(info.KeyValue[geoparquet.LineageKey])
		if err != nil || !lin.NoGeometry || lin.Layer != "t" || lin.RecipeHash != r.ShortHash() {
			t.Errorf("lineage %+v (%v)", lin, err)
		}
		var src ogrRead
		if err := json.Unmarshal(python(t, valuesRead, only), &src); err != nil {
			t.Fatal(err)
		}
		for k, fd := range src.Fields {
			got := columnValues(t, table.Path, fd.Name)
			for i, row := range src.Rows {
				if g, w := canon(got[i], info.Fields[k].Type), canon(row[fd.Name], info.Fields[k].Type); g != w {
					t.Errorf("row %d field %s: output %s, source %s", i, fd.Name, g, w)
				}
			}
		}
	}
}
