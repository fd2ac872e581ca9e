package geoparquet

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// The layers the size goal is measured on (docs/benchmarks.md), as the
// engine hands them to Write after GDAL read them from GeoJSON: the
// 1,000,000 points of internal/gdal's bench1MGPKG and of make bench
// (sampledata.WritePointsGeoJSON: same scatter, same three attributes),
// the 100,000 9-vertex parcels of internal/gdal's parcelsGeoJSON
// (TestMeasureThroughput's large GeoJSON) and the 100,000 quadrilaterals
// of make bench (sampledata.WritePolygonsGeoJSON). Coordinates and reals
// are printed with fixed decimals and parsed back as GDAL does, integers
// are OFTInteger (Int32), every field is nullable. Converting the real
// GeoJSON through Engine.Convert gives the same column chunks byte for
// byte (only the lineage metadata differs); TestSetsAreWhatGDALReads
// checks the points and the quadrilaterals against GDAL's own reading of
// make bench's files.

// scatter is the deterministic point scatter over Europe of feature i.
func scatter(i int) (x, y float64) {
	return -10 + 40*math.Mod(float64(i)*0.6180339887, 1), 35 + 30*math.Mod(float64(i)*0.7548776662, 1)
}

// printed is v as GeoJSON text with d decimals, read back.
func printed(v float64, d int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', d, 64), 64)
	return f
}

var pointSetLayer = Layer{Name: "points", Fields: []Field{
	{Name: "id", Type: Int32, Nullable: true}, {Name: "name", Type: String, Nullable: true}, {Name: "value", Type: Float64, Nullable: true},
}, IsCRS84: true}

// pointSet is the 1M-point set: {"id": i, "name": "p<i%1000>", "value": (i%977)/7 to 3 decimals}.
type pointSet struct {
	n, i int
	wkb  [21]byte
}

func (s *pointSet) Next() (Feature, error) {
	if s.i >= s.n {
		return Feature{}, io.EOF
	}
	i := s.i
	s.i++
	x, y := scatter(i)
	s.wkb[0] = 1
	binary.LittleEndian.PutUint32(s.wkb[1:], 1)
	binary.LittleEndian.PutUint64(s.wkb[5:], math.Float64bits(printed(x, 6)))
	binary.LittleEndian.PutUint64(s.wkb[13:], math.Float64bits(printed(y, 6)))
	return Feature{WKB: s.wkb[:], Values: []any{int32(i), "p" + strconv.Itoa(i%1000), printed(float64(i%977)/7, 3)}}, nil
}

var parcelSetLayer = Layer{Name: "parcels", Fields: []Field{
	{Name: "parcel", Type: Int32, Nullable: true}, {Name: "area", Type: Float64, Nullable: true}, {Name: "owner", Type: String, Nullable: true},
}, IsCRS84: true}

// parcelSet is the 100k-polygon set: 9-vertex rings (8 corners, closed)
// of radius 0.001° around the scatter, {"parcel": i, "area": (i%977)/7, "owner": "owner <i%1000>"}.
type parcelSet struct {
	n, i int
	wkb  [13 + 9*16]byte
}

func (s *parcelSet) Next() (Feature, error) {
	if s.i >= s.n {
		return Feature{}, io.EOF
	}
	i := s.i
	s.i++
	x, y := scatter(i)
	var ring [18]float64
	for k := 0; k <= 8; k++ {
		a := 2 * math.Pi * float64(k%8) / 8
		ring[2*k], ring[2*k+1] = x+0.001*math.Cos(a), y+0.001*math.Sin(a)
	}
	putPolygon(s.wkb[:], ring[:])
	return Feature{WKB: s.wkb[:], Values: []any{int32(i), printed(float64(i%977)/7, 3), "owner " + strconv.Itoa(i%1000)}}, nil
}

// putPolygon writes a little-endian ISO WKB polygon of one ring into wkb
// (13 + 8*len(ring) bytes): ring holds x, y pairs, each coordinate as a
// GeoJSON file prints it with 6 decimals.
func putPolygon(wkb []byte, ring []float64) {
	le := binary.LittleEndian
	wkb[0] = 1
	le.PutUint32(wkb[1:], 3)
	le.PutUint32(wkb[5:], 1)
	le.PutUint32(wkb[9:], uint32(len(ring)/2))
	for j, v := range ring {
		le.PutUint64(wkb[13+8*j:], math.Float64bits(printed(v, 6)))
	}
}

var quadSetLayer = Layer{Name: "polygons", Fields: []Field{
	{Name: "id", Type: Int32, Nullable: true}, {Name: "zone", Type: String, Nullable: true},
}, IsCRS84: true}

// quadSet is the polygon set of make bench (sampledata.WritePolygonsGeoJSON):
// skewed quadrilaterals, rings of five points a few hundred metres across,
// {"id": i, "zone": "z<i%500>"}.
type quadSet struct {
	n, i int
	wkb  [13 + 5*16]byte
}

func (s *quadSet) Next() (Feature, error) {
	if s.i >= s.n {
		return Feature{}, io.EOF
	}
	i := s.i
	s.i++
	x, y := scatter(i)
	d := 0.002 + 0.002*math.Mod(float64(i)*0.381966, 1)
	k := 0.0005 * math.Mod(float64(i)*0.2247, 1)
	ring := [10]float64{x, y, x + d, y + k, x + d + k, y + d, x + k, y + d - k, x, y}
	putPolygon(s.wkb[:], ring[:])
	return Feature{WKB: s.wkb[:], Values: []any{int32(i), "z" + strconv.Itoa(i%500)}}, nil
}

// TestSetsAreWhatGDALReads writes make bench's GeoJSON files
// (internal/sampledata, the inputs of cmd/geomigrate-bench's GeoParquet
// figures), has GDAL read them (OGR through its Python binding,
// testdata/ogr_features.py: the same library and calls as internal/gdal's
// reader, ISO WKB and typed field values) and checks that the generated
// sets hold exactly those features, field types, geometries and values
// bit for bit.
func TestSetsAreWhatGDALReads(t *testing.T) {
	if err := exec.Command(gdalPython, "-c", "from osgeo import ogr").Run(); err != nil {
		t.Skipf("%s has no GDAL binding: %v", gdalPython, err)
	}
	const n = 20_000
	for _, tc := range []struct {
		name   string
		write  func(string, int) error
		layer  Layer
		src    FeatureSource
		header string
	}{
		{"points", sampledata.WritePointsGeoJSON, pointSetLayer, &pointSet{n: n}, "id:Integer\tname:String\tvalue:Real"},
		{"quads", sampledata.WritePolygonsGeoJSON, quadSetLayer, &quadSet{n: n}, "id:Integer\tzone:String"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.name+".geojson")
			if err := tc.write(p, n); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(gdalPython, "testdata/ogr_features.py", p).Output()
			if err != nil {
				t.Fatalf("ogr_features.py: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if lines[0] != tc.header || len(lines) != n+1 {
				t.Fatalf("GDAL reads fields %q and %d features, want %q and %d", lines[0], len(lines)-1, tc.header, n)
			}
			for i, line := range lines[1:] {
				f, err := tc.src.Next()
				if err != nil {
					t.Fatal(err)
				}
				got, want := strings.Split(line, "\t"), []string{hex.EncodeToString(f.WKB)}
				for k, v := range f.Values {
					switch x := v.(type) {
					case float64:
						// Python's shortest round-trip text, read back.
						if k+1 < len(got) {
							r, err := strconv.ParseFloat(got[k+1], 64)
							if err != nil {
								t.Fatal(err)
							}
							got[k+1] = strconv.FormatFloat(r, 'g', -1, 64)
						}
						want = append(want, strconv.FormatFloat(x, 'g', -1, 64))
					default:
						want = append(want, fmt.Sprint(x))
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("feature %d: GDAL reads %q, the set holds %q", i, got, want)
				}
			}
			if _, err := tc.src.Next(); err != io.EOF {
				t.Fatalf("the set holds more than %d features", n)
			}
		})
	}
}

// gdalPython is the interpreter with GDAL's Python binding (the system's).
const gdalPython = "/usr/bin/python3"
