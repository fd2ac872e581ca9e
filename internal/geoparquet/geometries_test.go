package geoparquet

import (
	"bytes"
	"errors"
	"testing"
)

func TestEachGeometry(t *testing.T) {
	t.Parallel()
	feats := []Feature{
		{WKB: wkbPointXY(1, 2), Values: []any{int64(0), "a"}},
		{WKB: nil, Values: []any{int64(1), "null geometry"}},
		{WKB: wkbRect(0, 0, 3, 4), Values: []any{int64(2), nil}},
	}
	tests := []struct {
		name    string
		layer   Layer
		opts    Options
		wantCRS bool
	}{
		{"CRS84, spatially ordered", Layer{Fields: pointFields}, DefaultOptions(), false},
		{"projected, file order", Layer{Fields: pointFields, CRSProjJSON: []byte(utm33)}, Options{RowGroupRows: 1, ZSTDLevel: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, _ := writeBytes(t, tt.layer, feats, tt.opts)
			var got [][]byte
			crs, err := EachGeometry(bytes.NewReader(data), int64(len(data)), func(wkb []byte) error {
				got = append(got, bytes.Clone(wkb))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if (crs != nil) != tt.wantCRS || (tt.wantCRS && !bytes.Contains(crs, []byte("ProjectedCRS"))) {
				t.Errorf("crs %s", crs)
			}
			if len(got) != 2 {
				t.Fatalf("%d geometries, want 2 (the null one left out)", len(got))
			}
			seen := map[string]bool{}
			for _, g := range got {
				seen[string(g)] = true
			}
			if !seen[string(wkbPointXY(1, 2))] || !seen[string(wkbRect(0, 0, 3, 4))] {
				t.Errorf("geometries not read back as written")
			}
		})
	}
	data, _ := writeBytes(t, Layer{Fields: pointFields}, feats, DefaultOptions())
	stop := errors.New("stop")
	if _, err := EachGeometry(bytes.NewReader(data), int64(len(data)), func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("err %v, want the callback's", err)
	}
	if _, err := EachGeometry(bytes.NewReader([]byte("PAR1 not parquet PAR1")), 21, func([]byte) error { return nil }); err == nil {
		t.Error("not a Parquet file: no error")
	}
}
