package geoparquet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// spillFeatures has every attribute type with nulls, null geometries,
// points, polygons and many rows on the same spot (equal Hilbert keys in
// different chunks, which only the input row orders).
func spillFeatures(n int) []Feature {
	fs := make([]Feature, n)
	for i := range fs {
		x, y := float64(i%37), float64(i%53)
		var wkb []byte
		switch i % 7 {
		case 0:
			wkb = wkbRect(x, y, x+1, y+2)
		case 1:
			wkb = wkbMultiRect([4]float64{x, y, x + 1, y + 1}, [4]float64{x + 2, y, x + 3, y + 1})
		case 2:
			wkb = nil
		case 3:
			wkb = wkbPointXY(5, 5)
		default:
			wkb = wkbPointXY(-x*3.5, y*1.25)
		}
		fs[i] = Feature{WKB: wkb, Values: values(i)}
	}
	return fs
}

// valueFeatures are n rows of valueFields, with point geometries or none.
func valueFeatures(n int, geometry bool) []Feature {
	fs := make([]Feature, n)
	for i := range fs {
		fs[i].Values = valueRow(i)
		if geometry && i%9 != 4 {
			fs[i].WKB = wkbPointXY(float64(i%41), float64(i%13))
		}
	}
	return fs
}

// TestSpilledWriteIsTheInMemoryWrite writes layers with a spill threshold
// so small that every 256 rows go to a temporary file, merged three runs at
// a time: the file must be byte for byte the in-memory one, its row
// groups in Hilbert order and their rows in input order, readable by Validate and by the external judge, and leave no
// temporary file behind.
func TestSpilledWriteIsTheInMemoryWrite(t *testing.T) {
	defer func(n int) { mergeFanIn = n }(mergeFanIn)
	mergeFanIn = 3
	nullGeoms := make([]Feature, 600)
	for i := range nullGeoms {
		nullGeoms[i] = Feature{Values: []any{int64(i), nil}}
	}
	cases := []struct {
		name  string
		layer Layer
		feats []Feature
		opts  Options
	}{
		{"every type, nulls, ties", Layer{Fields: allFields, CRSProjJSON: []byte(utm33)}, spillFeatures(5000),
			Options{RowGroupRows: 700, ZSTDLevel: 5, SpatialOrder: true, Covering: true, WriterVersion: "1.0.0"}},
		{"points", Layer{Fields: pointFields, IsCRS84: true}, pointFeatures(3000, 11), DefaultOptions()},
		{"input order", Layer{Fields: allFields}, spillFeatures(1500), Options{RowGroupRows: 100}},
		{"no geometry at all", Layer{Fields: pointFields}, nullGeoms, Options{RowGroupRows: 256, SpatialOrder: true, Covering: true}},
		{"one chunk exactly", Layer{Fields: pointFields}, pointFeatures(256, 2), DefaultOptions()},
		{"times and lists", Layer{Fields: valueFields, IsCRS84: true}, valueFeatures(1800, true), Options{RowGroupRows: 300, SpatialOrder: true, Covering: true}},
		{"table without geometry", Layer{Fields: valueFields, NoGeometry: true}, valueFeatures(1100, false), Options{RowGroupRows: 300, SpatialOrder: true, Covering: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantSt := writeBytes(t, tc.layer, tc.feats, tc.opts)
			if wantSt.Spills != 0 {
				t.Fatalf("no threshold, %d spills", wantSt.Spills)
			}
			dir := t.TempDir()
			opts := tc.opts
			opts.SpillBytes, opts.TempDir = 1, dir
			got, st := writeBytes(t, tc.layer, tc.feats, opts)
			if wantChunks := len(tc.feats) / 256; st.Spills != wantChunks {
				t.Fatalf("%d spills, want %d (one per 256 rows)", st.Spills, wantChunks)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("spilled output (%d bytes) differs from the in-memory output (%d bytes)", len(got), len(want))
			}
			st.Spills = wantSt.Spills
			if fmt.Sprint(st) != fmt.Sprint(wantSt) {
				t.Fatalf("stats %+v, in memory %+v", st, wantSt)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
			if tc.layer.NoGeometry {
				if info, err := ReadTableInfo(bytes.NewReader(got), int64(len(got))); err != nil || info.Rows != int64(len(tc.feats)) {
					t.Fatalf("ReadTableInfo: %v, %d rows", err, info.Rows)
				}
				return
			}
			rep, err := Validate(bytes.NewReader(got), int64(len(got)))
			if err != nil || !rep.OK() {
				t.Fatalf("Validate: %v %s", err, rep)
			}
			// Only a layer with a covering is spatially ordered (the
			// points' has none).
			if tc.opts.SpatialOrder && hasCovering(t, got) {
				assertHilbertOrder(t, got, st.BBox)
			}
			if out, ok, stderr := judge(t, got); !ok || out.Rows != int64(len(tc.feats)) {
				t.Fatalf("judge: read %v, rows %d of %d\n%s", ok, out.Rows, len(tc.feats), stderr)
			}
		})
	}
}

// assertHilbertOrder reads the geometry column back and checks that the
// row groups follow the Hilbert order (no key of a group below a key of
// the group before it; rows without geometry last) and that the rows of
// each group keep their input order (the int64 column "id" holds it).
func assertHilbertOrder(t *testing.T, data []byte, extent [4]float64) {
	t.Helper()
	tbl, rdr := readTable(t, data)
	geomChunks, err := array.Concatenate(tbl.Column(tbl.Schema().FieldIndices("geometry")[0]).Data().Chunks(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer geomChunks.Release()
	idChunks, err := array.Concatenate(tbl.Column(tbl.Schema().FieldIndices("id")[0]).Data().Chunks(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer idChunks.Release()
	geom, ids := geomChunks.(*array.Binary), idChunks.(*array.Int64)
	row := 0
	prevMax := uint64(0)
	for g := 0; g < rdr.NumRowGroups(); g++ {
		lo, hi := uint64(math.MaxUint64), uint64(0)
		prevID := int64(math.MinInt64)
		for end := row + int(rdr.MetaData().RowGroup(g).NumRows()); row < end; row++ {
			k := uint64(math.MaxUint32)
			if !geom.IsNull(row) && !math.IsNaN(extent[0]) {
				gm, err := DecodeWKB(geom.Value(row))
				if err != nil {
					t.Fatal(err)
				}
				k = hilbertIndex(gridCell((gm.MinX+gm.MaxX)/2, extent[0], extent[2]), gridCell((gm.MinY+gm.MaxY)/2, extent[1], extent[3]))
			}
			lo, hi = min(lo, k), max(hi, k)
			if ids.Value(row) <= prevID {
				t.Fatalf("row group %d: id %d after %d, not in input order", g, ids.Value(row), prevID)
			}
			prevID = ids.Value(row)
		}
		if lo < prevMax {
			t.Fatalf("row group %d: Hilbert key %d below the previous group's %d", g, lo, prevMax)
		}
		prevMax = hi
	}
}

// TestSpillToAMissingDirectoryFails: a spill that cannot be written is an
// error, not a short file.
func TestSpillToAMissingDirectoryFails(t *testing.T) {
	opts := DefaultOptions()
	opts.SpillBytes, opts.TempDir = 1, t.TempDir()+"/missing"
	var buf bytes.Buffer
	if _, err := Write(&buf, Layer{Fields: pointFields}, &SliceSource{Features: pointFeatures(600, 1)}, opts); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want the spill's missing directory", err)
	}
}

// TestSpilledWriteSourceFails: a source failing after several spills is
// an error, and the temporary files are gone.
func TestSpilledWriteSourceFails(t *testing.T) {
	opts := DefaultOptions()
	opts.SpillBytes, opts.TempDir = 1, t.TempDir()
	var buf bytes.Buffer
	_, err := Write(&buf, Layer{}, &failingSource{n: 1000}, opts)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := os.ReadDir(opts.TempDir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// hasCovering says the file has the bbox covering column.
func hasCovering(t *testing.T, data []byte) bool {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	return rdr.MetaData().Schema.ColumnIndexByName("bbox.xmin") >= 0
}
