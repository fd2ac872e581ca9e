package migration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

// TestSidecarListing: listSidecars finds what GDAL reads beside a main
// file, including the names that do not start with "stem." (image_RPC.TXT),
// and mainOf finds the main file back from each of them.
func TestSidecarListing(t *testing.T) {
	ctx := context.Background()
	store := memstore.New("src")
	for _, k := range []string{
		"image.tif", "image.IMD", "image.RPB", "image_RPC.TXT", "image.XML", "image.tif.aux.xml",
		"image2.tif", "image2_RPC.TXT", "imagery.xml",
		"roads.gml", "roads.xsd", "roads.gfs",
		"roads.shp", "roads.dbf",
		"lone.xml", "lone_RPC.TXT",
		"d/image.tif", "d/image.XML",
	} {
		if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "src", Key: k, Body: strings.NewReader(k), Size: int64(len(k))}); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(objs []objectstore.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.Key)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		main string
		want []string
	}{
		{"image.tif", []string{"image.IMD", "image.RPB", "image.XML", "image.tif.aux.xml", "image_RPC.TXT"}},
		{"image2.tif", []string{"image2_RPC.TXT"}},
		{"roads.gml", []string{"roads.gfs", "roads.xsd"}},
		{"roads.shp", []string{"roads.dbf"}},
		{"lone.xml", nil},
		{"d/image.tif", []string{"d/image.XML"}},
	} {
		got, err := listSidecars(ctx, store, "src", tc.main)
		if err != nil {
			t.Fatal(err)
		}
		if g := keys(got); !slices.Equal(g, tc.want) {
			t.Errorf("listSidecars(%s) = %v, want %v", tc.main, g, tc.want)
		}
	}
	for _, tc := range []struct{ sidecar, main string }{
		{"image.IMD", "image.tif"},
		{"image.RPB", "image.tif"},
		{"image_RPC.TXT", "image.tif"},
		{"image.XML", "image.tif"},
		{"image.tif.aux.xml", "image.tif"},
		{"image2_RPC.TXT", "image2.tif"},
		{"roads.xsd", "roads.gml"},
		{"roads.gfs", "roads.gml"},
		{"roads.dbf", "roads.shp"},
		{"d/image.XML", "d/image.tif"},
		{"lone_RPC.TXT", ""}, // lone.xml is no raster
		{"imagery.xml", ""},
	} {
		got, err := mainOf(ctx, store, "src", tc.sidecar)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != tc.main {
			t.Errorf("mainOf(%s) = %q, want %q", tc.sidecar, got.Key, tc.main)
		}
	}
}

// TestConditionalSidecars: image.XML beside image.tif is part of
// image.tif's job (an edit of it migrates image.tif again); an .xml with no
// raster of its stem stays a candidate of its own.
func TestConditionalSidecars(t *testing.T) {
	f := newFixture(t)
	f.put(t, "image.tif", "pixels")
	f.put(t, "image.XML", "<isd>v1</isd>")
	first := f.migrate(t, "e1", "image.tif")
	if first.Decision != DecisionConvert {
		t.Fatalf("first: %s/%s", first.Decision, first.Reason)
	}
	if _, ok := first.Job.SidecarETags["image.XML"]; !ok {
		t.Errorf("image.XML is not part of the job: %v", first.Job.SidecarETags)
	}
	f.put(t, "image.XML", "<isd>v2</isd>")
	out := f.check(t, "e2", "image.XML")
	if out.Decision != DecisionConvert || out.Job.SourceKey != "image.tif" || out.Job.SourceSHA256 == first.Job.SourceSHA256 {
		t.Fatalf("an edit of image.XML: %s/%s for %s", out.Decision, out.Reason, out.Job.SourceKey)
	}
	f.put(t, "catalog.xml", "<catalog/>")
	out = f.check(t, "e3", "catalog.xml")
	if out.Decision != DecisionConvert || out.Job.SourceKey != "catalog.xml" {
		t.Fatalf("an .xml without a raster beside it: %s/%s for %s", out.Decision, out.Reason, out.Job.SourceKey)
	}
}
