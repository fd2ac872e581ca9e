package gdal

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// makeImagery writes an 8-bit GeoTIFF of bands bands (3: RGB, 4: RGBA
// with a transparent corner, 1: grey) of smooth gradients and noise, as
// an orthophoto has, with GDAL's Python bindings.
func makeImagery(t *testing.T, path string, bands int) {
	t.Helper()
	pyGDAL(t, `
import sys
import numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()
path, n = sys.argv[1], int(sys.argv[2])
w, h = 700, 520
ds = gdal.GetDriverByName("GTiff").Create(path, w, h, n, gdal.GDT_Byte, ["TILED=YES"])
ds.SetGeoTransform([500000, 0.5, 0, 5200000, 0, -0.5])
srs = osr.SpatialReference(); srs.ImportFromEPSG(32633)
ds.SetProjection(srs.ExportToWkt())
rng = np.random.default_rng(7)
y, x = np.mgrid[0:h, 0:w]
interp = [gdal.GCI_RedBand, gdal.GCI_GreenBand, gdal.GCI_BlueBand, gdal.GCI_AlphaBand]
for b in range(n):
    a = 128 + 100*np.sin(x/(37.0+9*b)) * np.cos(y/(23.0+5*b)) + rng.normal(0, 6, (h, w))
    if n == 4 and b == 3:
        a = np.full((h, w), 255.0); a[:60, :80] = 0
    ds.GetRasterBand(b+1).WriteArray(np.clip(a, 0, 255).astype(np.uint8))
    if n > 1:
        ds.GetRasterBand(b+1).SetColorInterpretation(interp[b])
ds = None
`, path, string(rune('0'+bands)))
}

// outsidePSNR is each band's PSNR and largest absolute difference
// between two 8-bit rasters as GDAL's Python bindings and numpy compute
// them, independently of the engine.
func outsidePSNR(t *testing.T, src, out string) (psnr []float64, maxDiff []int) {
	t.Helper()
	js := pyGDAL(t, `
import sys, json
import numpy as np
from osgeo import gdal
a, b = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
res = []
for i in range(1, a.RasterCount+1):
    d = a.GetRasterBand(i).ReadAsArray().astype(np.float64) - b.GetRasterBand(i).ReadAsArray().astype(np.float64)
    mse = float(np.mean(d*d))
    res.append([10*np.log10(255.0**2/mse) if mse > 0 else None, int(np.max(np.abs(d)))])
print(json.dumps(res))
`, src, out)
	var res [][2]any
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	for _, r := range res {
		p, _ := r[0].(float64)
		psnr = append(psnr, p)
		maxDiff = append(maxDiff, int(r[1].(float64)))
	}
	return psnr, maxDiff
}

// TestLossyCompressionMeasuresItsError: a JPEG or WEBP recipe with a
// threshold converts 8-bit imagery; the fidelity record holds each band's
// PSNR and largest difference, which match an outside computation (GDAL's
// Python bindings and numpy) within 0.01 dB; the output's lineage says
// lossy; a threshold the output misses refuses the file.
func TestLossyCompressionMeasuresItsError(t *testing.T) {
	caps := engine.Capabilities()
	cases := []struct {
		compression string
		bands       int
	}{
		{"JPEG", 3},
		{"JPEG", 1},
		{"WEBP", 3},
		{"WEBP", 4},
	}
	for _, c := range cases {
		t.Run(c.compression+"/"+string(rune('0'+c.bands)), func(t *testing.T) {
			if !slices.Contains(caps.Compressions, c.compression) {
				t.Skipf("this GDAL's COG driver writes no %s", c.compression)
			}
			dir := t.TempDir()
			src := filepath.Join(dir, "ortho.tif")
			makeImagery(t, src, c.bands)
			r := fgbRecipe()
			r.Compression, r.Quality, r.MinPSNR = c.compression, 85, 25
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			outs, err := engine.Convert(context.Background(), src, t.TempDir(), r)
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			validateCOG(t, o.Path)
			l := o.Fidelity.Lossy
			if l == nil || l.Compression != c.compression || l.Quality != 85 || l.MinPSNR != 25 || len(l.Bands) != c.bands {
				t.Fatalf("fidelity %+v", o.Fidelity)
			}
			if !slices.Contains(o.Fidelity.Checks, "pixels within min_psnr_db") || slices.Contains(o.Fidelity.Checks, "pixels") {
				t.Errorf("checks %v", o.Fidelity.Checks)
			}
			psnr, maxDiff := outsidePSNR(t, src, o.Path)
			lossySeen := false
			for i, b := range l.Bands {
				if b.PSNR == nil {
					if psnr[i] != 0 {
						t.Errorf("band %d: no PSNR recorded (unchanged), outside %.4f dB", i+1, psnr[i])
					}
					continue
				}
				lossySeen = true
				if math.Abs(*b.PSNR-psnr[i]) > 0.01 || b.MaxAbsDiff != maxDiff[i] {
					t.Errorf("band %d: recorded %.4f dB, max diff %d; outside %.4f dB, %d", i+1, *b.PSNR, b.MaxAbsDiff, psnr[i], maxDiff[i])
				}
				if *b.PSNR < 25 {
					t.Errorf("band %d: %.2f dB passed a threshold of 25", i+1, *b.PSNR)
				}
			}
			if !lossySeen {
				t.Error("no band lost anything: the output is not lossy")
			}
			lin, err := ReadCOGLineage(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(lin.Lossy, "lossy "+c.compression+" quality=85 min_psnr_db=25") {
				t.Errorf("lineage %+v", lin)
			}
			if s := o.Fidelity.Summary(); !strings.Contains(s, "lossy="+c.compression) {
				t.Errorf("summary %q", s)
			}
			// A threshold above what the output keeps refuses the file.
			r.MinPSNR = 99
			if _, err := engine.Convert(context.Background(), src, t.TempDir(), r); fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "below the recipe's min_psnr_db 99") {
				t.Errorf("min_psnr_db 99: %v", err)
			}
		})
	}
}

// TestLossyRefusals: lossy compressions are for 8-bit grey, RGB or RGBA
// imagery; anything else is refused, saying why, before anything is
// written.
func TestLossyRefusals(t *testing.T) {
	dir := t.TempDir()
	rgba := filepath.Join(dir, "rgba.tif")
	makeImagery(t, rgba, 4)
	grey := filepath.Join(dir, "grey.tif")
	makeImagery(t, grey, 1)
	cases := []struct {
		name, src, compression, want string
	}{
		{"float raster", sample(t, "temperature_f32.tif").Path, "JPEG", "Float32 band 1"},
		{"RGBA with JPEG", rgba, "JPEG", "4 bands"},
		{"grey with WEBP", grey, "WEBP", "1 bands"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fgbRecipe()
			r.Compression, r.MinPSNR = c.compression, 30
			r = r.WithDefaults()
			_, err := engine.Convert(context.Background(), c.src, t.TempDir(), r)
			if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "lossy") {
				t.Errorf("%v", err)
			}
		})
	}
	// A lossy recipe without a threshold never reaches a conversion.
	r := fgbRecipe()
	r.Compression = "JPEG"
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "lossless by default") {
		t.Errorf("JPEG without min_psnr_db: %v", err)
	}
}

// TestCapabilities: the facts recipes are checked against come from this
// GDAL: its COG driver's compressions, the resamplings it builds
// overviews with, PROJ's codes.
func TestCapabilities(t *testing.T) {
	c := engine.Capabilities()
	for _, want := range []string{"ZSTD", "DEFLATE", "LZW", "JPEG"} {
		if !slices.Contains(c.Compressions, want) {
			t.Errorf("compressions %v lack %s", c.Compressions, want)
		}
	}
	for _, want := range []string{"nearest", "average", "lanczos", "rms", "cubicspline"} {
		if !slices.Contains(c.Resamplings, want) {
			t.Errorf("resamplings %v lack %s", c.Resamplings, want)
		}
	}
	if err := c.CRS("EPSG:3035"); err != nil {
		t.Error(err)
	}
	if err := c.CRS("EPSG:999999"); err == nil {
		t.Error("EPSG:999999 known")
	}
	if err := c.CreationOption("NOSUCH=1"); err == nil {
		t.Error("NOSUCH=1 accepted")
	}
}
