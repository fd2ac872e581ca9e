package preflight

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// fakeProbe stands in for GDAL: it identifies by extension and takes any
// WKT that starts like one. It records what it was asked, so that a test
// can tell the probe was never reached.
type fakeProbe struct {
	byExt map[string]string
	asked []string
}

func (p *fakeProbe) Identify(name string, allowed, siblings []string) string {
	p.asked = append(p.asked, name)
	d := p.byExt[strings.ToLower(path.Ext(name))]
	if !slices.Contains(allowed, d) {
		return ""
	}
	return d
}

func (p *fakeProbe) ParseCRS(wkt string) error {
	if strings.HasPrefix(wkt, "GEOGCS[") || strings.HasPrefix(wkt, "PROJCS[") {
		return nil
	}
	return errors.New("not a CRS")
}

func newProbe() *fakeProbe {
	return &fakeProbe{byExt: map[string]string{
		".tif": "GTiff", ".shp": "ESRI Shapefile", ".geojson": "GeoJSON", ".kml": "KML", ".vrt": "VRT", ".csv": "CSV", ".nc": "netCDF",
	}}
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func zipOf(t *testing.T, dir, name string, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(entries[n]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, buf.Bytes())
}

const wgs84 = `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]]`

// Local decides without GDAL wherever the bytes suffice: the probe is
// asked only to name a driver and to parse a .prj.
func TestLocal(t *testing.T) {
	dir := t.TempDir()
	tiff := []byte("II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	cases := []struct {
		name       string
		src        func() string
		r          recipe.Recipe
		want       fault.Code // "" = accepted
		driver     string
		noIdentify bool // refused before the probe is asked
	}{
		{name: "GeoTIFF", src: func() string { return write(t, dir, "a.tif", tiff) }, driver: "GTiff"},
		{name: "GDAL virtual path", src: func() string { return "/vsicurl/http://example.com/a.tif" }, want: fault.UnsafeSource, noIdentify: true},
		{name: "empty file", src: func() string { return write(t, dir, "empty.tif", nil) }, want: fault.CorruptSource, noIdentify: true},
		{name: "symbolic link", src: func() string {
			l := filepath.Join(dir, "link.tif")
			if err := os.Symlink(write(t, dir, "target.tif", tiff), l); err != nil {
				t.Fatal(err)
			}
			return l
		}, want: fault.UnsafeSource, noIdentify: true},
		{name: "VRT named .tif", src: func() string {
			return write(t, dir, "vrt.tif", []byte("\xef\xbb\xbf  <VRTDataset rasterXSize=\"1\"></VRTDataset>"))
		}, want: fault.UnsafeSource, noIdentify: true},
		{name: "over the byte budget", src: func() string { return write(t, dir, "big.tif", tiff) }, r: recipe.Recipe{MaxBytes: 4}, want: fault.BudgetExceeded, noIdentify: true},
		{name: "unrecognised", src: func() string { return write(t, dir, "x.dat", []byte("hello")) }, want: fault.UnsupportedFormat},
		{name: "unsupported driver", src: func() string { return write(t, dir, "t.csv", []byte("a,b\n")) }, want: fault.UnsupportedFormat},
		{name: "Shapefile without .shx", src: func() string {
			write(t, dir, "roads.dbf", []byte("x"))
			return write(t, dir, "roads.shp", []byte("x"))
		}, want: fault.CorruptSource},
		{name: "KML NetworkLink", src: func() string {
			return write(t, dir, "n.kml", []byte(`<kml><Document><NetworkLink><Link><href>http://x</href></Link></NetworkLink></Document></kml>`))
		}, want: fault.UnsafeSource},
		{name: ".prj that is no CRS", src: func() string {
			write(t, dir, "p.prj", []byte("hello"))
			return write(t, dir, "p.tif", tiff)
		}, want: fault.InvalidCRS},
		{name: "external mask", src: func() string {
			write(t, dir, "m.tif.msk", declaredTIFF(10, 10))
			return write(t, dir, "m.tif", declaredTIFF(10, 10))
		}, driver: "GTiff"},
		{name: "external mask that is no TIFF", src: func() string {
			write(t, dir, "n.tif.msk", []byte("not a tiff"))
			return write(t, dir, "n.tif", tiff)
		}, want: fault.CorruptSource},
		{name: "external mask over the pixel budget", src: func() string {
			write(t, dir, "o.tif.msk", declaredTIFF(100000, 100000))
			return write(t, dir, "o.tif", declaredTIFF(10, 10))
		}, r: recipe.Recipe{MaxPixels: 1000}, want: fault.BudgetExceeded},
		{name: "external overviews over the pixel budget", src: func() string {
			write(t, dir, "v.tif.ovr", declaredTIFF(100000, 100000))
			return write(t, dir, "v.tif", declaredTIFF(10, 10))
		}, r: recipe.Recipe{MaxPixels: 1000}, want: fault.BudgetExceeded},
		{name: "zip path traversal", src: func() string {
			return zipOf(t, dir, "evil.zip", map[string]string{"../a.tif": "II*\x00"})
		}, want: fault.UnsafeSource, noIdentify: true},
		{name: "zipped Shapefile", src: func() string {
			return zipOf(t, dir, "places.shp.zip", map[string]string{"places.shp": "x", "places.shx": "x", "places.dbf": "x", "places.prj": wgs84})
		}, driver: "ESRI Shapefile"},
		{name: "zipped Shapefile with a bad .prj", src: func() string {
			return zipOf(t, dir, "bad.shp.zip", map[string]string{"bad.shp": "x", "bad.shx": "x", "bad.dbf": "x", "bad.prj": "nonsense"})
		}, want: fault.InvalidCRS, noIdentify: true},
		{name: "zipped netCDF", src: func() string { return zipOf(t, dir, "c.zip", map[string]string{"c.nc": "CDF\x01"}) }, want: fault.UnsupportedFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProbe()
			s, err := Local(c.src(), c.r, p)
			if fault.CodeOf(err) != c.want {
				t.Fatalf("Local: %v, want %q", err, c.want)
			}
			if c.noIdentify && len(p.asked) > 0 {
				t.Errorf("the probe was asked about %v; the bytes should have decided", p.asked)
			}
			if c.driver != "" && (s == nil || s.Driver != c.driver) {
				t.Errorf("source %v, want driver %s", s, c.driver)
			}
		})
	}
}

// TestLocalZippedImageWithMetadata: image.XML beside image.tif in a zip is
// the image's metadata, given to GDAL, not a second dataset; an .xml with
// no raster of its stem still is one.
func TestLocalZippedImageWithMetadata(t *testing.T) {
	dir := t.TempDir()
	tiff := "II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	z := zipOf(t, dir, "scene.zip", map[string]string{"scene.tif": tiff, "scene.XML": "<isd/>", "scene.IMD": "x", "scene_RPC.TXT": "x"})
	s, err := Local(z, recipe.Recipe{}, newProbe())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"scene.tif", "scene.IMD", "scene.XML", "scene_RPC.TXT"}; !slices.Equal(s.Siblings, want) {
		t.Errorf("Siblings %v, want %v", s.Siblings, want)
	}
	z = zipOf(t, dir, "two.zip", map[string]string{"scene.tif": tiff, "catalog.xml": "<c/>"})
	if _, err := Local(z, recipe.Recipe{}, newProbe()); fault.CodeOf(err) != fault.UnsupportedFormat || !strings.Contains(err.Error(), "several files") {
		t.Errorf("a raster and an unrelated .xml: %v, want several files", err)
	}
}

func TestLocalZippedShapefile(t *testing.T) {
	dir := t.TempDir()
	z := zipOf(t, dir, "places.shp.zip", map[string]string{"places.shp": "x", "places.shx": "x", "places.dbf": "x", "places.prj": wgs84, "places.tif.ovr": "x"})
	s, err := Local(z, recipe.Recipe{}, newProbe())
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(z)
	if want := "/vsizip/{" + abs + "}/places.shp"; s.Path != want {
		t.Errorf("Path %q, want %q", s.Path, want)
	}
	if want := []string{"places.shp", "places.dbf", "places.prj", "places.shx"}; !slices.Equal(s.Siblings, want) {
		t.Errorf("Siblings %v, want %v", s.Siblings, want)
	}
	if s.Archive != abs || s.Stem() != "places" {
		t.Errorf("Archive %q, Stem %q", s.Archive, s.Stem())
	}
}

// Reader: the same checks on a source read by ranges, and the refusals of
// what cannot arrive that way.
func TestReader(t *testing.T) {
	tiff := []byte("II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	cases := []struct {
		name string
		data []byte
		want fault.Code
	}{
		{"a.tif", tiff, ""},
		{"a.shp", []byte("x"), fault.UnsupportedFormat},
		{"a.nc", []byte("CDF\x01"), fault.UnsupportedFormat},
		{"b.tif", []byte("<VRTDataset/>"), fault.UnsafeSource},
		{"c.tif", nil, fault.CorruptSource},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Reader(bytes.NewReader(c.data), int64(len(c.data)), c.name, "/vsitest/1/"+c.name, recipe.Recipe{}, newProbe())
			if fault.CodeOf(err) != c.want {
				t.Fatalf("Reader: %v, want %q", err, c.want)
			}
			if err == nil && (s.Path != "/vsitest/1/"+c.name || s.Bytes != int64(len(c.data))) {
				t.Errorf("source %+v", s)
			}
		})
	}
}

// declaredTIFF is a classic little-endian TIFF header whose one IFD
// declares w x h pixels of one 8-bit sample (no pixel data follows).
func declaredTIFF(w, h uint32) []byte {
	b := []byte("II*\x00\x08\x00\x00\x00")
	entry := func(tag, typ uint16, v uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, typ)
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = binary.LittleEndian.AppendUint16(b, 4)
	entry(256, 4, w)
	entry(257, 4, h)
	entry(258, 3, 8)
	entry(277, 3, 1)
	return binary.LittleEndian.AppendUint32(b, 0)
}
