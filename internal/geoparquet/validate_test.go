package geoparquet

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// rawFile writes a Parquet file with a "geometry" binary column, a "bbox"
// struct column (when boxes is not nil; nil entries are null) and the given
// "geo" metadata (none when geo is ""), bypassing Write's guarantees.
func rawFile(t *testing.T, geo string, wkbs [][]byte, boxes []*[4]float64) []byte {
	t.Helper()
	mem := memory.DefaultAllocator
	fields := []arrow.Field{{Name: "geometry", Type: arrow.BinaryTypes.Binary, Nullable: true}}
	if boxes != nil {
		fields = append(fields, arrow.Field{Name: "bbox", Type: bboxStruct(doubleCovering), Nullable: true})
	}
	var md *arrow.Metadata
	if geo != "" {
		m := arrow.NewMetadata([]string{"geo"}, []string{geo})
		md = &m
	}
	sc := arrow.NewSchema(fields, md)
	gb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer gb.Release()
	for _, w := range wkbs {
		if w == nil {
			gb.AppendNull()
		} else {
			gb.Append(w)
		}
	}
	cols := []arrow.Array{gb.NewArray()}
	if boxes != nil {
		sb := array.NewStructBuilder(mem, bboxStruct(doubleCovering))
		defer sb.Release()
		for _, b := range boxes {
			if b == nil {
				sb.AppendNull()
				continue
			}
			sb.Append(true)
			for k := range 4 {
				sb.FieldBuilder(k).(*array.Float64Builder).Append(b[k])
			}
		}
		cols = append(cols, sb.NewArray())
	}
	rec := array.NewRecordBatch(sc, cols, int64(len(wkbs)))
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func goodGeo(mut func(col map[string]any, top map[string]any)) string {
	col := map[string]any{
		"encoding":       "WKB",
		"geometry_types": []any{"Polygon"},
		"bbox":           []any{0, 0, 3, 3},
		"covering": map[string]any{"bbox": map[string]any{
			"xmin": []any{"bbox", "xmin"}, "ymin": []any{"bbox", "ymin"},
			"xmax": []any{"bbox", "xmax"}, "ymax": []any{"bbox", "ymax"},
		}},
	}
	top := map[string]any{"version": "1.1.0", "primary_column": "geometry", "columns": map[string]any{"geometry": col}}
	if mut != nil {
		mut(col, top)
	}
	b, _ := json.Marshal(top)
	return string(b)
}

type failingReaderAt struct{}

func (failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errors.New("connection reset") }

func TestValidateBrokenFiles(t *testing.T) {
	t.Parallel()
	rects := [][]byte{wkbRect(0, 0, 1, 1), wkbRect(2, 2, 3, 3), nil}
	boxes := []*[4]float64{{0, 0, 1, 1}, {2, 2, 3, 3}, nil}
	good := rawFile(t, goodGeo(nil), rects, boxes)

	var written bytes.Buffer
	if _, err := Write(&written, Layer{}, &SliceSource{Features: []Feature{
		{WKB: wkbRect(0, 0, 1, 1)}, {WKB: wkbLine(5, 5, 6, 6)}}}, DefaultOptions()); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		data []byte
		want []string // substrings, one problem each; none = valid
	}{
		{name: "good raw file", data: good},
		{name: "good written file", data: written.Bytes()},
		{name: "1.0.0 without covering", data: rawFile(t, goodGeo(func(c, top map[string]any) {
			top["version"] = "1.0.0"
			delete(c, "covering")
		}), rects, nil)},
		{name: "empty geometry_types allows anything", data: rawFile(t, goodGeo(func(c, _ map[string]any) {
			c["geometry_types"] = []any{}
		}), rects, boxes)},
		{name: "crs null", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["crs"] = nil }), rects, boxes)},

		{name: "zero bytes", data: nil, want: []string{"not a readable Parquet file"}},
		{name: "truncated file", data: good[:len(good)/2], want: []string{"not a readable Parquet file"}},
		{name: "truncated written file", data: written.Bytes()[:written.Len()-10], want: []string{"not a readable Parquet file"}},
		{name: "missing geo key", data: rawFile(t, "", rects, boxes), want: []string{`no "geo" key`}},
		{name: "geo not JSON", data: rawFile(t, "{version:", rects, boxes), want: []string{"not a JSON object"}},
		{name: "bad WKB", data: rawFile(t, goodGeo(nil), [][]byte{wkbRect(0, 0, 1, 1), {1, 3, 0, 0, 0}, nil}, boxes),
			want: []string{"row 1: geometry does not decode as WKB"}},
		{name: "EWKB", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["geometry_types"] = []any{} }),
			[][]byte{newWKB().header(0x20000001).u32(4326).f(0.5, 0.5).b}, []*[4]float64{{0, 0, 1, 1}}),
			want: []string{"ISO WKB"}},
		{name: "wrong geometry_types", data: rawFile(t, goodGeo(func(c, _ map[string]any) {
			c["geometry_types"] = []any{"Point", "MultiPolygon"}
		}), rects, boxes), want: []string{"row 0: geometry is a Polygon", "row 1: geometry is a Polygon"}},
		{name: "Z data declared 2D", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["geometry_types"] = []any{"Point"} }),
			[][]byte{wkbPointXYZ(1, 1, 5)}, []*[4]float64{{1, 1, 1, 1}}), want: []string{"is a Point Z"}},
		{name: "invalid geometry_types name", data: rawFile(t, goodGeo(func(c, _ map[string]any) {
			c["geometry_types"] = []any{"Polygon", "Circle", "Polygon"}
		}), rects, boxes), want: []string{`invalid name "Circle"`, `lists "Polygon" twice`}},
		{name: "bbox too small", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["bbox"] = []any{0, 0, 2, 2} }), rects, boxes),
			want: []string{"row 1: geometry extent [2 2 3 3] is outside the declared bbox"}},
		{name: "bbox wrong length", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["bbox"] = []any{0, 0, 2} }), rects, boxes),
			want: []string{"bbox is not a list of 4 or 6 numbers"}},
		{name: "covering inconsistent", data: rawFile(t, goodGeo(nil), rects, []*[4]float64{{0, 0, 1, 1}, {2, 2, 2.5, 3}, nil}),
			want: []string{"row 1: covering bbox [2 2 2.5 3] does not contain the geometry's [2 2 3 3]"}},
		{name: "covering null for a geometry", data: rawFile(t, goodGeo(nil), rects, []*[4]float64{{0, 0, 1, 1}, nil, nil}),
			want: []string{"row 1: covering bbox is null"}},
		{name: "covering column missing", data: rawFile(t, goodGeo(nil), rects, nil),
			want: []string{`covering column "bbox" has no field "xmin"`}},
		{name: "covering names wrong field", data: rawFile(t, goodGeo(func(c, _ map[string]any) {
			c["covering"].(map[string]any)["bbox"].(map[string]any)["xmin"] = []any{"bbox", "ymin"}
		}), rects, boxes), want: []string{`covering.bbox.xmin must be`}},
		{name: "missing version and encoding", data: rawFile(t, goodGeo(func(c, top map[string]any) {
			delete(top, "version")
			delete(c, "encoding")
		}), rects, boxes), want: []string{"version is missing", "encoding is missing"}},
		{name: "version 2", data: rawFile(t, goodGeo(func(_, top map[string]any) { top["version"] = "2.0.0" }), rects, boxes),
			want: []string{`version "2.0.0" is not a GeoParquet 1.x version`}},
		{name: "primary column not declared", data: rawFile(t, goodGeo(func(_, top map[string]any) { top["primary_column"] = "geom" }), rects, boxes),
			want: []string{`primary_column "geom" is not listed`}},
		{name: "geometry column not in schema", data: rawFile(t, goodGeo(func(_, top map[string]any) {
			top["primary_column"] = "geom"
			top["columns"] = map[string]any{"geom": top["columns"].(map[string]any)["geometry"]}
		}), rects, boxes), want: []string{`geometry column "geom" is not a top-level column`}},
		{name: "geometry column is a struct", data: rawFile(t, goodGeo(func(_, top map[string]any) {
			top["primary_column"] = "bbox"
			top["columns"] = map[string]any{"bbox": map[string]any{"encoding": "WKB", "geometry_types": []any{}}}
		}), rects, boxes), want: []string{`geometry column "bbox" is not a top-level column`}},
		{name: "crs as WKT string", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["crs"] = `GEOGCS["WGS 84"]` }), rects, boxes),
			want: []string{"crs is neither null nor a PROJJSON object"}},
		{name: "crs object without type", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["crs"] = map[string]any{"name": "x"} }), rects, boxes),
			want: []string{`crs is an object without a PROJJSON "type"`}},
		{name: "bad edges and orientation", data: rawFile(t, goodGeo(func(c, _ map[string]any) {
			c["edges"] = "curved"
			c["orientation"] = "clockwise"
		}), rects, boxes), want: []string{"edges must be", "orientation must be"}},
		{name: "native encoding unsupported", data: rawFile(t, goodGeo(func(c, _ map[string]any) { c["encoding"] = "point" }), rects, boxes),
			want: []string{`encoding is "point"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Validate(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil {
				t.Fatalf("error %v (broken files give problems, not errors)", err)
			}
			if len(rep.Problems) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(rep.Problems), len(tc.want), rep)
			}
			for i, w := range tc.want {
				if !strings.Contains(rep.Problems[i], w) {
					t.Errorf("problem %d = %q, want containing %q", i, rep.Problems[i], w)
				}
			}
		})
	}

	t.Run("I/O error is an error", func(t *testing.T) {
		if _, err := Validate(failingReaderAt{}, 1000); err == nil || !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("many bad rows are summarised", func(t *testing.T) {
		var wkbs [][]byte
		for range 50 {
			wkbs = append(wkbs, []byte{1, 1, 0})
		}
		data := rawFile(t, goodGeo(func(c, _ map[string]any) { delete(c, "covering") }), wkbs, nil)
		rep, err := Validate(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != maxProblemsPerKind+1 || !strings.Contains(rep.Problems[maxProblemsPerKind], "40 more wkb problems") {
			t.Fatalf("%s", rep)
		}
	})
}

var _ io.ReaderAt = failingReaderAt{}
