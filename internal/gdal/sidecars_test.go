package gdal

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// TestMetadataSidecarsReachGDAL: an RPC model GDAL itself wrote beside the
// image (image_RPC.TXT with RPCTXT=YES, image.RPB with RPB=YES) is among
// the sibling files preflight names, and GDAL opening the source with
// only those siblings reads the RPC domain from it; the image alone has
// none.
func TestMetadataSidecarsReachGDAL(t *testing.T) {
	for _, tc := range []struct{ option, sidecar string }{
		{"RPCTXT=YES", "image_RPC.TXT"},
		{"RPB=YES", "image.RPB"},
	} {
		t.Run(tc.sidecar, func(t *testing.T) {
			// dir: the plain image and the sidecar; other: the plain
			// image alone.
			written, dir, other := t.TempDir(), t.TempDir(), t.TempDir()
			src := filepath.Join(dir, "image.tif")
			script := `
import sys
from osgeo import gdal
ds = gdal.GetDriverByName('GTiff').Create(sys.argv[1], 20, 20, 1, gdal.GDT_Byte, [sys.argv[2]])
coeff = lambda *v: ' '.join(list(v) + ['0'] * (20 - len(v)))
ds.SetMetadata({'LINE_OFF': '10', 'SAMP_OFF': '10', 'LAT_OFF': '59.9', 'LONG_OFF': '10.7', 'HEIGHT_OFF': '0',
    'LINE_SCALE': '10', 'SAMP_SCALE': '10', 'LAT_SCALE': '0.01', 'LONG_SCALE': '0.01', 'HEIGHT_SCALE': '100',
    'LINE_NUM_COEFF': coeff('0', '0', '-1'), 'LINE_DEN_COEFF': coeff('1'),
    'SAMP_NUM_COEFF': coeff('0', '1'), 'SAMP_DEN_COEFF': coeff('1')}, 'RPC')
ds.GetRasterBand(1).Fill(7)
ds = None
# The image itself without the model (GTiff also embeds it as a tag):
# GDAL's sidecar moved beside a plain copy.
import os, shutil
side = [n for n in os.listdir(os.path.dirname(sys.argv[1])) if n != 'image.tif']
plain = os.path.join(sys.argv[3], 'image.tif')
ds = gdal.GetDriverByName('GTiff').Create(plain, 20, 20, 1, gdal.GDT_Byte)
ds.GetRasterBand(1).Fill(7)
ds = None
shutil.copy(plain, os.path.join(sys.argv[4], 'image.tif'))
for n in side:
    shutil.copy(os.path.join(os.path.dirname(sys.argv[1]), n), sys.argv[3])
`
			if out, err := exec.Command(cogValidatorPython, "-c", script, filepath.Join(written, "image.tif"), tc.option, dir, other).CombinedOutput(); err != nil {
				t.Skipf("GDAL's Python bindings: %v\n%s", err, out)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.sidecar)); err != nil {
				t.Fatalf("GDAL wrote no %s: %v", tc.sidecar, err)
			}
			s, err := preflight.Local(src, recipe.Recipe{}, probe{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(s.Siblings, tc.sidecar) {
				t.Fatalf("siblings %v lack %s", s.Siblings, tc.sidecar)
			}
			rpc := func(s *preflight.Source) map[string]string {
				ds, err := openSource(s, recipe.Recipe{}, newRecorder())
				if err != nil {
					t.Fatal(err)
				}
				defer ds.Close()
				return ds.Metadatas(godal.Domain("RPC"))
			}
			if md := rpc(s); md["LAT_OFF"] != "59.9" || md["LINE_NUM_COEFF"] == "" {
				t.Errorf("RPC domain read with the sidecar: %v", md)
			}
			// The model is in the sidecar alone: the image without it has none.
			bare, err := preflight.Local(filepath.Join(other, "image.tif"), recipe.Recipe{}, probe{})
			if err != nil {
				t.Fatal(err)
			}
			if md := rpc(bare); len(md) != 0 {
				t.Errorf("RPC domain without the sidecar: %v (the test proves nothing)", md)
			}
		})
	}
}

// TestZipSidecarsAreNotDatasets: a zipped GeoTIFF with its external
// overview, mask and QGIS metadata is one dataset (formats: sidecars
// everywhere), not "several files"; GDAL is given its world file, mask
// and overviews, never the QGIS metadata.
func TestZipSidecarsAreNotDatasets(t *testing.T) {
	dir := t.TempDir()
	tif := filepath.Join(dir, "dem.tif")
	if err := sampledata.WriteRaster(tif, sampledata.Raster{Width: 4, Height: 4, Type: godal.Byte, GeoTransform: [6]float64{0, 1, 0, 0, 0, -1}, Data: make([]byte, 16)}); err != nil {
		t.Fatal(err)
	}
	zp := writeZip(t, filepath.Join(dir, "dem.zip"), []zipEntry{
		{name: "dem.tif", file: tif},
		{name: "dem.tfw", data: []byte("1\n0\n0\n-1\n0.5\n-0.5\n")},
		{name: "dem.tif.ovr", data: []byte("II*\x00")},
		{name: "dem.tif.msk", data: []byte("II*\x00")},
		{name: "dem.qmd", data: []byte("<qgis/>")},
		{name: "dem.rrd", data: []byte("x")},
	})
	s, err := preflight.Local(zp, recipe.Recipe{}, probe{})
	if err != nil {
		t.Fatalf("preflight.Local: %v", err)
	}
	if want := []string{"dem.tif", "dem.rrd", "dem.tfw", "dem.tif.msk", "dem.tif.ovr"}; !slices.Equal(s.Siblings, want) {
		t.Errorf("siblings %v, want %v", s.Siblings, want)
	}
	if s.Driver != "GTiff" {
		t.Errorf("driver %q, want GTiff", s.Driver)
	}
}
