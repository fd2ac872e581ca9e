package migration

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/recipe"
)

const handlerRecipe = `version: 1
exclude: ["scratch/**"]
rules:
  - match: "dem/**"
    raster: {compression: DEFLATE}
  - match: "**/*.shp"
    vector: {format: FlatGeobuf}
`

// withRecipes rewires the fixture's HashCheck with a recipe file.
func withRecipes(t *testing.T, f *fixture, text string) {
	t.Helper()
	file, err := recipe.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Recipes = &recipe.Book{File: file}
	f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, slog.New(slog.DiscardHandler))
}

// TestHashCheckResolvesTheRecipePerKey: the job carries the recipe of its
// key (to Convert, and in its ID and hash); excluded keys are skipped; an
// edit of one rule converts again exactly the keys it matches; a sidecar
// event goes by its main file's key.
func TestHashCheckResolvesTheRecipePerKey(t *testing.T) {
	f := newFixture(t)
	withRecipes(t, f, handlerRecipe)
	for _, k := range []string{"dem/a.tif", "dem/b.img", "top.tif", "roads.shp", "roads.dbf", "scratch/x.tif"} {
		f.put(t, k, "bytes of "+k)
	}
	jobs := map[string]Job{}
	for _, k := range []string{"dem/a.tif", "dem/b.img", "top.tif", "roads.shp"} {
		hc := f.migrate(t, "e1-"+k, k)
		if hc.Decision != DecisionConvert {
			t.Fatalf("%s: %s/%s", k, hc.Decision, hc.Reason)
		}
		jobs[k] = hc.Job
	}
	if jobs["dem/a.tif"].Recipe.Compression != "DEFLATE" || jobs["top.tif"].Recipe.Compression != "ZSTD" {
		t.Errorf("compressions: dem %s, top %s", jobs["dem/a.tif"].Recipe.Compression, jobs["top.tif"].Recipe.Compression)
	}
	if j := jobs["roads.shp"]; j.Recipe.VectorFormat != recipe.FormatFlatGeobuf || !strings.HasSuffix(j.DestKey, ".fgb") {
		t.Errorf("roads.shp: format %s, dest %s", j.Recipe.VectorFormat, j.DestKey)
	}
	if jobs["dem/a.tif"].RecipeHash == jobs["top.tif"].RecipeHash || jobs["dem/a.tif"].RecipeHash != jobs["dem/a.tif"].Recipe.ShortHash() {
		t.Error("the job's recipe hash is not that of its resolved recipe")
	}
	if hc := f.check(t, "e1-scratch", "scratch/x.tif"); hc.Decision != DecisionSkip || hc.Reason != ReasonExcluded {
		t.Errorf("excluded key: %s/%s", hc.Decision, hc.Reason)
	}
	calls := f.engine.calls

	// The dem rule changes: dem/ converts again, the rest is skipped.
	withRecipes(t, f, strings.Replace(handlerRecipe, "compression: DEFLATE", "compression: LZW", 1))
	for k, convert := range map[string]bool{"dem/a.tif": true, "dem/b.img": true, "top.tif": false, "roads.shp": false, "roads.dbf": false} {
		hc := f.migrate(t, "e2-"+k, k)
		if got := hc.Decision == DecisionConvert; got != convert {
			t.Errorf("after the edit, %s: %s/%s, want convert=%v", k, hc.Decision, hc.Reason, convert)
		}
	}
	if f.engine.calls != calls+2 {
		t.Errorf("%d conversions after the edit, want 2", f.engine.calls-calls)
	}
	// A sidecar event resolves under the main file's key: roads.dbf is
	// judged as roads.shp (a FlatGeobuf rule), and an exclusion of the
	// main file holds for its sidecars.
	withRecipes(t, f, handlerRecipe+"  - match: \"**/*.dbf\"\n    vector: {format: GeoParquet}\n")
	f.put(t, "roads.dbf", "attributes-v2")
	hc, err := f.hash.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: "roads.dbf"}, Context: inv("e3", 0)})
	if err != nil || hc.Job.SourceKey != "roads.shp" || hc.Job.Recipe.VectorFormat != recipe.FormatFlatGeobuf {
		t.Fatalf("sidecar event: %+v %v", hc.Job, err)
	}
	f.put(t, "scratch/z.shp", "g")
	f.put(t, "scratch/z.dbf", "a")
	if hc := f.check(t, "e4", "scratch/z.dbf"); hc.Decision != DecisionSkip || hc.Reason != ReasonExcluded {
		t.Errorf("sidecar of an excluded main file: %s/%s", hc.Decision, hc.Reason)
	}
}
