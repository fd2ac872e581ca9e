package geoparquet

import (
	"testing"
)

// FuzzDecodeWKB: any bytes give a geometry or an error, never a panic; a
// decoded geometry has a known type and, unless empty, an ordered bounding
// box. Seeds in testdata/fuzz/FuzzDecodeWKB/.
//
//	go test ./internal/geoparquet -run '^$' -fuzz '^FuzzDecodeWKB$' -fuzztime 60s
func FuzzDecodeWKB(f *testing.F) {
	f.Add(wkbPointXY(1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeWKB(b)
		if err != nil {
			return
		}
		if g.TypeName() == "" {
			t.Fatalf("decoded type %d has no name", g.Type)
		}
		if !g.Empty && (g.MinX > g.MaxX || g.MinY > g.MaxY) {
			t.Fatalf("bounding box out of order: %+v", g)
		}
	})
}
