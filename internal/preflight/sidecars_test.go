package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSiblingsFollowTheRegistry: GDAL is given exactly the sidecars that
// internal/formats says belong to the main file and are read by GDAL. The
// external mask and overviews (.msk, .ovr) are given to GDAL (the mask
// reaches the output), QGIS's .qmd is not; and a sidecar extension
// belongs only to its own kinds of main file.
func TestSiblingsFollowTheRegistry(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{
		"land.img", "land.rrd", "land.ige", "land.img.aux.xml", "land.ovr", "land.img.msk", "land.qmd", "land.dbf",
		"roads.shp", "roads.shx", "roads.DBF", "roads.prj", "roads.qmd", "roads.tfw", "Roads.cpg",
		"scene.tif", "scene.IMD", "scene.RPB", "scene_RPC.TXT", "scene.XML", "scene.xsd", "scene2.tif",
		"rivers.gml", "rivers.xsd", "rivers.gfs", "rivers.XML",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for main, want := range map[string][]string{
		"land.img":  {"land.img", "land.ige", "land.img.aux.xml", "land.img.msk", "land.ovr", "land.rrd"},
		"roads.shp": {"roads.shp", "roads.DBF", "roads.prj", "roads.shx"},
		// Satellite metadata, image_RPC.TXT included; not a GML schema.
		"scene.tif": {"scene.tif", "scene.IMD", "scene.RPB", "scene.XML", "scene_RPC.TXT"},
		// A GML file's schema, not raster metadata.
		"rivers.gml": {"rivers.gml", "rivers.gfs", "rivers.xsd"},
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

// TestExtHintNamesTheRegistrysDrivers: the refusal of an unrecognised file
// says which driver its extension (per internal/formats) promised.
func TestExtHintNamesTheRegistrysDrivers(t *testing.T) {
	for name, want := range map[string]string{
		"dem.tif":      " (its extension .tif suggests GTiff or COG: the file is mislabelled or damaged)",
		"x.shp.zip":    " (its extension .shp.zip suggests ESRI Shapefile: the file is mislabelled or damaged)",
		"survey.csv":   " (its extension .csv suggests CSV: the file is mislabelled or damaged)",
		"notes.xyz":    " (its extension .xyz suggests otherwise: the file is mislabelled or damaged)",
		"no-extension": "",
	} {
		if got := extHint(name); got != want {
			t.Errorf("extHint(%q) = %q, want %q", name, got, want)
		}
	}
}
