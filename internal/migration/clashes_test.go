package migration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

func TestFindClashes(t *testing.T) {
	src := func(bucket string, keys ...string) []Source {
		var out []Source
		for _, k := range keys {
			out = append(out, Source{Bucket: bucket, Key: k})
		}
		return out
	}
	base := recipe.Recipe{}.WithDefaults()
	flatgeobuf := base
	flatgeobuf.VectorFormat = recipe.FormatFlatGeobuf
	for _, tc := range []struct {
		name     string
		inputs   []Source
		recipeOf func(string) recipe.Recipe
		excluded func(string) bool
		want     []string // "destkey: bucket/key bucket/key …"
	}{
		{name: "none", inputs: src("s", "dem.tif", "roads.shp", "a/dem.tif")},
		{name: "two extensions", inputs: src("s", "dem.tif", "dem.img", "x.tif"), want: []string{"dem.tif: s/dem.tif s/dem.img"}},
		{name: "tif and tiff", inputs: src("s", "a/dem.tif", "a/dem.tiff"), want: []string{"a/dem.tif: s/a/dem.tif s/a/dem.tiff"}},
		{name: "two roots", inputs: append(src("a", "dem.tif"), src("b", "dem.tif")...), want: []string{"dem.tif: a/dem.tif b/dem.tif"}},
		{name: "every clash in one pass", inputs: src("s", "dem.tif", "dem.img", "dem.asc", "roads.shp", "roads.gpkg", "roads.geojson", "ok.tif"),
			want: []string{"dem.tif: s/dem.tif s/dem.img s/dem.asc", "roads.parquet: s/roads.shp s/roads.gpkg s/roads.geojson"}},
		{name: "the same file twice", inputs: src("s", "dem.tif", "dem.tif")},
		{name: "sidecars never clash", inputs: src("s", "roads.gml", "roads.xsd", "roads.gfs", "roads.shp.aux.xml", "image.tif", "image.IMD", "image_RPC.TXT")},
		{name: "metadata XML beside its image", inputs: src("s", "image.tif", "image.XML")},
		{name: "an XML of its own still clashes", inputs: src("s", "catalog.tif", "sub/catalog.xml", "catalog.xml", "catalog.img"),
			want: []string{"catalog.tif: s/catalog.tif s/catalog.img"}},
		{name: "XML beside an ASCII grid", inputs: src("s", "a.xml", "a.asc")}, // metadata of the grid
		{name: "a directory source is one source", inputs: src("s", "city.gdb/a00000001.gdbtable", "city.gdb/a00000001.gdbtablx", "city.gdb", "x/city.gdb/gdb", "x/city.gdb/timestamps")},
		{name: "not geospatial", inputs: src("s", "README.txt", "readme.md", "dem.tif")},
		{name: "excluded", inputs: src("s", "dem.tif", "dem.img"), excluded: func(k string) bool { return k == "dem.img" }},
		{name: "a recipe rule separates two vectors", inputs: src("s", "roads.shp", "roads.gpkg"),
			recipeOf: func(k string) recipe.Recipe {
				if k == "roads.gpkg" {
					return flatgeobuf
				}
				return base
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.recipeOf == nil {
				tc.recipeOf = func(string) recipe.Recipe { return base }
			}
			var got []string
			for _, c := range FindClashes(tc.inputs, tc.recipeOf, tc.excluded) {
				s := c.DestKey + ":"
				for _, in := range c.Sources {
					s += " " + in.Bucket + "/" + in.Key
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("FindClashes = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClashingSourcesAreRoutedOthersMigrate: every source of a clash is
// refused before conversion with DestinationConflict naming all the others
// and the ways out, and ends routed to remediation with a state record;
// a source outside the clash converts as usual.
func TestClashingSourcesAreRoutedOthersMigrate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, k := range []string{"dem.tif", "dem.img", "dem.asc", "roads.shp", "roads.gpkg", "ok.tif"} {
		f.put(t, k, "pixels of "+k)
	}
	inputs := []Source{{Bucket: "src", Key: "dem.tif"}, {Bucket: "src", Key: "dem.img"}, {Bucket: "src", Key: "dem.asc"},
		{Bucket: "src", Key: "roads.shp"}, {Bucket: "src", Key: "roads.gpkg"}, {Bucket: "src", Key: "ok.tif"}}
	clashes := f.hash.FindClashes(inputs)
	if len(clashes) != 2 {
		t.Fatalf("clashes %+v, want dem and roads", clashes)
	}
	f.hash.WithClashes(clashes, func(k string) string { return "out/" + k })
	for _, tc := range []struct {
		key, dest string
		others    []string
		rule      bool // the recipe rule for two vectors is offered
	}{
		{"dem.tif", "out/dem.tif", []string{"src/dem.img", "src/dem.asc"}, false},
		{"dem.img", "out/dem.tif", []string{"src/dem.tif", "src/dem.asc"}, false},
		{"dem.asc", "out/dem.tif", []string{"src/dem.tif", "src/dem.img"}, false},
		{"roads.shp", "out/roads.parquet", []string{"src/roads.gpkg"}, true},
		{"roads.gpkg", "out/roads.parquet", []string{"src/roads.shp"}, true},
	} {
		_, err := f.hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: tc.key}, Context: inv("e-"+tc.key, 0)})
		var de *fault.DataError
		if !errors.As(err, &de) || de.Code != fault.DestinationTaken {
			t.Fatalf("%s: %v, want DataError %s", tc.key, err, fault.DestinationTaken)
		}
		msg := err.Error()
		for _, want := range append([]string{"src/" + tc.key, tc.dest, "Rename all but one", `exclude: ["` + tc.key + `"]`}, tc.others...) {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q does not name %q", tc.key, msg, want)
			}
		}
		if got := strings.Contains(msg, "vector: {format: FlatGeobuf}"); got != tc.rule {
			t.Errorf("%s: recipe rule offered %v, want %v: %s", tc.key, got, tc.rule, msg)
		}
		// The state machine catches it and Classify routes it.
		out, err := f.classify.Handle(ctx, ClassifyInput{Source: Source{Bucket: "src", Key: tc.key}, Context: inv("e-"+tc.key, 0),
			Error: CaughtError{Error: "DataError", Cause: err.Error()}})
		if err != nil || out.Route != RouteRemediation || out.Message.Code != string(fault.DestinationTaken) {
			t.Fatalf("%s: classify %+v %v", tc.key, out, err)
		}
		if _, err := f.tracker.Get(ctx, out.Message.JobID); err != nil {
			t.Errorf("%s: no state record for the routed job %s: %v", tc.key, out.Message.JobID, err)
		}
	}
	if hc := f.migrate(t, "e-ok", "ok.tif"); hc.Decision != DecisionConvert {
		t.Fatalf("ok.tif: %s/%s", hc.Decision, hc.Reason)
	}
	if f.engine.calls != 1 {
		t.Errorf("engine calls %d, want 1 (ok.tif alone)", f.engine.calls)
	}
}
