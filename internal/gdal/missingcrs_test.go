package gdal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// TestMissingCRSSaysHowToFixItHere: a source without a CRS is told the
// fixes that need no new upload (the recipe's assign_crs, a sidecar), and
// the sidecar named for a raster is one GDAL reads: with it the file
// converts.
func TestMissingCRSSaysHowToFixItHere(t *testing.T) {
	noCRSShapefile := func(t *testing.T, dir string) string {
		src := writeFile(t, t.TempDir(), "in.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"a":1},"geometry":{"type":"Point","coordinates":[500000,5100000]}}]}`)
		shp := filepath.Join(dir, "pts.shp")
		run(t, "ogr2ogr", "-f", "ESRI Shapefile", shp, src)
		if err := os.Remove(filepath.Join(dir, "pts.prj")); err != nil {
			t.Fatal(err)
		}
		return shp
	}
	noCRSRaster := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "no_crs.tif")
		copyFile(t, sample(t, "no_crs.tif").Path, p)
		return p
	}
	tests := []struct {
		name    string
		make    func(t *testing.T, dir string) string
		sidecar string // written beside the source: then it converts
	}{
		{name: "raster", make: noCRSRaster},
		{name: "shapefile without .prj", make: noCRSShapefile},
		{name: "raster with the advised .aux.xml", make: noCRSRaster, sidecar: "no_crs.tif.aux.xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := tt.make(t, dir)
			if tt.sidecar != "" {
				writeFile(t, dir, tt.sidecar, "<PAMDataset><SRS>EPSG:32633</SRS></PAMDataset>")
			}
			_, err := engine.Convert(context.Background(), src, t.TempDir(), fgbRecipe())
			if tt.sidecar != "" {
				if err != nil {
					t.Fatalf("with %s beside it: %v", tt.sidecar, err)
				}
				return
			}
			msg := fmt.Sprint(err)
			if fault.CodeOf(err) != fault.MissingCRS || !strings.Contains(msg, `assign_crs: "EPSG:xxxx"`) ||
				!strings.Contains(msg, ".aux.xml") || strings.Contains(msg, "upload again") {
				t.Errorf("got %v: want MissingCRS naming assign_crs and a sidecar, not an upload", err)
			}
		})
	}
}
