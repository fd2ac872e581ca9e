package hostile

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each bomb is a well-formed classic TIFF header of at most 8 KiB whose
// first IFD declares what its description says.
func TestSizeBombsAreSmallTIFFs(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range SizeBombs() {
		if seen[f.Name] {
			t.Errorf("%s: name repeated", f.Name)
		}
		seen[f.Name] = true
		if len(f.Data) > 8<<10 {
			t.Errorf("%s: %d bytes", f.Name, len(f.Data))
		}
		if !bytes.HasPrefix(f.Data, []byte{'I', 'I', 42, 0, 8, 0, 0, 0}) {
			t.Errorf("%s: not a little-endian classic TIFF with its IFD at 8", f.Name)
		}
		n := int(binary.LittleEndian.Uint16(f.Data[8:]))
		tags := map[uint16]uint32{}
		for i := 0; i < n; i++ {
			e := f.Data[10+12*i:]
			tag, typ := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:])
			v := binary.LittleEndian.Uint32(e[8:])
			if typ == 3 {
				v = uint32(binary.LittleEndian.Uint16(e[8:]))
			}
			tags[tag] = v
		}
		pixels := uint64(tags[256]) * uint64(tags[257]) * uint64(tags[277])
		tile := uint64(tags[322]) * uint64(tags[323]) * uint64(tags[277])
		if pixels < 1<<27 && tile < 1<<27 { // 128 Mi samples
			t.Errorf("%s (%s): declares %d pixels, tiles of %d: not a bomb", f.Name, f.Description, pixels, tile)
		}
	}
}

// The vector bombs are well-formed: header lengths match the files, the
// .dbf counts the records, the GeoJSON parses with the vertices asked for.
func TestVectorBombsAreWellFormed(t *testing.T) {
	dir := t.TempDir()
	if err := WritePointShapefile(dir, "points", 1000); err != nil {
		t.Fatal(err)
	}
	if err := WritePolygonShapefile(dir, "polygon", 5000); err != nil {
		t.Fatal(err)
	}
	for stem, n := range map[string]int{"points": 1000, "polygon": 1} {
		for _, ext := range []string{".shp", ".shx"} {
			b, err := os.ReadFile(filepath.Join(dir, stem+ext))
			if err != nil {
				t.Fatal(err)
			}
			if words := binary.BigEndian.Uint32(b[24:]); int(words)*2 != len(b) {
				t.Errorf("%s%s: header says %d bytes, file has %d", stem, ext, words*2, len(b))
			}
			if ext == ".shx" && len(b) != 100+8*n {
				t.Errorf("%s.shx: %d bytes for %d records", stem, len(b), n)
			}
		}
		dbf, err := os.ReadFile(filepath.Join(dir, stem+".dbf"))
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint32(dbf[4:]); int(got) != n {
			t.Errorf("%s.dbf: %d records, want %d", stem, got, n)
		}
		if want := 65 + 11*n + 1; len(dbf) != want {
			t.Errorf("%s.dbf: %d bytes, want %d", stem, len(dbf), want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "polygon.shp")); fi.Size() != 100+8+4+32+12+16*5001 {
		t.Errorf("polygon.shp: %d bytes", fi.Size())
	}

	var buf bytes.Buffer
	if err := WritePolygonGeoJSON(&buf, 5000); err != nil {
		t.Fatal(err)
	}
	var fc struct {
		Features []struct {
			Geometry struct {
				Coordinates [][][2]float64
			}
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &fc); err != nil {
		t.Fatal(err)
	}
	if r := fc.Features[0].Geometry.Coordinates[0]; len(r) != 5001 || r[0] != r[5000] {
		t.Errorf("ring of %d points, closed %v", len(r), r[0] == r[len(r)-1])
	}
	buf.Reset()
	if err := WriteTextGeoJSON(&buf, 3, 100); err != nil {
		t.Fatal(err)
	}
	var pts struct {
		Features []struct{ Properties struct{ Note string } }
	}
	if err := json.Unmarshal(buf.Bytes(), &pts); err != nil {
		t.Fatal(err)
	}
	if len(pts.Features) != 3 || len(pts.Features[2].Properties.Note) != 100 {
		t.Errorf("text GeoJSON: %+v", pts)
	}
}

// The zipped Shapefile holds the four files, the points inflate more than
// 5 times, and the archive is the same bytes every time.
func TestPointShapefileZip(t *testing.T) {
	var a, b bytes.Buffer
	const n = 200_000
	if err := WritePointShapefileZip(&a, "points", n); err != nil {
		t.Fatal(err)
	}
	if err := WritePointShapefileZip(&b, "points", n); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives differ")
	}
	zr, err := zip.NewReader(bytes.NewReader(a.Bytes()), int64(a.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var inflated uint64
	for _, f := range zr.File {
		names = append(names, f.Name)
		inflated += f.UncompressedSize64
	}
	if got := strings.Join(names, " "); got != "points.shp points.shx points.dbf points.prj" {
		t.Errorf("entries %s", got)
	}
	if want := uint64(100+28*n) + uint64(100+8*n) + uint64(65+11*n+1) + uint64(len(prjWGS84)); inflated != want {
		t.Errorf("inflates to %d bytes, want %d", inflated, want)
	}
	t.Logf("%d points: %d bytes of zip, %d inflated (x%.1f)", n, a.Len(), inflated, float64(inflated)/float64(a.Len()))
	if inflated < 5*uint64(a.Len()) {
		t.Errorf("inflates only %.1f times", float64(inflated)/float64(a.Len()))
	}
}
