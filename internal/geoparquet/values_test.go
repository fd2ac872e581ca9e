package geoparquet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// valueFields are the types beyond the scalar ones: time of day, DateTime
// columns with zoned and zone-less values, and every list.
var valueFields = []Field{
	{Name: "id", Type: Int64}, {Name: "tm", Type: Time, Nullable: true},
	{Name: "at", Type: DateTime, Nullable: true}, {Name: "wall", Type: DateTime, Nullable: true},
	{Name: "mixed", Type: DateTime, Nullable: true},
	{Name: "il", Type: Int32List, Nullable: true}, {Name: "i64l", Type: Int64List, Nullable: true},
	{Name: "fl", Type: Float64List, Nullable: true}, {Name: "sl", Type: StringList, Nullable: true},
}

// valueRow is row i of valueFields: every field null on some rows, lists
// empty on others; "at" has offsets of +07:00, -03:30 and UTC, "wall" no
// zone, "mixed" both.
func valueRow(i int) []any {
	base := time.Date(2024, 3, 1, 10, 0, i%60, (i%1000)*int(time.Millisecond), time.UTC)
	zones := []*time.Location{time.FixedZone("", 7*3600), time.FixedZone("", -(3*3600 + 1800)), time.UTC}
	at := time.Date(base.Year(), base.Month(), base.Day(), base.Hour(), base.Minute(), base.Second(), base.Nanosecond(), zones[i%3])
	var mixed any = at
	if i%2 == 0 {
		mixed = WallTime{base}
	}
	n := i % 4
	il, i64l, fl, sl := make([]int32, n), make([]int64, n), make([]float64, n), make([]string, n)
	for k := range n {
		il[k], i64l[k], fl[k], sl[k] = int32(i*10+k), int64(i)<<40+int64(k), float64(i)+float64(k)/4, fmt.Sprintf("s%d,(é)%d", i, k)
	}
	v := []any{int64(i), time.Duration(i%86400)*time.Second + time.Duration(i%1000)*time.Millisecond, at, WallTime{base}, mixed, il, i64l, fl, sl}
	for k := 1; k < len(v); k++ {
		if i%(k+3) == 1 {
			v[k] = nil
		}
	}
	return v
}

// wantText is what both outside readers print for row value v of field f
// (values.mjs: JSON of hyparquet's values; duckdb-values.mjs: DuckDB's
// text), as JSON, and the DuckDB type of the column.
func wantText(f Field, written FieldType, v any) (hyp, duck any) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case int64:
		return fmt.Sprint(x), fmt.Sprint(x)
	case time.Duration:
		ms := x.Milliseconds()
		d := fmt.Sprintf("%02d:%02d:%02d", ms/3600000, ms/60000%60, ms/1000%60)
		if ms%1000 != 0 {
			d += fmt.Sprintf(".%03d", ms%1000)
			for d[len(d)-1] == '0' {
				d = d[:len(d)-1]
			}
		}
		return float64(ms), d
	case time.Time, WallTime:
		var tm time.Time
		if w, ok := x.(WallTime); ok {
			tm = w.Wall // a wall reading taken as UTC in a mixed column
		} else {
			tm = x.(time.Time).UTC()
		}
		d := tm.Format("2006-01-02 15:04:05.999")
		if written == DateTime {
			d += "+00"
		}
		return tm.Format("2006-01-02T15:04:05.000Z"), d
	case []int32:
		h, d := []any{}, []any{}
		for _, e := range x {
			h, d = append(h, float64(e)), append(d, fmt.Sprint(e))
		}
		return h, d
	case []int64:
		h, d := []any{}, []any{}
		for _, e := range x {
			h, d = append(h, fmt.Sprint(e)), append(d, fmt.Sprint(e))
		}
		return h, d
	case []float64:
		h, d := []any{}, []any{}
		for _, e := range x {
			s := fmt.Sprint(e)
			if e == float64(int64(e)) {
				s += ".0"
			}
			h, d = append(h, e), append(d, s)
		}
		return h, d
	case []string:
		h := []any{}
		for _, e := range x {
			h = append(h, e)
		}
		return h, h
	}
	panic(fmt.Sprintf("no text for %T", v))
}

var duckTypes = map[FieldType]string{
	Int64: "BIGINT", Time: "TIME", DateTime: "TIMESTAMP WITH TIME ZONE", LocalDateTime: "TIMESTAMP",
	Int32List: "INTEGER[]", Int64List: "BIGINT[]", Float64List: "DOUBLE[]", StringList: "VARCHAR[]",
}

// outside runs one judge script printing a column's values.
func outside(t *testing.T, script, module, path, column string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("judge: node not on PATH; install Node.js 20+ and run `make hyparquet`")
	}
	if _, err := os.Stat(filepath.Join(judgeDir, "node_modules", module)); err != nil {
		t.Skipf("judge: %s not installed; run `make hyparquet`", module)
	}
	var so, se bytes.Buffer
	cmd := exec.Command(node, filepath.Join(judgeDir, script), path, column)
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, column, err, se.String())
	}
	return so.Bytes()
}

// TestValuesReadByOutsideReaders writes the Time, DateTime and list
// columns, with and without geometry, and has hyparquet and DuckDB read
// every value back: lists as lists (three-level LIST), times of day as
// TIME, zoned DateTimes as the same instants in a UTC timestamp column,
// zone-less ones as the same readings in a timestamp without zone, and a
// table without geometry as plain Parquet (no "geo").
func TestValuesReadByOutsideReaders(t *testing.T) {
	t.Parallel()
	const n = 120
	feats := make([]Feature, n)
	for i := range feats {
		feats[i] = Feature{WKB: wkbPointXY(float64(i), float64(-i)), Values: valueRow(i)}
	}
	plain := make([]Feature, n)
	for i := range plain {
		plain[i] = Feature{Values: valueRow(i)}
	}
	for _, tc := range []struct {
		name  string
		layer Layer
		feats []Feature
	}{
		{"with geometry", Layer{Fields: valueFields, IsCRS84: true}, feats},
		{"no geometry", Layer{Fields: valueFields, NoGeometry: true}, plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, st := writeBytes(t, tc.layer, tc.feats, Options{RowGroupRows: 50, SpatialOrder: true, Covering: true, Lineage: `{"layer":"x"}`})
			wantDT := []DateTimeStats{{Field: "at", Written: DateTime}, {Field: "wall", Written: LocalDateTime}, {Field: "mixed", Written: DateTime}}
			for _, f := range tc.feats {
				for k, v := range f.Values[2:5] {
					switch x := v.(type) {
					case WallTime:
						wantDT[k].Wall++
					case time.Time:
						if _, off := x.Zone(); off != 0 {
							wantDT[k].Offset++
						} else {
							wantDT[k].UTC++
						}
					}
				}
			}
			if !reflect.DeepEqual(st.DateTimes, wantDT) {
				t.Errorf("DateTimes %+v, want %+v", st.DateTimes, wantDT)
			}
			written := map[string]FieldType{}
			for _, d := range st.DateTimes {
				written[d.Field] = d.Written
			}
			path := filepath.Join(t.TempDir(), "v.parquet")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			read := ReadInfo
			if tc.layer.NoGeometry {
				read = ReadTableInfo
			}
			info, err := read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if _, geo := info.KeyValue["geo"]; geo == tc.layer.NoGeometry || info.KeyValue[LineageKey] != `{"layer":"x"}` || info.Rows != n {
				t.Fatalf("info %+v", info)
			}
			// Rows are matched by id (the Hilbert order moves them).
			ids := idsOf(t, path)
			for k, f := range valueFields {
				as := f.Type
				if w, ok := written[f.Name]; ok {
					as = w
				}
				if got := info.Fields[k]; got.Name != f.Name || got.Type != as {
					t.Errorf("ReadInfo field %d: %+v, want %s %s", k, got, f.Name, as)
				}
				var hyp []any
				var duck struct {
					Type   string `json:"type"`
					Values []any  `json:"values"`
				}
				if err := json.Unmarshal(outside(t, "values.mjs", "hyparquet", path, f.Name), &hyp); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(outside(t, "duckdb-values.mjs", "@duckdb/node-api", path, f.Name), &duck); err != nil {
					t.Fatal(err)
				}
				if duck.Type != duckTypes[as] || len(hyp) != n || len(duck.Values) != n {
					t.Fatalf("column %s: DuckDB type %s (want %s), %d and %d values", f.Name, duck.Type, duckTypes[as], len(hyp), len(duck.Values))
				}
				for r := range n {
					wh, wd := wantText(f, as, tc.feats[ids[r]].Values[k])
					if !reflect.DeepEqual(hyp[r], wh) || !reflect.DeepEqual(duck.Values[r], wd) {
						t.Fatalf("column %s row id %d: hyparquet %#v, DuckDB %#v; want %#v, %#v", f.Name, ids[r], hyp[r], duck.Values[r], wh, wd)
					}
				}
			}
		})
	}
}

// idsOf is the "id" column as hyparquet reads it, in file order.
func idsOf(t *testing.T, path string) []int {
	t.Helper()
	var ids []string
	if err := json.Unmarshal(outside(t, "values.mjs", "hyparquet", path, "id"), &ids); err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(ids))
	for i, s := range ids {
		fmt.Sscan(s, &out[i])
	}
	return out
}
