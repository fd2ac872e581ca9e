package hostile

// Vector size bombs: valid files whose feature or vertex counts would take
// more memory to convert than a budget allows. Unlike the TIFFs they cannot
// lie in a header (GDAL takes a Shapefile's record count from the sizes of
// its .shx and .dbf files, not from their headers), so they are written in
// full, streamed to disk by the tests that use them.

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// prjWGS84 is the .prj of a Shapefile in WGS 84 (ESRI WKT).
const prjWGS84 = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`

// ring returns vertex k of a closed ring of n vertices: a circle of radius
// 5° around (10, 50), clockwise (a Shapefile outer ring), k = n closing it.
func ring(k, n int) (x, y float64) {
	a := -2 * math.Pi * float64(k%n) / float64(n)
	return 10 + 5*math.Cos(a), 50 + 5*math.Sin(a)
}

// WritePolygonGeoJSON writes a GeoJSON FeatureCollection of one polygon
// with the given number of vertices (about 22 bytes of text each). GDAL
// parses a GeoJSON feature whole with json-c, at about 24 times its text:
// 8,000,000 vertices (~175 MB) would take ~4 GB.
func WritePolygonGeoJSON(w io.Writer, vertices int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":1},"geometry":{"type":"Polygon","coordinates":[[`)
	var b []byte
	for k := 0; k <= vertices; k++ {
		x, y := ring(k, vertices)
		b = append(b[:0], '[')
		b = strconv.AppendFloat(b, x, 'f', 6, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, y, 'f', 6, 64)
		b = append(b, ']')
		if k < vertices {
			b = append(b, ',')
		}
		bw.Write(b)
	}
	bw.WriteString("]]}}]}\n")
	return bw.Flush()
}

// WriteTextGeoJSON writes a GeoJSON FeatureCollection of points, each with
// a text attribute of textBytes bytes: a layer whose geometries are tiny
// but whose attributes are not.
func WriteTextGeoJSON(w io.Writer, features, textBytes int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(`{"type":"FeatureCollection","features":[`)
	text := strings.Repeat("x", textBytes)
	for i := 0; i < features; i++ {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, `{"type":"Feature","properties":{"id":%d,"note":"%s"},"geometry":{"type":"Point","coordinates":[%d.5,%d.5]}}`,
			i, text, i%170-85, i%80)
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// WritePointShapefile writes stem.shp/.shx/.dbf/.prj in dir: n points with
// an integer id (36 bytes of .shp and .shx and 11 of .dbf a point).
func WritePointShapefile(dir, stem string, n int) error {
	return writeShapefile(toDir(dir), stem, 1, n, pointContent, [4]float64{-180, -85, 180, 85}, writePoint)
}

// pointContent is a point record: shape type, x, y.
const pointContent = 20

// writePoint writes point record i: a grid of 0.01° over the world.
func writePoint(w *bufio.Writer, i int) {
	le := binary.LittleEndian
	var b [pointContent]byte
	le.PutUint32(b[0:], 1)
	le.PutUint64(b[4:], math.Float64bits(float64(i%36000)/100-180))
	le.PutUint64(b[12:], math.Float64bits(float64(i/36000%17000)/100-85))
	w.Write(b[:])
}

// WritePolygonShapefile writes stem.shp/.shx/.dbf/.prj in dir: one polygon
// of the given number of vertices (16 bytes of .shp and of WKB each).
func WritePolygonShapefile(dir, stem string, vertices int) error {
	pts := vertices + 1
	content := 4 + 32 + 4 + 4 + 4 + 16*pts
	bbox := [4]float64{5, 45, 15, 55}
	return writeShapefile(toDir(dir), stem, 5, 1, content, bbox, func(w *bufio.Writer, _ int) {
		le := binary.LittleEndian
		var b [48]byte
		le.PutUint32(b[0:], 5)
		for i, v := range bbox {
			le.PutUint64(b[4+8*i:], math.Float64bits(v))
		}
		le.PutUint32(b[36:], 1)           // parts
		le.PutUint32(b[40:], uint32(pts)) // points
		le.PutUint32(b[44:], 0)           // the part starts at point 0
		w.Write(b[:])
		var p [16]byte
		for k := 0; k < pts; k++ {
			x, y := ring(k, vertices)
			le.PutUint64(p[0:], math.Float64bits(x))
			le.PutUint64(p[8:], math.Float64bits(y))
			w.Write(p[:])
		}
	})
}

// WritePointShapefileZip writes a zip archive (as uploaded: a zipped
// Shapefile) of stem.shp/.shx/.dbf/.prj holding n points (47 bytes of
// Shapefile each). They inflate about 6 times, well under any ratio limit
// for zip bombs: 16,000,000 points are ~125 MB of zip and 750 MB of
// Shapefile, and a writer that held every row (~230 bytes a point) would
// need well over 3 GiB.
func WritePointShapefileZip(w io.Writer, stem string, n int) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestSpeed)
	})
	modified := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // identical archives
	err := writeShapefile(func(name string, write func(*bufio.Writer)) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: modified})
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(fw, 1<<20)
		write(bw)
		return bw.Flush()
	}, stem, 1, n, pointContent, [4]float64{0, 0, 15, 15}, func(w *bufio.Writer, i int) {
		// A 16 x 16 grid of 1°, repeated: records that deflate well.
		le := binary.LittleEndian
		var b [pointContent]byte
		le.PutUint32(b[0:], 1)
		le.PutUint64(b[4:], math.Float64bits(float64(i%16)))
		le.PutUint64(b[12:], math.Float64bits(float64(i/16%16)))
		w.Write(b[:])
	})
	if err != nil {
		return fmt.Errorf("hostile.WritePointShapefileZip: %w", err)
	}
	return zw.Close()
}

// toDir writes each file of a Shapefile into dir.
func toDir(dir string) func(name string, write func(*bufio.Writer)) error {
	return func(name string, write func(*bufio.Writer)) error {
		if err := writeFile(filepath.Join(dir, name), write); err != nil {
			return fmt.Errorf("hostile.writeShapefile: %w", err)
		}
		return nil
	}
}

// writeShapefile writes n records of one shape type, each of content
// bytes written by rec, with the .shx index, a .dbf of one N(10) "id"
// field and a WGS 84 .prj, in this order, each through put.
func writeShapefile(put func(name string, write func(*bufio.Writer)) error, stem string, shapeType, n, content int, bbox [4]float64, rec func(w *bufio.Writer, i int)) error {
	be, le := binary.BigEndian, binary.LittleEndian
	header := func(words int) []byte {
		h := make([]byte, 100)
		be.PutUint32(h[0:], 9994)
		be.PutUint32(h[24:], uint32(words))
		le.PutUint32(h[28:], 1000)
		le.PutUint32(h[32:], uint32(shapeType))
		for i, v := range bbox {
			le.PutUint64(h[36+8*i:], math.Float64bits(v))
		}
		return h
	}
	recWords := (8 + content) / 2
	files := []struct {
		ext   string
		write func(w *bufio.Writer)
	}{
		{".shp", func(w *bufio.Writer) {
			w.Write(header(50 + n*recWords))
			var rh [8]byte
			for i := 0; i < n; i++ {
				be.PutUint32(rh[0:], uint32(i+1))
				be.PutUint32(rh[4:], uint32(content/2))
				w.Write(rh[:])
				rec(w, i)
			}
		}},
		{".shx", func(w *bufio.Writer) {
			w.Write(header(50 + 4*n))
			var e [8]byte
			for i := 0; i < n; i++ {
				be.PutUint32(e[0:], uint32(50+i*recWords))
				be.PutUint32(e[4:], uint32(content/2))
				w.Write(e[:])
			}
		}},
		{".dbf", func(w *bufio.Writer) {
			const width = 10
			h := make([]byte, 32+32+1)
			h[0] = 3
			h[1], h[2], h[3] = 126, 1, 1 // 2026-01-01: fixed, for identical files
			le.PutUint32(h[4:], uint32(n))
			le.PutUint16(h[8:], uint16(len(h)))
			le.PutUint16(h[10:], 1+width)
			copy(h[32:], "id")
			h[32+11] = 'N'
			h[32+16] = width
			h[64] = 0x0D
			w.Write(h)
			b := make([]byte, 0, 1+width)
			for i := 0; i < n; i++ {
				b = append(b[:0], ' ')
				d := strconv.AppendInt(nil, int64(i+1), 10)
				for k := len(d); k < width; k++ {
					b = append(b, ' ')
				}
				w.Write(append(b, d...))
			}
			w.WriteByte(0x1A)
		}},
		{".prj", func(w *bufio.Writer) { w.WriteString(prjWGS84) }},
	}
	for _, f := range files {
		if err := put(stem+f.ext, f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(p string, write func(w *bufio.Writer)) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
