package gdal

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// TestSiblingsFollowTheRegistry: GDAL is given exactly the sidecars that
// internal/formats says belong to the main file and are read by GDAL. The
// former gdal list gave .rrd/.ige (agreed) but not .ovr/.msk/.qmd, which
// HashCheck counted as sidecars; and it gave any sidecar extension beside
// any main file.
func TestSiblingsFollowTheRegistry(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{
		"land.img", "land.rrd", "land.ige", "land.img.aux.xml", "land.ovr", "land.img.msk", "land.qmd", "land.dbf",
		"roads.shp", "roads.shx", "roads.DBF", "roads.prj", "roads.qmd", "roads.tfw", "Roads.cpg",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for main, want := range map[string][]string{
		"land.img":  {"land.img", "land.ige", "land.img.aux.xml", "land.rrd"},
		"roads.shp": {"roads.shp", "roads.DBF", "roads.prj", "roads.shx"},
	} {
		got, size := siblings(filepath.Join(dir, main), 1)
		if !slices.Equal(got, want) {
			t.Errorf("siblings(%s) = %v, want %v", main, got, want)
		}
		if size != int64(len(want)) {
			t.Errorf("siblings(%s) size %d, want %d", main, size, len(want))
		}
	}
}

// TestZipSidecarsAreNotDatasets: a zipped GeoTIFF with its external
// overview, mask and QGIS metadata is one dataset (formats: sidecars
// everywhere), not "several files"; GDAL is given only its world file.
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
	s, err := preflightZip(zp, recipe.Recipe{})
	if err != nil {
		t.Fatalf("preflightZip: %v", err)
	}
	if want := []string{"dem.tif", "dem.rrd", "dem.tfw"}; !slices.Equal(s.siblings, want) {
		t.Errorf("siblings %v, want %v", s.siblings, want)
	}
	if s.driver != "GTiff" {
		t.Errorf("driver %q, want GTiff", s.driver)
	}
}

// TestExtHintNamesTheRegistrysDrivers: the refusal of an unrecognised file
// says which driver its extension (per internal/formats) promised.
func TestExtHintNamesTheRegistrysDrivers(t *testing.T) {
	for name, want := range map[string]string{
		"dem.tif":      " (its extension .tif suggests GTiff or COG: the file is mislabelled or damaged)",
		"x.shp.zip":    " (its extension .shp.zip suggests ESRI Shapefile: the file is mislabelled or damaged)",
		"survey.csv":   " (its extension .csv suggests otherwise: the file is mislabelled or damaged)",
		"no-extension": "",
	} {
		if got := extHint(name); got != want {
			t.Errorf("extHint(%q) = %q, want %q", name, got, want)
		}
	}
}
