package geoparquet

import (
	"encoding/binary"
	"fmt"
	"math"
)

// WKB geometry type codes (ISO base codes).
const (
	wkbPoint              = 1
	wkbLineString         = 2
	wkbPolygon            = 3
	wkbMultiPoint         = 4
	wkbMultiLineString    = 5
	wkbMultiPolygon       = 6
	wkbGeometryCollection = 7
)

var wkbBaseNames = [...]string{"", "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon", "GeometryCollection"}

// maxWKBDepth bounds GeometryCollection nesting so hostile input cannot
// exhaust the stack.
const maxWKBDepth = 32

// GeomInfo is what DecodeWKB learns about one geometry.
type GeomInfo struct {
	Type  int  // 1..7 (Point .. GeometryCollection)
	Z, M  bool // coordinate dimensions
	Empty bool // no coordinates at all (POINT EMPTY is encoded as NaN NaN)
	// Bounding box of x/y; NaN when Empty.
	MinX, MinY, MaxX, MaxY float64
}

// TypeName is the GeoParquet 1.1 geometry_types name: the base name with a
// " Z" suffix when the geometry has Z. GeoParquet 1.1 has no names for M, so
// M is ignored ("Point M" → "Point", "Point ZM" → "Point Z").
func (g GeomInfo) TypeName() string {
	if g.Type < 1 || g.Type > 7 {
		return ""
	}
	if g.Z {
		return wkbBaseNames[g.Type] + " Z"
	}
	return wkbBaseNames[g.Type]
}

// DecodeWKB parses ISO WKB (either byte order; 2D, Z, M and ZM variants via
// the +1000/+2000/+3000 codes) and returns its type and bounding box. EWKB
// (high-bit flags, SRID) is refused, as are truncated input, trailing bytes,
// counts larger than the remaining input, non-finite x/y coordinates, Multi*
// members of the wrong type and members whose dimensions differ from their
// parent's.
func DecodeWKB(b []byte) (GeomInfo, error) {
	p := wkbParser{b: b, minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1)}
	typ, z, m, err := p.geometry(0, 0, -1)
	if err != nil {
		return GeomInfo{}, err
	}
	if p.pos != len(b) {
		return GeomInfo{}, fmt.Errorf("%d trailing bytes after the geometry", len(b)-p.pos)
	}
	g := GeomInfo{Type: typ, Z: z, M: m}
	if p.minX > p.maxX {
		g.Empty = true
		g.MinX, g.MinY, g.MaxX, g.MaxY = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	} else {
		g.MinX, g.MinY, g.MaxX, g.MaxY = p.minX, p.minY, p.maxX, p.maxY
	}
	return g, nil
}

type wkbParser struct {
	b                      []byte
	pos                    int
	minX, minY, maxX, maxY float64
}

func (p *wkbParser) remaining() int { return len(p.b) - p.pos }

func (p *wkbParser) header() (order binary.ByteOrder, typ int, z, m bool, err error) {
	if p.remaining() < 5 {
		return nil, 0, false, false, fmt.Errorf("truncated WKB header at byte %d", p.pos)
	}
	switch p.b[p.pos] {
	case 0:
		order = binary.BigEndian
	case 1:
		order = binary.LittleEndian
	default:
		return nil, 0, false, false, fmt.Errorf("bad byte-order marker %d at byte %d", p.b[p.pos], p.pos)
	}
	code := order.Uint32(p.b[p.pos+1:])
	if code&0xE0000000 != 0 {
		return nil, 0, false, false, fmt.Errorf("geometry type 0x%08x at byte %d uses EWKB/extended flags; GeoParquet requires ISO WKB", code, p.pos)
	}
	dim, base := code/1000, code%1000
	if base < 1 || base > 7 || dim > 3 {
		return nil, 0, false, false, fmt.Errorf("unknown WKB geometry type %d at byte %d", code, p.pos)
	}
	p.pos += 5
	return order, int(base), dim == 1 || dim == 3, dim == 2 || dim == 3, nil
}

func (p *wkbParser) count(order binary.ByteOrder, minBytesEach int, what string) (int, error) {
	if p.remaining() < 4 {
		return 0, fmt.Errorf("truncated %s count at byte %d", what, p.pos)
	}
	n := int(order.Uint32(p.b[p.pos:]))
	p.pos += 4
	if n < 0 || (minBytesEach > 0 && n > p.remaining()/minBytesEach) {
		return 0, fmt.Errorf("%s count %d exceeds the %d remaining bytes", what, n, p.remaining())
	}
	return n, nil
}

func (p *wkbParser) coords(order binary.ByteOrder, n, dims int, point bool) error {
	for i := 0; i < n; i++ {
		x := math.Float64frombits(order.Uint64(p.b[p.pos:]))
		y := math.Float64frombits(order.Uint64(p.b[p.pos+8:]))
		p.pos += 8 * dims
		if point && math.IsNaN(x) && math.IsNaN(y) {
			continue // POINT EMPTY
		}
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			return fmt.Errorf("non-finite coordinate (%v %v) before byte %d", x, y, p.pos)
		}
		p.minX, p.maxX = min(p.minX, x), max(p.maxX, x)
		p.minY, p.maxY = min(p.minY, y), max(p.maxY, y)
	}
	return nil
}

// geometry parses one geometry. want is the required base type (0: any);
// wantDims the required dimension code (z*1+m*2) or -1 for any.
func (p *wkbParser) geometry(depth, want, wantDims int) (typ int, z, m bool, err error) {
	if depth > maxWKBDepth {
		return 0, false, false, fmt.Errorf("geometry nesting deeper than %d", maxWKBDepth)
	}
	start := p.pos
	order, typ, z, m, err := p.header()
	if err != nil {
		return 0, false, false, err
	}
	if want != 0 && typ != want {
		return 0, false, false, fmt.Errorf("member at byte %d is a %s, expected a %s", start, wkbBaseNames[typ], wkbBaseNames[want])
	}
	dimCode := b2i(z) + 2*b2i(m)
	if wantDims >= 0 && dimCode != wantDims {
		return 0, false, false, fmt.Errorf("member at byte %d has different coordinate dimensions from its collection", start)
	}
	dims := 2 + b2i(z) + b2i(m)
	switch typ {
	case wkbPoint:
		if p.remaining() < 8*dims {
			return 0, false, false, fmt.Errorf("truncated point at byte %d", start)
		}
		err = p.coords(order, 1, dims, true)
	case wkbLineString:
		var n int
		if n, err = p.count(order, 8*dims, "point"); err == nil {
			err = p.coords(order, n, dims, false)
		}
	case wkbPolygon:
		var rings int
		if rings, err = p.count(order, 4, "ring"); err == nil {
			for r := 0; r < rings && err == nil; r++ {
				var n int
				if n, err = p.count(order, 8*dims, "point"); err == nil {
					err = p.coords(order, n, dims, false)
				}
			}
		}
	default:
		var n int
		if n, err = p.count(order, 5, "member"); err == nil {
			memberType := 0
			if typ != wkbGeometryCollection {
				memberType = typ - 3
			}
			for i := 0; i < n && err == nil; i++ {
				_, _, _, err = p.geometry(depth+1, memberType, dimCode)
			}
		}
	}
	if err != nil {
		return 0, false, false, err
	}
	return typ, z, m, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// validGeometryTypeName reports whether s is a GeoParquet 1.1 geometry_types
// entry: (GeometryCollection|(Multi)?(Point|LineString|Polygon))( Z)?
func validGeometryTypeName(s string) bool {
	if len(s) > 2 && s[len(s)-2:] == " Z" {
		s = s[:len(s)-2]
	}
	for _, n := range wkbBaseNames[1:] {
		if s == n {
			return true
		}
	}
	return false
}
