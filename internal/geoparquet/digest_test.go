package geoparquet

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

var digestFields = []Field{
	{Name: "i32", Type: Int32, Nullable: true}, {Name: "i64", Type: Int64, Nullable: true},
	{Name: "f", Type: Float64, Nullable: true}, {Name: "s", Type: String, Nullable: true},
	{Name: "b", Type: Bool, Nullable: true}, {Name: "d", Type: Date, Nullable: true},
	{Name: "t", Type: DateTime, Nullable: true}, {Name: "bin", Type: Binary, Nullable: true},
	{Name: "tod", Type: Time, Nullable: true}, {Name: "il", Type: Int32List, Nullable: true},
	{Name: "ll", Type: Int64List, Nullable: true}, {Name: "rl", Type: Float64List, Nullable: true},
	{Name: "sl", Type: StringList, Nullable: true}, {Name: "wall", Type: DateTime, Nullable: true},
}

func digestFeatures(n int) []Feature {
	rng := rand.New(rand.NewPCG(3, 4))
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	out := make([]Feature, n)
	for i := range out {
		x, y := rng.Float64()*100, rng.Float64()*100
		f := Feature{Values: []any{int32(i), int64(i) << 33, rng.Float64(), string(rune('a' + i%26)), i%2 == 0,
			day.AddDate(0, 0, i), day.Add(time.Duration(i) * 1001 * time.Microsecond), []byte{byte(i), 0, 1},
			time.Duration(i%86400) * time.Second,
			// Lists of 0 to 3 elements: the empty list is not the null one.
			[]int32{int32(i), 1, 2}[:i%4%3], []int64{int64(i) << 40}, []float64{rng.Float64(), -1}[:i%3%2+1], []string{"x", string(rune('a' + i%26))}[:i%3],
			WallTime{day.Add(time.Duration(i) * time.Minute)}}}
		switch i % 4 {
		case 0:
			f.WKB = wkbPointXY(x, y)
		case 1:
			f.WKB = wkbRect(x, y, x+1, y+1)
		case 2:
			f.WKB = wkbLine(x, y, x+1, y+2, x+3, y)
		}
		if i%7 == 3 {
			f.Values[i%len(f.Values)] = nil
		}
		out[i] = f
	}
	return out
}

func digestOf(t *testing.T, feats []Feature) Digest {
	t.Helper()
	types := make([]FieldType, len(digestFields))
	for i, f := range digestFields {
		types[i] = f.Type
	}
	var d Digest
	for _, f := range feats {
		if err := d.Add(f.WKB, types, f.Values); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// The file's digest equals that of the features written, whatever the
// writer did to their order (Hilbert sort, row groups, spills), and a
// change of one value or one coordinate bit changes it.
func TestFileDigest(t *testing.T) {
	t.Parallel()
	feats := digestFeatures(3000)
	want := digestOf(t, feats)
	for name, opts := range map[string]Options{
		"default":              DefaultOptions(),
		"small row groups":     {RowGroupRows: 128, SpatialOrder: true, Covering: true},
		"spilled":              {RowGroupRows: 500, SpatialOrder: true, Covering: true, SpillBytes: 20 << 10, TempDir: t.TempDir()},
		"input order, no bbox": {RowGroupRows: 1000},
	} {
		t.Run(name, func(t *testing.T) {
			data, _ := writeBytes(t, Layer{Fields: digestFields}, feats, opts)
			info, err := ReadInfo(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			// The footer is enough: the digest's read counts the nulls.
			footer, err := ReadFooterInfo(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			got, nulls, err := FileDigest(bytes.NewReader(data), int64(len(data)), footer)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) || got.N != 3000 {
				t.Errorf("file digest %s (%d), want %s (%d)", got, got.N, want, want.N)
			}
			if nulls != 750 || nulls != info.NullGeometries {
				t.Errorf("FileDigest counted %d null geometries, want 750 (ReadInfo: %d)", nulls, info.NullGeometries)
			}
		})
	}
	rev := append([]Feature(nil), feats...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if !digestOf(t, rev).Equal(want) {
		t.Error("the digest depends on order")
	}
	for name, alter := range map[string]func([]Feature){
		"value":      func(f []Feature) { f[20].Values[2] = f[20].Values[2].(float64) + 1e-12 },
		"null":       func(f []Feature) { f[11].Values[0] = nil },
		"coordinate": func(f []Feature) { f[12].WKB = append([]byte(nil), f[12].WKB...); f[12].WKB[len(f[12].WKB)-1] ^= 1 },
		"duplicate":  func(f []Feature) { f[13] = f[14] },
		"list item":  func(f []Feature) { f[21].Values[10] = []int64{1} },
		"list null":  func(f []Feature) { f[22].Values[11] = nil },
		"time":       func(f []Feature) { f[23].Values[8] = time.Duration(0) },
	} {
		alt := append([]Feature(nil), feats...)
		for i := range alt {
			alt[i].Values = append([]any(nil), alt[i].Values...)
		}
		alter(alt)
		if digestOf(t, alt).Equal(want) {
			t.Errorf("%s changed, digest equal", name)
		}
	}
}

func TestAppendCanonical(t *testing.T) {
	t.Parallel()
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a, b any
		ta   FieldType
		tb   FieldType
		same bool
	}{
		{"int32 and int64 of one value", int32(7), int64(7), Int32, Int64, true},
		{"a date and its midnight date-time", day.Add(5 * time.Hour), day, Date, DateTime, true},
		{"null and zero", nil, int64(0), Int64, Int64, false},
		{"empty text and null", "", nil, String, String, false},
		{"text and its bytes", "ab", []byte("ab"), String, Binary, true},
	}
	for _, c := range cases {
		a, err1 := AppendCanonical(nil, c.ta, c.a)
		b, err2 := AppendCanonical(nil, c.tb, c.b)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", c.name, err1, err2)
		}
		if bytes.Equal(a, b) != c.same {
			t.Errorf("%s: %x vs %x, want same=%v", c.name, a, b, c.same)
		}
	}
	if _, err := AppendCanonical(nil, Int64, "7"); err == nil {
		t.Error("text as an integer accepted")
	}
}
