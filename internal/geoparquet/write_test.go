package geoparquet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// allFields has one nullable field of every type, plus a required id.
var allFields = []Field{
	{Name: "id", Type: Int64},
	{Name: "i32", Type: Int32, Nullable: true},
	{Name: "i64", Type: Int64, Nullable: true},
	{Name: "f64", Type: Float64, Nullable: true},
	{Name: "name", Type: String, Nullable: true},
	{Name: "flag", Type: Bool, Nullable: true},
	{Name: "day", Type: Date, Nullable: true},
	{Name: "at", Type: DateTime, Nullable: true},
	{Name: "blob", Type: Binary, Nullable: true},
}

// values returns row i's attributes; every field is null on some rows
// (field k is null when i%(k+2) == 1).
func values(i int) []any {
	v := []any{
		int64(i),
		int32(i * 3),
		int64(i) << 33,
		float64(i) / 4,
		fmt.Sprintf("feature-%d-é", i),
		i%2 == 0,
		time.Date(2000+i%30, time.Month(1+i%12), 1+i%28, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 30, i%60, 123456000, time.FixedZone("x", 3600)),
		[]byte{byte(i), 0, 0xff},
	}
	for k := 1; k < len(v); k++ {
		if i%(k+2) == 1 {
			v[k] = nil
		}
	}
	return v
}

// expect normalises an input value to what reading the column gives.
func expect(ft FieldType, v any) any {
	if v == nil {
		return nil
	}
	switch ft {
	case Date:
		return int64(v.(time.Time).Unix() / 86400)
	case DateTime:
		return v.(time.Time).UnixMicro()
	case Binary:
		return string(v.([]byte))
	case Int32:
		return int64(v.(int32))
	}
	return v
}

// cell reads one value of a column as expect() would give it.
func cell(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Binary:
		return string(a.Value(i))
	}
	panic(fmt.Sprintf("unexpected array %T", a))
}

func readTable(t testing.TB, data []byte) (arrow.Table, *file.Reader) {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tbl.Release)
	return tbl, rdr
}

func geoOf(t testing.TB, rdr *file.Reader) map[string]any {
	t.Helper()
	v := rdr.MetaData().KeyValueMetadata().FindValue("geo")
	if v == nil {
		t.Fatal("no geo metadata")
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(*v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeBytes(t testing.TB, layer Layer, feats []Feature, opts Options) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, layer, &SliceSource{Features: feats}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) {
		t.Fatalf("Stats.Bytes %d, wrote %d", st.Bytes, buf.Len())
	}
	return buf.Bytes(), st
}

func TestWriteRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := map[string]func(i int) []byte{
		"points": func(i int) []byte { return wkbPointXY(rng.Float64()*360-180, rng.Float64()*180-90) },
		"points Z": func(i int) []byte {
			return wkbPointXYZ(rng.Float64()*100, rng.Float64()*100, rng.Float64())
		},
		"lines": func(i int) []byte {
			x, y := rng.Float64()*100, rng.Float64()*100
			return wkbLine(x, y, x+rng.Float64(), y-rng.Float64(), x+2, y)
		},
		"polygons": func(i int) []byte {
			x, y := rng.Float64()*100, rng.Float64()*100
			return wkbRect(x, y, x+1+rng.Float64(), y+1)
		},
		"multipolygons": func(i int) []byte {
			x, y := rng.Float64()*100, rng.Float64()*100
			if i%3 == 0 {
				return wkbRect(x, y, x+1, y+1)
			}
			return wkbMultiRect([4]float64{x, y, x + 1, y + 1}, [4]float64{x + 3, y - 2, x + 4, y - 1})
		},
	}
	wantTypes := map[string][]string{
		"points": {"Point"}, "points Z": {"Point Z"}, "lines": {"LineString"},
		"polygons": {"Polygon"}, "multipolygons": {"MultiPolygon", "Polygon"},
	}
	for _, double := range []bool{false, true} {
		for name, g := range gen {
			testRoundTrip(t, name, g, wantTypes[name], double)
		}
	}
}

// testRoundTrip writes 300 features of gen (one null, one empty) with a
// FLOAT or DOUBLE covering and reads every row back.
func testRoundTrip(t *testing.T, name string, g func(i int) []byte, types []string, double bool) {
	t.Run(fmt.Sprintf("%s/double covering %v", name, double), func(t *testing.T) {
		const n = 300
		var feats []Feature
		for i := 0; i < n; i++ {
			f := Feature{WKB: g(i), Values: values(i)}
			switch i {
			case 7:
				f.WKB = nil // null geometry
			case 8:
				f.WKB = newWKB().header(7).u32(0).b // empty collection
			}
			feats = append(feats, f)
		}
		layer := Layer{Name: name, Fields: allFields, IsCRS84: true}
		data, st := writeBytes(t, layer, feats, Options{RowGroupRows: 64, SpatialOrder: true, Covering: true, CoveringDouble: double})

		want := append(append([]string{}, types...), "GeometryCollection")
		sort.Strings(want)
		if !reflect.DeepEqual(st.GeometryTypes, want) {
			t.Errorf("Stats.GeometryTypes %v, want %v", st.GeometryTypes, want)
		}
		if st.Rows != n || st.RowGroups != 5 {
			t.Errorf("Stats rows %d groups %d", st.Rows, st.RowGroups)
		}

		tbl, rdr := readTable(t, data)
		if tbl.NumRows() != n {
			t.Fatalf("read %d rows", tbl.NumRows())
		}
		geo := geoOf(t, rdr)
		col := geo["columns"].(map[string]any)["geometry"].(map[string]any)
		if geo["version"] != "1.1.0" || geo["primary_column"] != "geometry" || col["encoding"] != "WKB" {
			t.Errorf("geo metadata %v", geo)
		}
		if _, ok := col["crs"]; ok {
			t.Errorf("crs present for CRS84: %v", col["crs"])
		}
		if fmt.Sprint(col["geometry_types"]) != fmt.Sprint(want) {
			t.Errorf("geometry_types %v, want %v", col["geometry_types"], want)
		}
		bb := col["bbox"].([]any)
		if fmt.Sprint(bb) != fmt.Sprint(st.BBox[:]) {
			t.Errorf("bbox %v, stats %v", bb, st.BBox)
		}
		if cov := fmt.Sprint(col["covering"]); cov != "map[bbox:map[xmax:[bbox xmax] xmin:[bbox xmin] ymax:[bbox ymax] ymin:[bbox ymin]]]" {
			t.Errorf("covering %s", cov)
		}

		// Every row comes back with its values, geometry and bbox.
		rows := int(tbl.NumRows())
		flat := make([]arrow.Array, tbl.NumCols())
		for c := range flat {
			ch := tbl.Column(c).Data()
			if len(ch.Chunks()) != 1 {
				arr, err := array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				defer arr.Release()
				flat[c] = arr
			} else {
				flat[c] = ch.Chunk(0)
			}
		}
		geomCol := flat[len(allFields)].(*array.Binary)
		bboxCol := flat[len(allFields)+1].(*array.Struct)
		seen := map[int64]bool{}
		for r := 0; r < rows; r++ {
			id := cell(flat[0], r).(int64)
			seen[id] = true
			in := feats[id]
			for k, f := range allFields {
				if got, want := cell(flat[k], r), expect(f.Type, in.Values[k]); !reflect.DeepEqual(got, want) {
					t.Fatalf("row id %d field %s = %#v, want %#v", id, f.Name, got, want)
				}
			}
			if in.WKB == nil {
				if !geomCol.IsNull(r) || !bboxCol.IsNull(r) {
					t.Fatalf("row id %d: null geometry not null", id)
				}
				continue
			}
			if !bytes.Equal(geomCol.Value(r), in.WKB) {
				t.Fatalf("row id %d: geometry differs", id)
			}
			gi, _ := DecodeWKB(in.WKB)
			if gi.Empty {
				if !bboxCol.IsNull(r) {
					t.Fatalf("row id %d: empty geometry has a bbox", id)
				}
				continue
			}
			var box [4]float64
			exact := [4]float64{gi.MinX, gi.MinY, gi.MaxX, gi.MaxY}
			want := exact
			for k := range box {
				if double {
					box[k] = bboxCol.Field(k).(*array.Float64).Value(r)
					continue
				}
				// The nearest FLOATs outwards: the box still contains the geometry.
				box[k] = float64(bboxCol.Field(k).(*array.Float32).Value(r))
				if k < 2 {
					want[k] = float64(floorFloat32(exact[k]))
				} else {
					want[k] = float64(ceilFloat32(exact[k]))
				}
			}
			if box != want || box[0] > exact[0] || box[1] > exact[1] || box[2] < exact[2] || box[3] < exact[3] {
				t.Fatalf("row id %d: bbox %v, want %v for geometry %v", id, box, want, exact)
			}
		}
		if len(seen) != n {
			t.Fatalf("%d distinct ids read back", len(seen))
		}

		rep, err := Validate(bytes.NewReader(data), int64(len(data)))
		if err != nil || !rep.OK() {
			t.Fatalf("Validate: %v\n%s", err, rep)
		}
		if !reflect.DeepEqual(rep.GeometryTypes, want) || rep.BBox != st.BBox || rep.Rows != n || !rep.CRS84 || !rep.Covering {
			t.Fatalf("report %+v, stats %+v", rep, st)
		}
	})
}

const utm33 = `{
  "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
  "type": "ProjectedCRS",
  "name": "WGS 84 / UTM zone 33N",
  "base_crs": {"name": "WGS 84", "datum": {"type": "GeodeticReferenceFrame", "name": "World Geodetic System 1984",
    "ellipsoid": {"name": "WGS 84", "semi_major_axis": 6378137, "inverse_flattening": 298.257223563}},
    "coordinate_system": {"subtype": "ellipsoidal", "axis": [
      {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north", "unit": "degree"},
      {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east", "unit": "degree"}]}},
  "conversion": {"name": "UTM zone 33N", "method": {"name": "Transverse Mercator", "id": {"authority": "EPSG", "code": 9807}}},
  "coordinate_system": {"subtype": "Cartesian", "axis": [
    {"name": "Easting", "abbreviation": "E", "direction": "east", "unit": "metre"},
    {"name": "Northing", "abbreviation": "N", "direction": "north", "unit": "metre"}]},
  "id": {"authority": "EPSG", "code": 32633}
}`

const crs84 = `{"type": "GeographicCRS", "name": "WGS 84 (CRS84)", "id": {"authority": "OGC", "code": "CRS84"}}`

func TestWriteCRS(t *testing.T) {
	feats := []Feature{{WKB: wkbPointXY(500000, 4649776), Values: []any{}}}
	tests := []struct {
		name    string
		layer   Layer
		wantCRS string // "" = key absent
		wantErr error
	}{
		{name: "CRS84 flag", layer: Layer{IsCRS84: true, CRSProjJSON: []byte(crs84)}},
		{name: "no CRS means CRS84", layer: Layer{}},
		{name: "PROJJSON with OGC:CRS84 id", layer: Layer{CRSProjJSON: []byte(crs84)}},
		{name: "projected", layer: Layer{CRSProjJSON: []byte(utm33)}, wantCRS: "ProjectedCRS"},
		{name: "not JSON", layer: Layer{CRSProjJSON: []byte("EPSG:32633")}, wantErr: ErrInvalidLayer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Write(&buf, tc.layer, &SliceSource{Features: feats}, DefaultOptions())
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, rdr := readTable(t, buf.Bytes())
			col := geoOf(t, rdr)["columns"].(map[string]any)["geometry"].(map[string]any)
			crs, ok := col["crs"]
			switch {
			case tc.wantCRS == "" && ok:
				t.Fatalf("crs %v present, want absent", crs)
			case tc.wantCRS != "":
				m, _ := crs.(map[string]any)
				if m["type"] != tc.wantCRS || fmt.Sprint(m["id"]) != "map[authority:EPSG code:32633]" {
					t.Fatalf("crs %v", crs)
				}
			}
			rep, err := Validate(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil || !rep.OK() || rep.CRS84 != (tc.wantCRS == "") {
				t.Fatalf("Validate: %v %s (CRS84=%v)", err, rep, rep.CRS84)
			}
		})
	}
}

func pointFeatures(n int, seed uint64) []Feature {
	rng := rand.New(rand.NewPCG(seed, seed))
	feats := make([]Feature, n)
	for i := range feats {
		feats[i] = Feature{WKB: wkbPointXY(rng.Float64()*1000, rng.Float64()*1000), Values: []any{int64(i), fmt.Sprint("p", i%97)}}
	}
	return feats
}

var pointFields = []Field{{Name: "id", Type: Int64}, {Name: "label", Type: String, Nullable: true}}

func TestWriteDeterministic(t *testing.T) {
	feats := pointFeatures(5000, 7)
	layer := Layer{Name: "pts", Fields: pointFields, CRSProjJSON: []byte(utm33)}
	a, _ := writeBytes(t, layer, feats, Options{RowGroupRows: 1000, ZSTDLevel: 5, SpatialOrder: true, Covering: true, WriterVersion: "1.2.3"})
	b, _ := writeBytes(t, layer, feats, Options{RowGroupRows: 1000, ZSTDLevel: 5, SpatialOrder: true, Covering: true, WriterVersion: "1.2.3"})
	if sha256.Sum256(a) != sha256.Sum256(b) {
		t.Fatal("same input, different bytes")
	}
	if !bytes.Contains(a, []byte(CreatedBy("1.2.3"))) {
		t.Fatal("created_by not recorded")
	}
	c, _ := writeBytes(t, layer, feats, Options{RowGroupRows: 1000, ZSTDLevel: 5, SpatialOrder: true, Covering: true, WriterVersion: "1.2.4"})
	if bytes.Equal(a, c) {
		t.Fatal("writer version not in output")
	}
}

func TestWriteRowGroups(t *testing.T) {
	feats := pointFeatures(1050, 3)
	tests := []struct {
		rows, want int
	}{{100, 11}, {1050, 1}, {2000, 1}, {0, 1}, {1, 1050}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.rows), func(t *testing.T) {
			data, st := writeBytes(t, Layer{Fields: pointFields}, feats, Options{RowGroupRows: tc.rows, SpatialOrder: true, Covering: true, CoverPoints: true})
			rdr, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if st.RowGroups != tc.want || rdr.NumRowGroups() != tc.want {
				t.Fatalf("row groups: stats %d, file %d, want %d", st.RowGroups, rdr.NumRowGroups(), tc.want)
			}
			// bbox columns carry min/max statistics for predicate push-down.
			for _, leaf := range []string{"bbox.xmin", "bbox.ymin", "bbox.xmax", "bbox.ymax"} {
				idx := rdr.MetaData().Schema.ColumnIndexByName(leaf)
				cc, err := rdr.MetaData().RowGroup(0).ColumnChunk(idx)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := cc.StatsSet(); !ok || err != nil {
					t.Fatalf("%s: no statistics (%v)", leaf, err)
				}
			}
		})
	}
}

// rowGroupBoxes returns each row group's bbox from the statistics of the
// covering columns, as a reader doing push-down sees them.
func rowGroupBoxes(t *testing.T, data []byte) [][4]float64 {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sc := rdr.MetaData().Schema
	var out [][4]float64
	for g := 0; g < rdr.NumRowGroups(); g++ {
		var box [4]float64
		for k, leaf := range []string{"bbox.xmin", "bbox.ymin", "bbox.xmax", "bbox.ymax"} {
			cc, err := rdr.MetaData().RowGroup(g).ColumnChunk(sc.ColumnIndexByName(leaf))
			if err != nil {
				t.Fatal(err)
			}
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasMinMax() {
				t.Fatalf("row group %d %s: no statistics (%v)", g, leaf, err)
			}
			switch fs := st.(type) {
			case *metadata.Float64Statistics:
				box[k] = [2]float64{fs.Min(), fs.Max()}[k/2]
			case *metadata.Float32Statistics:
				box[k] = float64([2]float32{fs.Min(), fs.Max()}[k/2])
			default:
				t.Fatalf("row group %d %s: %T statistics", g, leaf, st)
			}
		}
		out = append(out, box)
	}
	return out
}

func TestHilbertOrderTightensRowGroups(t *testing.T) {
	feats := pointFeatures(8192, 11)
	layer := Layer{Fields: pointFields}
	area := func(spatial bool) float64 {
		data, _ := writeBytes(t, layer, feats, Options{RowGroupRows: 512, SpatialOrder: spatial, Covering: true, CoverPoints: true})
		var sum float64
		for _, b := range rowGroupBoxes(t, data) {
			sum += (b[2] - b[0]) * (b[3] - b[1])
		}
		return sum
	}
	input, hilbert := area(false), area(true)
	t.Logf("sum of row-group bbox areas: input order %.0f, Hilbert order %.0f", input, hilbert)
	// 16 groups of random points each span ~the whole extent in input
	// order; in Hilbert order they tile it.
	if !(hilbert < input/8) {
		t.Fatalf("Hilbert order area %.0f not much tighter than input order %.0f", hilbert, input)
	}
}

func TestHilbertSortIsStable(t *testing.T) {
	// Identical geometries: equal keys must keep the input order.
	feats := make([]Feature, 100)
	for i := range feats {
		x := float64(i % 2 * 10)
		feats[i] = Feature{WKB: wkbPointXY(x, x), Values: []any{int64(i), nil}}
	}
	data, _ := writeBytes(t, Layer{Fields: pointFields}, feats, DefaultOptions())
	tbl, _ := readTable(t, data)
	ids := tbl.Column(0).Data().Chunk(0).(*array.Int64).Int64Values()
	last := map[bool]int64{false: -1, true: -1}
	for _, id := range ids {
		odd := id%2 == 1
		if id < last[odd] {
			t.Fatalf("ids out of input order among equal keys: %v", ids)
		}
		last[odd] = id
	}
}

type failingSource struct{ n int }

func (f *failingSource) Next() (Feature, error) {
	if f.n == 0 {
		return Feature{}, errors.New("disk on fire")
	}
	f.n--
	return Feature{WKB: wkbPointXY(1, 1)}, nil
}

func TestWriteErrors(t *testing.T) {
	one := func(wkb []byte, vals ...any) FeatureSource {
		return &SliceSource{Features: []Feature{{WKB: wkb, Values: vals}}}
	}
	f := func(fs ...Field) Layer { return Layer{Fields: fs} }
	pt := wkbPointXY(1, 2)
	tests := []struct {
		name  string
		layer Layer
		src   FeatureSource
		want  error
		text  string
	}{
		{"bad WKB", f(), one([]byte{1, 2, 3}), ErrInvalidGeometry, "feature 0"},
		{"EWKB", f(), one(newWKB().header(0x80000001).f(1, 2, 3).b), ErrInvalidGeometry, "ISO WKB"},
		{"too few values", f(Field{Name: "a", Type: Int32}), one(pt), ErrInvalidValue, "0 values for 1 fields"},
		{"wrong type", f(Field{Name: "a", Type: Int32}), one(pt, "x"), ErrInvalidValue, `field "a"`},
		{"int32 overflow", f(Field{Name: "a", Type: Int32}), one(pt, int64(1)<<40), ErrInvalidValue, "overflows"},
		{"null in required", f(Field{Name: "a", Type: String}), one(pt, nil), ErrInvalidValue, "non-nullable"},
		{"non-UTF-8", f(Field{Name: "a", Type: String}), one(pt, "caf\xe9"), ErrInvalidValue, "UTF-8"},
		{"date not time", f(Field{Name: "a", Type: Date}), one(pt, "2020-01-01"), ErrInvalidValue, "time.Time"},
		{"duplicate names", f(Field{Name: "a", Type: Int32}, Field{Name: "a", Type: Int64}), one(pt), ErrInvalidLayer, "duplicate"},
		{"name clashes with geometry", f(Field{Name: "geometry", Type: Int32}), one(pt), ErrInvalidLayer, "duplicate"},
		{"unknown type", f(Field{Name: "a", Type: 99}), one(pt), ErrInvalidLayer, "unsupported type"},
		{"LocalDateTime declared", f(Field{Name: "a", Type: LocalDateTime}), one(pt), ErrInvalidLayer, "unsupported type"},
		{"time of day past 24h", f(Field{Name: "a", Type: Time}), one(pt, 25*time.Hour), ErrInvalidValue, "outside"},
		{"list element overflows", f(Field{Name: "a", Type: Int32List}), one(pt, []int64{1 << 40}), ErrInvalidValue, "overflows"},
		{"list element not UTF-8", f(Field{Name: "a", Type: StringList}), one(pt, []string{"caf\xe9"}), ErrInvalidValue, "UTF-8"},
		{"list of the wrong type", f(Field{Name: "a", Type: Float64List}), one(pt, []string{"1"}), ErrInvalidValue, "list of numbers"},
		{"geometry in a table without", Layer{NoGeometry: true}, one(pt), ErrInvalidGeometry, "without geometry"},
		{"source error", f(), &failingSource{n: 2}, nil, "disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(&bytes.Buffer{}, tc.layer, tc.src, DefaultOptions())
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestWriteBBoxNameAvoidsAttribute(t *testing.T) {
	layer := Layer{Fields: []Field{{Name: "bbox", Type: String, Nullable: true}}}
	data, _ := writeBytes(t, layer, []Feature{{WKB: wkbRect(0, 0, 1, 1), Values: []any{"attr"}}}, DefaultOptions())
	_, rdr := readTable(t, data)
	col := geoOf(t, rdr)["columns"].(map[string]any)["geometry"].(map[string]any)
	if got := fmt.Sprint(col["covering"]); !strings.Contains(got, "[geometry_bbox xmin]") {
		t.Fatalf("covering %s", got)
	}
	rep, err := Validate(bytes.NewReader(data), int64(len(data)))
	if err != nil || !rep.OK() {
		t.Fatalf("%v %s", err, rep)
	}
}

func TestWriteEmptyLayer(t *testing.T) {
	data, st := writeBytes(t, Layer{Fields: pointFields}, nil, DefaultOptions())
	if st.Rows != 0 || st.RowGroups != 0 || len(st.GeometryTypes) != 0 || !math.IsNaN(st.BBox[0]) {
		t.Fatalf("stats %+v", st)
	}
	rep, err := Validate(bytes.NewReader(data), int64(len(data)))
	if err != nil || !rep.OK() {
		t.Fatalf("%v %s", err, rep)
	}
}

func TestZeroOptionsMeanDefaults(t *testing.T) {
	feats := pointFeatures(100, 1)
	a, _ := writeBytes(t, Layer{Fields: pointFields}, feats, Options{})
	b, _ := writeBytes(t, Layer{Fields: pointFields}, feats, DefaultOptions())
	if !bytes.Equal(a, b) {
		t.Fatal("Options{} differs from DefaultOptions()")
	}
}

func TestWriteCompression(t *testing.T) {
	feats := pointFeatures(200, 5)
	tests := []struct {
		name string
		want compress.Compression
	}{
		{"", compress.Codecs.Zstd}, {"zstd", compress.Codecs.Zstd}, {"SNAPPY", compress.Codecs.Snappy},
		{"gzip", compress.Codecs.Gzip}, {"brotli", compress.Codecs.Brotli}, {"lz4", compress.Codecs.Lz4Raw},
		{"none", compress.Codecs.Uncompressed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := writeBytes(t, Layer{Fields: pointFields}, feats, Options{Compression: tc.name, SpatialOrder: true, Covering: true})
			rdr, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			cc, err := rdr.MetaData().RowGroup(0).ColumnChunk(0)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != tc.want {
				t.Fatalf("codec %v, want %v", cc.Compression(), tc.want)
			}
		})
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, Layer{Fields: pointFields}, &SliceSource{}, Options{Compression: "lzo"}); !errors.Is(err, ErrInvalidLayer) {
		t.Fatalf("lzo: %v", err)
	}
}

// reusingSource hands out each feature in one WKB buffer and one Values
// slice, overwritten by the next call, as internal/gdal's reader does.
type reusingSource struct {
	feats  []Feature
	wkb    []byte
	values []any
}

func (s *reusingSource) Next() (Feature, error) {
	if len(s.feats) == 0 {
		return Feature{}, io.EOF
	}
	f := s.feats[0]
	s.feats = s.feats[1:]
	s.wkb = append(s.wkb[:0], f.WKB...)
	s.values = append(s.values[:0], f.Values...)
	return Feature{WKB: s.wkb, Values: s.values}, nil
}

// Write copies what it keeps of a feature before it asks for the next: a
// source that reuses its buffers writes the same file, held in memory or
// spilled.
func TestWriteCopiesWhatItKeeps(t *testing.T) {
	feats := make([]Feature, 3000)
	for i := range feats {
		x, y := float64(i%97), float64(i%89)
		feats[i] = Feature{WKB: wkbPointXY(x, y), Values: values(i)}
	}
	layer := Layer{Name: "all", Fields: allFields}
	for _, spill := range []int64{0, 1} {
		opts := DefaultOptions()
		opts.RowGroupRows = 500
		opts.SpillBytes, opts.TempDir = spill, t.TempDir()
		want, _ := writeBytes(t, layer, feats, opts)
		var got bytes.Buffer
		if _, err := Write(&got, layer, &reusingSource{feats: feats}, opts); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("spill bytes %d: a source reusing its buffers wrote another file (%d bytes, %d)", spill, got.Len(), len(want))
		}
	}
}
