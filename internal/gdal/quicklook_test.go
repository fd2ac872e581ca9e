package gdal

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
	"golang.org/x/image/webp"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// quickLookEngine is the package's test engine (TestMain): GDAL's
// configuration is process-wide, and a second New would move CPL_TMPDIR
// under the other tests' feet.
func quickLookEngine(t *testing.T) *Engine {
	t.Helper()
	if engine == nil {
		t.Fatal("no engine: TestMain did not run New")
	}
	return engine
}

// writeQuickLookRaster writes a w×h GeoTIFF of bands bands of dtype whose
// pixel (x, y) of band b (from 1) is value(b, x, y), in EPSG:3035; nodata
// and ct go to the first band.
func writeQuickLookRaster(t *testing.T, path string, dtype godal.DataType, bands, w, h int, nodata *float64, ct *godal.ColorTable, value func(b, x, y int) float64) {
	t.Helper()
	ds, err := godal.Create(godal.GTiff, path, bands, dtype, w, h)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(3035)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if err := ds.SetSpatialRef(sr); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetGeoTransform([6]float64{4e6, 100, 0, 3e6, 0, -100}); err != nil {
		t.Fatal(err)
	}
	b := ds.Bands()[0]
	if nodata != nil {
		if err := b.SetNoData(*nodata); err != nil {
			t.Fatal(err)
		}
	}
	if ct != nil {
		if err := b.SetColorTable(*ct); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]float64, w*h)
	for i, b := range ds.Bands() {
		for y := range h {
			for x := range w {
				buf[y*w+x] = value(i+1, x, y)
			}
		}
		if err := b.Write(0, 0, buf, w, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, format := decodeQuickLook(t, b)
	if format != "png" {
		t.Fatalf("a %s, want a PNG", format)
	}
	return img
}

// decodeQuickLook decodes a PNG or WebP quick-look with Go's own decoders
// (image/png, golang.org/x/image/webp), not GDAL's.
func decodeQuickLook(t *testing.T, b []byte) (image.Image, string) {
	t.Helper()
	var img image.Image
	var err error
	format := ""
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		format = "png"
		img, err = png.Decode(bytes.NewReader(b))
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		format = "webp"
		img, err = webp.Decode(bytes.NewReader(b))
	default:
		t.Fatalf("neither PNG nor WebP: % x", b[:min(12, len(b))])
	}
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return img, format
}

// near reports whether the 8-bit channel of a 16-bit value c is within a
// lossy encoding's reach of want.
func near(c uint32, want int) bool {
	d := int(c>>8) - want
	return d >= -24 && d <= 24
}

// dirList is the names in dir: a quick-look must add nothing beside its
// input (no .aux.xml).
func dirList(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestThumbnail(t *testing.T) {
	e := quickLookEngine(t)
	dir := t.TempDir()
	nd := -9999.0
	palette := &godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: [][4]int16{{0, 0, 0, 0}, {255, 0, 0, 255}, {0, 0, 255, 255}}}
	tests := []struct {
		name, file string
		dtype      godal.DataType
		bands      int
		w, h       int
		nodata     *float64
		ct         *godal.ColorTable
		value      func(b, x, y int) float64
		wantW      int
		wantH      int
		caption    string
		// format is the image's when GDAL writes WebP: continuous
		// rasters lossy, classes exact.
		format string
		check  func(t *testing.T, img image.Image)
	}{
		{
			name: "float with nodata is stretched, nodata transparent", file: "temp.tif", dtype: godal.Float32, bands: 1, w: 600, h: 300, nodata: &nd,
			value: func(_, x, y int) float64 {
				if x < 300 {
					return nd
				}
				return 0.001 * float64(x) // 0.3 .. 0.6: a byte cast would be all 0
			},
			wantW: 256, wantH: 128, caption: "stretched", format: "webp",
			check: func(t *testing.T, img image.Image) {
				if _, _, _, a := img.At(10, 64).RGBA(); a != 0 {
					t.Errorf("nodata pixel alpha %d, want transparent", a)
				}
				// Exactly the nodata half is transparent: values below the
				// stretch (the lowest 2 %) are black, not hidden.
				clear := 0
				for y := range 128 {
					for x := range 256 {
						if _, _, _, a := img.At(x, y).RGBA(); a == 0 {
							clear++
						}
					}
				}
				if clear != 128*128 {
					t.Errorf("%d transparent pixels, want %d (the nodata half)", clear, 128*128)
				}
				lo, hi := gray(img.At(140, 64)), gray(img.At(250, 64))
				if lo == 0 || hi <= lo+100 {
					t.Errorf("values not stretched: %d at the low end, %d at the high end", lo, hi)
				}
			},
		},
		{
			name: "paletted keeps its classes", file: "classes.tif", dtype: godal.Byte, bands: 1, w: 40, h: 80, ct: palette,
			value: func(_, x, y int) float64 { return float64(1 + y/40) },
			wantW: 128, wantH: 256, caption: "colour table", format: "png",
			check: func(t *testing.T, img image.Image) {
				if r, g, b, _ := img.At(60, 10).RGBA(); r>>8 != 255 || g != 0 || b != 0 {
					t.Errorf("class 1 pixel %v, want red", img.At(60, 10))
				}
				if r, _, b, _ := img.At(60, 250).RGBA(); r != 0 || b>>8 != 255 {
					t.Errorf("class 2 pixel %v, want blue", img.At(60, 250))
				}
			},
		},
		{
			name: "three bands are RGB", file: "rgb.tif", dtype: godal.Byte, bands: 3, w: 512, h: 512,
			value: func(b, x, y int) float64 { // red left, green right
				if (b == 1) == (x < 256) && b < 3 {
					return 255
				}
				return 0
			},
			wantW: 256, wantH: 256, caption: "bands 1-3 as RGB", format: "webp",
			check: func(t *testing.T, img image.Image) {
				if r, g, b, a := img.At(10, 10).RGBA(); !near(r, 255) || !near(g, 0) || !near(b, 0) || a>>8 != 255 {
					t.Errorf("left pixel %v, want red", img.At(10, 10))
				}
				if r, g, b, a := img.At(250, 10).RGBA(); !near(r, 0) || !near(g, 255) || !near(b, 0) || a>>8 != 255 {
					t.Errorf("right pixel %v, want green", img.At(250, 10))
				}
			},
		},
		{
			name: "grey bytes with nodata: nodata transparent", file: "grey.tif", dtype: godal.Byte, bands: 1, w: 300, h: 300, nodata: func() *float64 { v := 0.0; return &v }(),
			value: func(_, x, y int) float64 { // the top third nodata, then a ramp
				if y < 100 {
					return 0
				}
				return float64(1 + x*254/299)
			},
			wantW: 256, wantH: 256, caption: "nodata 0 transparent", format: "webp",
			check: func(t *testing.T, img image.Image) {
				if _, _, _, a := img.At(128, 20).RGBA(); a != 0 {
					t.Errorf("nodata pixel alpha %d, want transparent", a>>8)
				}
				if r, _, _, a := img.At(250, 200).RGBA(); !near(r, 250) || a>>8 != 255 {
					t.Errorf("bright end %v, want opaque near 250", img.At(250, 200))
				}
				if r, _, _, a := img.At(5, 200).RGBA(); !near(r, 5) || a>>8 != 255 {
					t.Errorf("dark end %v, want opaque near 5", img.At(5, 200))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			writeQuickLookRaster(t, p, tt.dtype, tt.bands, tt.w, tt.h, tt.nodata, tt.ct, tt.value)
			before := dirList(t, dir)
			b, caption, err := e.Thumbnail(p, 256)
			if err != nil {
				t.Fatal(err)
			}
			img, format := decodeQuickLook(t, b)
			want := tt.format
			if !lossyQuickLooks() {
				want = "png" // this GDAL has no WEBP driver
			}
			if format != want {
				t.Errorf("a %s, want a %s", format, want)
			}
			if got := img.Bounds().Size(); got.X != tt.wantW || got.Y != tt.wantH {
				t.Errorf("size %v, want %dx%d", got, tt.wantW, tt.wantH)
			}
			if !strings.Contains(caption, tt.caption) || !strings.Contains(caption, "EPSG:3035") {
				t.Errorf("caption %q lacks %q or the CRS", caption, tt.caption)
			}
			tt.check(t, img)
			if after := dirList(t, dir); !slices.Equal(before, after) {
				t.Errorf("files beside the input changed: %v → %v", before, after)
			}
		})
	}
	if _, _, err := e.Thumbnail(filepath.Join(dir, "missing.tif"), 256); err == nil {
		t.Error("missing raster: no error")
	}
}

func gray(c color.Color) uint32 {
	r, _, _, _ := c.RGBA()
	return r >> 8
}

// wkbPoint and wkbSquare are ISO WKB, little-endian.
func wkbPoint(x, y float64) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

func wkbSquare(x0, y0, side float64) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 5)
	for _, c := range [][2]float64{{x0, y0}, {x0 + side, y0}, {x0 + side, y0 + side}, {x0, y0 + side}, {x0, y0}} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c[0]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c[1]))
	}
	return b
}

func writeParquet(t *testing.T, path string, feats []geoparquet.Feature) {
	t.Helper()
	var buf bytes.Buffer
	layer := geoparquet.Layer{Name: "l", Fields: []geoparquet.Field{{Name: "id", Type: geoparquet.Int64}}, IsCRS84: true}
	if _, err := geoparquet.Write(&buf, layer, &geoparquet.SliceSource{Features: feats}, geoparquet.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExtentMap(t *testing.T) {
	e := quickLookEngine(t)
	dir := t.TempDir()
	// A square in the west half and a point in the east: the canvas spans
	// both, the square is drawn where it is, the middle stays background.
	feats := []geoparquet.Feature{
		{WKB: wkbSquare(0, 0, 10), Values: []any{int64(1)}},
		{WKB: wkbPoint(30, 5), Values: []any{int64(2)}},
		{WKB: nil, Values: []any{int64(3)}},
	}
	parquet := filepath.Join(dir, "layer.parquet")
	writeParquet(t, parquet, feats)

	// The same layer as FlatGeobuf, through GDAL.
	fgb := filepath.Join(dir, "layer.fgb")
	{
		ds, err := godal.CreateVector(godal.DriverName("FlatGeobuf"), fgb)
		if err != nil {
			t.Fatal(err)
		}
		sr, _ := godal.NewSpatialRefFromEPSG(4326)
		l, err := ds.CreateLayer("layer", sr, godal.GTUnknown)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range feats[:2] {
			g, err := godal.NewGeometryFromWKB(f.WKB, sr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.NewFeature(g); err != nil {
				t.Fatal(err)
			}
			g.Close()
		}
		sr.Close()
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{parquet, fgb} {
		t.Run(filepath.Ext(p), func(t *testing.T) {
			before := dirList(t, dir)
			b, caption, err := e.ExtentMap(p, 256)
			if err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, b)
			size := img.Bounds().Size()
			if size.X != 256 || size.Y >= 128 {
				t.Errorf("size %v, want 256 wide and flatter than 2:1 (the extent is 30 × 10)", size)
			}
			// x = 5 (inside the square) and x = 20 (between) at y = 5.
			px := func(x float64) int { return int(float64(size.X) * (0.05 + 0.9*(x/30)) / 1.0) }
			mid := size.Y / 2
			if c := img.At(px(5), mid); isBackground(c) {
				t.Errorf("inside the square: background %v", c)
			}
			if c := img.At(px(20), mid); !isBackground(c) {
				t.Errorf("between the features: %v, want background", c)
			}
			if c := img.At(px(30)-1, mid); isBackground(c) {
				t.Errorf("at the point: background %v", c)
			}
			if !strings.Contains(caption, "2 feature(s)") || !strings.Contains(caption, "Point") || !strings.Contains(caption, "Polygon") ||
				!(strings.Contains(caption, "OGC:CRS84") || strings.Contains(caption, "EPSG:4326")) {
				t.Errorf("caption %q", caption)
			}
			if after := dirList(t, dir); !slices.Equal(before, after) {
				t.Errorf("files beside the input changed: %v → %v", before, after)
			}
		})
	}

	t.Run("dense layer is a density map", func(t *testing.T) {
		dense := make([]geoparquet.Feature, MaxExtentFeatures+1)
		for i := range dense {
			dense[i] = geoparquet.Feature{WKB: wkbPoint(float64(i%200), float64(i/200)), Values: []any{int64(i)}}
		}
		p := filepath.Join(dir, "dense.parquet")
		writeParquet(t, p, dense)
		b, caption, err := e.ExtentMap(p, 256)
		if err != nil {
			t.Fatal(err)
		}
		decodePNG(t, b)
		if !strings.Contains(caption, "density") {
			t.Errorf("caption %q", caption)
		}
	})
	if _, _, err := e.ExtentMap(filepath.Join(dir, "missing.parquet"), 256); err == nil {
		t.Error("missing layer: no error")
	}
}

func isBackground(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r>>8 == uint32(extentBackground[0]) && g>>8 == uint32(extentBackground[1]) && b>>8 == uint32(extentBackground[2])
}
