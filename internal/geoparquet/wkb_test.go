package geoparquet

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// wkbBuf builds little-endian ISO WKB for tests.
type wkbBuf struct {
	b     []byte
	order binary.AppendByteOrder
}

func newWKB() *wkbBuf { return &wkbBuf{order: binary.LittleEndian} }

func (w *wkbBuf) header(code uint32) *wkbBuf {
	if w.order == binary.BigEndian {
		w.b = append(w.b, 0)
	} else {
		w.b = append(w.b, 1)
	}
	w.b = w.order.AppendUint32(w.b, code)
	return w
}

func (w *wkbBuf) u32(n uint32) *wkbBuf { w.b = w.order.AppendUint32(w.b, n); return w }

func (w *wkbBuf) f(vs ...float64) *wkbBuf {
	for _, v := range vs {
		w.b = w.order.AppendUint64(w.b, math.Float64bits(v))
	}
	return w
}

func (w *wkbBuf) raw(b []byte) *wkbBuf { w.b = append(w.b, b...); return w }

func wkbPointXY(x, y float64) []byte { return newWKB().header(1).f(x, y).b }

func wkbPointXYZ(x, y, z float64) []byte { return newWKB().header(1001).f(x, y, z).b }

func wkbLine(coords ...float64) []byte {
	return newWKB().header(2).u32(uint32(len(coords) / 2)).f(coords...).b
}

// wkbRect is a polygon for the rectangle [x0,x1]×[y0,y1].
func wkbRect(x0, y0, x1, y1 float64) []byte {
	return newWKB().header(3).u32(1).u32(5).f(x0, y0, x1, y0, x1, y1, x0, y1, x0, y0).b
}

func wkbMultiRect(rects ...[4]float64) []byte {
	w := newWKB().header(6).u32(uint32(len(rects)))
	for _, r := range rects {
		w.raw(wkbRect(r[0], r[1], r[2], r[3]))
	}
	return w.b
}

func TestDecodeWKB(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	deep := newWKB()
	for i := 0; i < 40; i++ {
		deep.header(7).u32(1)
	}
	deep.raw(wkbPointXY(1, 1))
	be := &wkbBuf{order: binary.BigEndian}
	be.header(2).u32(2).f(1, 2, 3, 4)

	tests := []struct {
		name    string
		wkb     []byte
		typ     string
		bbox    [4]float64
		empty   bool
		wantErr string
	}{
		{name: "point", wkb: wkbPointXY(1, 2), typ: "Point", bbox: [4]float64{1, 2, 1, 2}},
		{name: "point Z", wkb: wkbPointXYZ(1, 2, 3), typ: "Point Z", bbox: [4]float64{1, 2, 1, 2}},
		{name: "point M", wkb: newWKB().header(2001).f(1, 2, 9).b, typ: "Point", bbox: [4]float64{1, 2, 1, 2}},
		{name: "point ZM", wkb: newWKB().header(3001).f(1, 2, 3, 9).b, typ: "Point Z", bbox: [4]float64{1, 2, 1, 2}},
		{name: "empty point", wkb: wkbPointXY(nan, nan), typ: "Point", empty: true},
		{name: "linestring", wkb: wkbLine(0, 0, 10, -5), typ: "LineString", bbox: [4]float64{0, -5, 10, 0}},
		{name: "big-endian linestring", wkb: be.b, typ: "LineString", bbox: [4]float64{1, 2, 3, 4}},
		{name: "empty linestring", wkb: wkbLine(), typ: "LineString", empty: true},
		{name: "polygon with hole", wkb: newWKB().header(3).u32(2).u32(4).f(0, 0, 4, 0, 0, 4, 0, 0).u32(4).f(1, 1, 2, 1, 1, 2, 1, 1).b, typ: "Polygon", bbox: [4]float64{0, 0, 4, 4}},
		{name: "multipoint Z", wkb: newWKB().header(1004).u32(2).raw(wkbPointXYZ(1, 1, 1)).raw(wkbPointXYZ(3, -1, 0)).b, typ: "MultiPoint Z", bbox: [4]float64{1, -1, 3, 1}},
		{name: "multilinestring", wkb: newWKB().header(5).u32(1).raw(wkbLine(5, 5, 6, 7)).b, typ: "MultiLineString", bbox: [4]float64{5, 5, 6, 7}},
		{name: "multipolygon", wkb: wkbMultiRect([4]float64{0, 0, 1, 1}, [4]float64{5, 5, 6, 6}), typ: "MultiPolygon", bbox: [4]float64{0, 0, 6, 6}},
		{name: "geometrycollection", wkb: newWKB().header(7).u32(2).raw(wkbPointXY(-1, -1)).raw(wkbRect(0, 0, 2, 2)).b, typ: "GeometryCollection", bbox: [4]float64{-1, -1, 2, 2}},
		{name: "empty collection", wkb: newWKB().header(7).u32(0).b, typ: "GeometryCollection", empty: true},

		{name: "zero bytes", wkb: nil, wantErr: "truncated WKB header"},
		{name: "truncated point", wkb: wkbPointXY(1, 2)[:12], wantErr: "truncated point"},
		{name: "trailing bytes", wkb: append(wkbPointXY(1, 2), 0), wantErr: "trailing bytes"},
		{name: "bad byte order", wkb: append([]byte{7}, wkbPointXY(1, 2)[1:]...), wantErr: "byte-order"},
		{name: "unknown type", wkb: newWKB().header(17).f(1, 2).b, wantErr: "unknown WKB geometry type"},
		{name: "EWKB Z flag", wkb: newWKB().header(0x80000001).f(1, 2, 3).b, wantErr: "EWKB"},
		{name: "EWKB SRID", wkb: newWKB().header(0x20000001).u32(4326).f(1, 2).b, wantErr: "EWKB"},
		{name: "huge point count", wkb: newWKB().header(2).u32(0xFFFFFFF0).f(1, 2).b, wantErr: "exceeds"},
		{name: "huge ring count", wkb: newWKB().header(3).u32(1 << 30).b, wantErr: "exceeds"},
		{name: "wrong member type", wkb: newWKB().header(6).u32(1).raw(wkbPointXY(1, 2)).b, wantErr: "is a Point, expected a Polygon"},
		{name: "mixed dimensions", wkb: newWKB().header(4).u32(1).raw(wkbPointXYZ(1, 2, 3)).b, wantErr: "dimensions"},
		{name: "infinite coordinate", wkb: wkbLine(0, 0, math.Inf(1), 0), wantErr: "non-finite"},
		{name: "NaN in linestring", wkb: wkbLine(0, 0, nan, 0), wantErr: "non-finite"},
		{name: "deep nesting", wkb: deep.b, wantErr: "nesting"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := DecodeWKB(tc.wkb)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.TypeName() != tc.typ || g.Empty != tc.empty {
				t.Fatalf("got %s empty=%v, want %s empty=%v", g.TypeName(), g.Empty, tc.typ, tc.empty)
			}
			if tc.empty {
				if !math.IsNaN(g.MinX) {
					t.Fatalf("empty geometry bbox %v, want NaN", g)
				}
				return
			}
			if got := [4]float64{g.MinX, g.MinY, g.MaxX, g.MaxY}; got != tc.bbox {
				t.Fatalf("bbox %v, want %v", got, tc.bbox)
			}
		})
	}
}

func TestHilbertIndexIsABijectionWithUnitSteps(t *testing.T) {
	t.Parallel()
	// On the 2^16 grid, look at the first 4096 curve positions: they must
	// fill the 64×64 corner square, each step moving to a 4-neighbour.
	pos := map[uint64][2]uint32{}
	for x := uint32(0); x < 64; x++ {
		for y := uint32(0); y < 64; y++ {
			d := hilbertIndex(x, y)
			if _, dup := pos[d]; dup {
				t.Fatalf("index %d used twice", d)
			}
			pos[d] = [2]uint32{x, y}
		}
	}
	for d := uint64(0); d < 4096; d++ {
		if _, ok := pos[d]; !ok {
			t.Fatalf("index %d not in the corner square", d)
		}
		if d == 0 {
			continue
		}
		a, b := pos[d-1], pos[d]
		dist := absDiff(a[0], b[0]) + absDiff(a[1], b[1])
		if dist != 1 {
			t.Fatalf("step %d→%d jumps from %v to %v", d-1, d, a, b)
		}
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
