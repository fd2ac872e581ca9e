package gdal

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

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
