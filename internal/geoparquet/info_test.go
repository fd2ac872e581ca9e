package geoparquet

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

// ReadInfo reads back what Write wrote: rows, attribute columns and their
// types (geometry and covering columns left out), null geometries, and the
// lineage under LineageKey next to a "geo" key that stays valid.
func TestReadInfoAndLineage(t *testing.T) {
	t.Parallel()
	layer := Layer{Name: "l", Fields: []Field{
		{Name: "i", Type: Int32, Nullable: true}, {Name: "j", Type: Int64, Nullable: true},
		{Name: "f", Type: Float64, Nullable: true}, {Name: "s", Type: String, Nullable: true},
		{Name: "b", Type: Bool, Nullable: true}, {Name: "d", Type: Date, Nullable: true},
		{Name: "t", Type: DateTime, Nullable: true}, {Name: "x", Type: Binary, Nullable: true},
	}}
	day := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	var fs []Feature
	for i := range 10 {
		f := Feature{WKB: wkbPointXY(float64(i), float64(i)), Values: []any{int32(i), int64(i), 1.5, "a", true, day, day, []byte{1}}}
		if i%4 == 0 {
			f.WKB = nil
		}
		fs = append(fs, f)
	}
	const lineage = `{"src_sha256":"abc","recipe":"0123456789abcdef","layer":"l"}`
	write := func(lin string) []byte {
		opts := DefaultOptions()
		opts.RowGroupRows = 4
		opts.Lineage = lin
		var buf bytes.Buffer
		if _, err := Write(&buf, layer, &SliceSource{Features: fs}, opts); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	b := write(lineage)
	if !bytes.Equal(b, write(lineage)) {
		t.Error("same features and lineage, different bytes")
	}
	info, err := ReadInfo(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 10 || info.NullGeometries != 3 || info.GeometryColumn != "geometry" {
		t.Errorf("rows %d, nulls %d, geometry column %q", info.Rows, info.NullGeometries, info.GeometryColumn)
	}
	if !reflect.DeepEqual(info.Fields, layer.Fields) {
		t.Errorf("fields read back %v, written %v", info.Fields, layer.Fields)
	}
	if info.KeyValue[LineageKey] != lineage {
		t.Errorf("lineage read back %q", info.KeyValue[LineageKey])
	}
	// The footer alone says the same but the null count.
	footer, err := ReadFooterInfo(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := info
	want.NullGeometries = 0
	if !reflect.DeepEqual(footer, want) {
		t.Errorf("ReadFooterInfo = %+v, want ReadInfo's %+v without the null count", footer, info)
	}
	if rep, err := Validate(bytes.NewReader(b), int64(len(b))); err != nil || !rep.OK() {
		t.Errorf("a file with lineage does not validate: %v %v", rep.Problems, err)
	}
	t.Run("hyparquet reads it", func(t *testing.T) {
		if out, ok, stderr := judge(t, b); !ok || out.Rows != 10 || out.NullGeometries != 3 {
			t.Errorf("hyparquet on a file with lineage: %+v %v %s", out, ok, stderr)
		}
	})
	if _, err := Write(&bytes.Buffer{}, layer, &SliceSource{Features: fs}, Options{RowGroupRows: 4, Lineage: "not json"}); !errors.Is(err, ErrInvalidLayer) {
		t.Errorf("lineage that is not JSON: %v", err)
	}
}
