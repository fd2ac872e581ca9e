package gdal

import (
	"os"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// The lineage the recipe carries is in the COG's metadata and in the
// GeoParquet key-value metadata (with the layer), read from the file alone.
func TestLineageInTheFile(t *testing.T) {
	r := gpRecipe()
	r.ToolVersion, r.SourceSHA256, r.SourceFingerprint = "test", strings.Repeat("cd", 32), "sha256"
	want := r.Lineage()
	if want.RecipeHash != r.ShortHash() || want.EngineVersion != engine.Version() {
		t.Fatalf("lineage %+v", want)
	}

	cog := convertOK(t, sample(t, "dem_utm33.tif").Path, r)
	got, err := ReadCOGLineage(cog[0].Path)
	if err != nil || got != want {
		t.Errorf("COG lineage %+v (%v), want %+v", got, err, want)
	}

	pq := convertOK(t, sample(t, "parks.geojson").Path, r)
	f, err := os.Open(pq[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	info, err := geoparquet.ReadInfo(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	got, err = recipe.ParseLineage(info.KeyValue[geoparquet.LineageKey])
	want.Layer = pq[0].Layer
	if err != nil || got != want || want.Layer == "" {
		t.Errorf("GeoParquet lineage %+v (%v), want %+v", got, err, want)
	}
}
