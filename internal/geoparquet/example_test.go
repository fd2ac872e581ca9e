package geoparquet_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// points yields one WKB point per coordinate pair, with its name.
type points struct {
	xy    [][2]float64
	names []string
}

func (p *points) Next() (geoparquet.Feature, error) {
	if len(p.xy) == 0 {
		return geoparquet.Feature{}, io.EOF
	}
	wkb := make([]byte, 21)
	wkb[0] = 1 // little-endian
	binary.LittleEndian.PutUint32(wkb[1:], 1)
	binary.LittleEndian.PutUint64(wkb[5:], math.Float64bits(p.xy[0][0]))
	binary.LittleEndian.PutUint64(wkb[13:], math.Float64bits(p.xy[0][1]))
	f := geoparquet.Feature{WKB: wkb, Values: []any{p.names[0]}}
	p.xy, p.names = p.xy[1:], p.names[1:]
	return f, nil
}

// Write streams features into a GeoParquet 1.1 file; Validate checks one
// against the specification, as a reader would.
func ExampleWrite() {
	layer := geoparquet.Layer{Name: "stations", IsCRS84: true,
		Fields: []geoparquet.Field{{Name: "name", Type: geoparquet.String, Nullable: true}}}
	src := &points{xy: [][2]float64{{6.1, 45.9}, {7.4, 46.9}}, names: []string{"Annecy", "Bern"}}
	var buf bytes.Buffer
	if _, err := geoparquet.Write(&buf, layer, src, geoparquet.DefaultOptions()); err != nil {
		fmt.Println(err)
		return
	}
	rep, err := geoparquet.Validate(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.OK(), rep.Version, rep.Rows, rep.GeometryTypes, rep.BBox)
	// Output:
	// true 1.1.0 2 [Point] [6.1 45.9 7.4 46.9]
}
