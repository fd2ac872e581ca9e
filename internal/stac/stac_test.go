package stac_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/stac/stactest"
)

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func ptr[T any](v T) *T { return &v }

func processing() stac.Processing {
	return stac.Processing{
		Software:   map[string]string{"geomigrate": "v0.9.0"},
		RecipeHash: "0123456789abcdef", Recipe: `{"block_size":512,"v":1}`,
		SourceKey: "archive/dem.img", SourceSHA256: sha,
	}
}

func cogInput() stac.ItemInput {
	return stac.ItemInput{
		ID: "rasters/dem.tif", Collection: "archive", CollectionHref: "../collections/archive/collection.json",
		RootHref: "../catalog.json", SelfHref: "./dem.tif.stac.json",
		Asset: stac.Asset{Href: "./dem.tif", Format: stac.FormatCOG, SHA256: sha, Size: 1234},
		Description: &stac.Description{
			EPSG: 32633, BBox: []float64{14.9, 50.0, 15.1, 50.2}, NativeBBox: []float64{500000, 5540000, 512000, 5560000},
			Shape: []int{200, 120}, Transform: []float64{100, 0, 500000, 0, -100, 5560000},
			Bands: []stac.Band{
				{DataType: "float32", Nodata: ptr(-9999.0), Statistics: &stac.Statistics{Minimum: 1, Maximum: 900, Mean: 300, StdDev: 20, ValidPercent: ptr(98.5)}},
				{DataType: "float32", Nodata: ptr(math.NaN())},
			},
			Software: map[string]string{"GDAL": "3.6.2", "PROJ": "9.1.1"},
		},
		Processing: processing(), Datetime: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func parquetInput() stac.ItemInput {
	return stac.ItemInput{
		ID: "vectors/roads.parquet", Collection: "archive", CollectionHref: "../collections/archive/collection.json",
		Asset: stac.Asset{Href: "./roads.parquet", Format: stac.FormatGeoParquet, SHA256: sha, Size: 99},
		Description: &stac.Description{
			EPSG: 4326, BBox: []float64{-1, -1, 1, 1}, NativeBBox: []float64{-1, -1, 1, 1},
			Columns:  []stac.Column{{Name: "geometry", Type: "binary", Description: "WKB"}, {Name: "name", Type: "string"}},
			RowCount: ptr(int64(42)), PrimaryGeometry: "geometry",
		},
		Processing: processing(), Datetime: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func fgbInput() stac.ItemInput {
	return stac.ItemInput{
		ID: "roads.fgb", Collection: "archive", CollectionHref: "./collections/archive/collection.json",
		Asset: stac.Asset{Href: "./roads.fgb", Format: stac.FormatFlatGeobuf, SHA256: sha, Size: 7},
		Description: &stac.Description{
			WKT2: `PROJCRS["local"]`, BBox: []float64{170, -10, 179.5, 10}, NativeBBox: []float64{0, 0, 10, 10},
		},
		Processing: processing(), Datetime: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func itemJSON(t *testing.T, in stac.ItemInput) []byte {
	t.Helper()
	it, err := stac.NewItem(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := it.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestItemsValidateAgainstOfficialSchemas(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		in        stac.ItemInput
		mediaType string
		exts      []string
	}{
		{"COG", cogInput(), stac.MediaCOG, []string{stac.ExtFile, stac.ExtProcessing, stac.ExtProjection, stac.ExtRaster}},
		{"GeoParquet", parquetInput(), stac.MediaGeoParquet, []string{stac.ExtFile, stac.ExtProcessing, stac.ExtProjection, stac.ExtTable}},
		{"FlatGeobuf", fgbInput(), stac.MediaFlatGeobuf, []string{stac.ExtFile, stac.ExtProcessing, stac.ExtProjection}},
		{"no description", func() stac.ItemInput { in := fgbInput(); in.Description = nil; return in }(), stac.MediaFlatGeobuf, []string{stac.ExtFile, stac.ExtProcessing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := itemJSON(t, tc.in)
			if err := v.ValidateItem(b); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			var doc struct {
				Extensions []string `json:"stac_extensions"`
				Assets     map[string]map[string]any
				Properties map[string]any
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if strings.Join(doc.Extensions, " ") != strings.Join(tc.exts, " ") {
				t.Errorf("extensions %v, want %v", doc.Extensions, tc.exts)
			}
			a := doc.Assets[stac.DataAssetKey]
			if a["type"] != tc.mediaType || a["file:checksum"] != "1220"+sha || a["file:size"] != float64(tc.in.Asset.Size) {
				t.Errorf("asset %v", a)
			}
			if _, err := time.Parse(time.RFC3339, doc.Properties["datetime"].(string)); err != nil {
				t.Errorf("datetime: %v", err)
			}
		})
	}
}

// The validator must be able to fail: each mutation breaks one rule of
// the core or of an extension schema.
func TestSchemaViolationsAreCaught(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		in     stac.ItemInput
		mutate func(m map[string]any)
		want   string
	}{
		{"missing id (core)", cogInput(), func(m map[string]any) { delete(m, "id") }, "STAC item schema"},
		{"missing datetime (core)", cogInput(), func(m map[string]any) { delete(m["properties"].(map[string]any), "datetime") }, "STAC item schema"},
		{"collection without its field (core)", cogInput(), func(m map[string]any) { delete(m, "collection") }, "STAC item schema"},
		{"bbox of 3 numbers (core)", cogInput(), func(m map[string]any) { m["bbox"] = []float64{1, 2, 3} }, "STAC item schema"},
		{"checksum not hex (file)", cogInput(), func(m map[string]any) { asset(m)["file:checksum"] = "sha256:abc" }, "file/v2.1.0"},
		{"unknown data type (raster)", cogInput(), func(m map[string]any) {
			asset(m)["raster:bands"].([]any)[0].(map[string]any)["data_type"] = "float128"
		}, "raster/v1.0.0"},
		{"shape of 3 (projection)", cogInput(), func(m map[string]any) { m["properties"].(map[string]any)["proj:shape"] = []int{1, 2, 3} }, "projection/v2.0.0"},
		{"code as a number (projection)", cogInput(), func(m map[string]any) { m["properties"].(map[string]any)["proj:code"] = 4326 }, "projection/v2.0.0"},
		{"v1's proj:epsg (projection)", cogInput(), func(m map[string]any) { m["properties"].(map[string]any)["proj:epsg"] = 4326 }, "projection/v2.0.0"},
		{"link without href (core)", cogInput(), func(m map[string]any) { m["links"] = []map[string]any{{"rel": "self"}} }, "STAC item schema"},
		{"software version not text (processing)", cogInput(), func(m map[string]any) {
			m["properties"].(map[string]any)["processing:software"] = map[string]any{"GDAL": 3}
		}, "processing/v1.1.0"},
		{"missing table:columns (table)", parquetInput(), func(m map[string]any) { delete(m["properties"].(map[string]any), "table:columns") }, "table/v1.0.0"},
		{"undeclared extension schema", cogInput(), func(m map[string]any) {
			m["stac_extensions"] = append(m["stac_extensions"].([]any), "https://stac-extensions.github.io/eo/v1.1.0/schema.json")
		}, "no vendored schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(itemJSON(t, tc.in), &m); err != nil {
				t.Fatal(err)
			}
			tc.mutate(m)
			b, _ := json.Marshal(m)
			err := v.ValidateItem(b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func asset(m map[string]any) map[string]any {
	return m["assets"].(map[string]any)[stac.DataAssetKey].(map[string]any)
}

func TestNewItemRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*stac.ItemInput)
	}{
		{"no id", func(in *stac.ItemInput) { in.ID = "" }},
		{"unknown format", func(in *stac.ItemInput) { in.Asset.Format = "GTiff" }},
		{"short checksum", func(in *stac.ItemInput) { in.Asset.SHA256 = "abc" }},
		{"no datetime", func(in *stac.ItemInput) { in.Datetime = time.Time{} }},
		{"bbox not in degrees", func(in *stac.ItemInput) { in.Description.BBox = []float64{500000, 0, 600000, 10} }},
		{"bbox far past the antimeridian", func(in *stac.ItemInput) { in.Description.BBox = []float64{-200, 0, 10, 10} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cogInput()
			tc.mutate(&in)
			if _, err := stac.NewItem(in); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestNewItemClampsAHalfPixelOvershoot: a global grid's edges half a pixel
// past the antimeridian and the poles give a bbox on the globe, not an
// error (which routed such files to the dead-letter queue).
func TestNewItemClampsAHalfPixelOvershoot(t *testing.T) {
	in := cogInput()
	in.Description.BBox = []float64{-180.5, -90.5, 180.5, 90.5}
	it, err := stac.NewItem(in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(it.BBox) != "[-180 -90 180 90]" {
		t.Errorf("bbox %v, want [-180 -90 180 90]", it.BBox)
	}
}

func TestNewItemIsDeterministic(t *testing.T) {
	a, b := itemJSON(t, cogInput()), itemJSON(t, cogInput())
	if string(a) != string(b) {
		t.Fatal("two items of the same input differ")
	}
}

func TestRelativeHref(t *testing.T) {
	for _, tc := range []struct{ from, target, want string }{
		{"dem.tif.stac.json", "dem.tif", "./dem.tif"},
		{"a/b/dem.tif.stac.json", "a/b/dem.tif", "./dem.tif"},
		{"a/b/x.stac.json", "collections/d/collection.json", "../../collections/d/collection.json"},
		{"x.stac.json", "collections/d/collection.json", "./collections/d/collection.json"},
		{"p/a/x.stac.json", "p/collections/d/collection.json", "../collections/d/collection.json"},
		// Keys are not URIs: each segment is percent-encoded, and resolving
		// the href against the item's URL gives the target key back.
		{"in/a b/c+d.tif.stac.json", "in/a b/c+d.tif", "./c+d.tif"},
		{"in/x.stac.json", "in/a b/100% #1?.tif", "./a%20b/100%25%20%231%3F.tif"},
		{"in/München/x.stac.json", "in/München/dem.tif", "./dem.tif"},
		{"x.stac.json", "München/dem (1m).tif", "./M%C3%BCnchen/dem%20%281m%29.tif"},
	} {
		got := stac.RelativeHref(tc.from, tc.target)
		if got != tc.want {
			t.Errorf("RelativeHref(%q, %q) = %q, want %q", tc.from, tc.target, got, tc.want)
		}
		base, err := url.Parse("s3://bucket/" + strings.ReplaceAll(url.PathEscape(tc.from), "%2F", "/"))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := url.Parse(got)
		if err != nil {
			t.Fatalf("href %q is no URI reference: %v", got, err)
		}
		if resolved := base.ResolveReference(ref).Path; resolved != "/"+tc.target {
			t.Errorf("href %q from %q resolves to %q, want %q", got, tc.from, resolved, "/"+tc.target)
		}
	}
}

func TestCollectionInclude(t *testing.T) {
	c := stac.NewCollection("archive")
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		bbox    []float64
		when    time.Time
		changed bool
		want    []float64
		start   string
	}{
		{[]float64{1, 2, 3, 4}, t0, true, []float64{1, 2, 3, 4}, "2026-01-02T00:00:00Z"},
		{[]float64{1.5, 2.5, 2, 3}, t0.Add(time.Hour), false, []float64{1, 2, 3, 4}, "2026-01-02T00:00:00Z"},
		{[]float64{0, 2, 3, 5}, t0.Add(time.Hour), true, []float64{0, 2, 3, 5}, "2026-01-02T00:00:00Z"},
		{nil, t0.Add(-time.Hour), true, []float64{0, 2, 3, 5}, "2026-01-01T23:00:00Z"},
	}
	for i, s := range steps {
		if got := c.Include(s.bbox, s.when); got != s.changed {
			t.Errorf("step %d: changed %v, want %v", i, got, s.changed)
		}
		if b := c.Extent.Spatial.BBox[0]; jsonOf(b) != jsonOf(s.want) {
			t.Errorf("step %d: bbox %v, want %v", i, b, s.want)
		}
		if got := *c.Extent.Temporal.Interval[0][0]; got != s.start {
			t.Errorf("step %d: start %s, want %s", i, got, s.start)
		}
		if c.Extent.Temporal.Interval[0][1] != nil {
			t.Errorf("step %d: the interval's end is not open", i)
		}
	}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := stac.ParseCollection(b)
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(back) != jsonOf(c) {
		t.Fatalf("round trip changed the collection:\n%s\n%s", jsonOf(back), jsonOf(c))
	}
	if _, err := stac.ParseCollection([]byte(`{"type":"Feature"}`)); err == nil {
		t.Fatal("a feature parsed as a collection")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An assigned CRS is named in the item (a property and the lineage
// sentence), and the item still validates.
func TestItemNamesAnAssignedCRS(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	in := cogInput()
	in.Processing.AssignedCRS = "EPSG:4326"
	b := itemJSON(t, in)
	if err := v.ValidateItem(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var doc struct{ Properties map[string]any }
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Properties[stac.PropAssignedCRS] != "EPSG:4326" {
		t.Errorf("%s = %v", stac.PropAssignedCRS, doc.Properties[stac.PropAssignedCRS])
	}
	if l, _ := doc.Properties["processing:lineage"].(string); !strings.Contains(l, "assigned the CRS EPSG:4326") {
		t.Errorf("lineage %q", l)
	}
	var plain struct{ Properties map[string]any }
	if err := json.Unmarshal(itemJSON(t, cogInput()), &plain); err != nil {
		t.Fatal(err)
	}
	if _, has := plain.Properties[stac.PropAssignedCRS]; has {
		t.Error("an item without an assigned CRS names one")
	}
}

// TestItemLinksAndProjectionCode: an item names itself, the root, its
// parent and its collection by relative hrefs, its CRS by proj:code
// (projection v2.0.0), and never writes proj:projjson (whose schema,
// PROJJSON v0.7, is not vendored: stactest.ProjJSONv07).
func TestItemLinksAndProjectionCode(t *testing.T) {
	var doc struct {
		Links      []stac.Link
		Properties map[string]any
	}
	if err := json.Unmarshal(itemJSON(t, cogInput()), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range doc.Links {
		got[l.Rel] = l.Href
	}
	want := map[string]string{"self": "./dem.tif.stac.json", "root": "../catalog.json", "parent": "../collections/archive/collection.json", "collection": "../collections/archive/collection.json"}
	if jsonOf(got) != jsonOf(want) {
		t.Errorf("links %v, want %v", got, want)
	}
	if doc.Properties["proj:code"] != "EPSG:32633" {
		t.Errorf("proj:code %v", doc.Properties["proj:code"])
	}
	for _, in := range []stac.ItemInput{cogInput(), parquetInput(), fgbInput()} {
		var d struct{ Properties map[string]any }
		if err := json.Unmarshal(itemJSON(t, in), &d); err != nil {
			t.Fatal(err)
		}
		if _, has := d.Properties["proj:projjson"]; has {
			t.Errorf("%s writes proj:projjson", in.ID)
		}
		if _, has := d.Properties["proj:epsg"]; has {
			t.Errorf("%s writes projection v1's proj:epsg", in.ID)
		}
	}
}

// TestTreeDocumentsValidate: the root catalog and a collection with its
// links validate against the official STAC 1.0.0 schemas; links are
// added once and kept in a stable order.
func TestTreeDocumentsValidate(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	cat := stac.NewCatalog()
	if !cat.AddChild("./collections/b/collection.json", "b") || !cat.AddChild("./collections/a/collection.json", "a") || cat.AddChild("./collections/a/collection.json", "a") {
		t.Fatal("AddChild: a new link not added, or a known one added again")
	}
	coll := stac.NewCollection("a")
	coll.SetNavigation("./collection.json", "../../catalog.json")
	coll.Include([]float64{1, 2, 3, 4}, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	for _, h := range []string{"../../z.tif.stac.json", "../../a.tif.stac.json", "../../z.tif.stac.json"} {
		coll.AddItem(h)
	}
	cb, err := cat.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateCatalog(cb); err != nil {
		t.Fatalf("%v\n%s", err, cb)
	}
	kb, err := coll.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateCollection(kb); err != nil {
		t.Fatalf("%v\n%s", err, kb)
	}
	var rels []string
	for _, l := range coll.Links {
		rels = append(rels, l.Rel+" "+l.Href)
	}
	if want := "self ./collection.json|root ../../catalog.json|parent ../../catalog.json|item ../../a.tif.stac.json|item ../../z.tif.stac.json"; strings.Join(rels, "|") != want {
		t.Errorf("links %q, want %q", strings.Join(rels, "|"), want)
	}
	back, err := stac.ParseCatalog(cb)
	if err != nil || jsonOf(back) != jsonOf(cat) {
		t.Fatalf("catalog round trip: %v", err)
	}
	// The validators can fail: a collection without a license, a catalog
	// without links.
	bad := strings.Replace(string(kb), `"license"`, `"licence"`, 1)
	if err := v.ValidateCollection([]byte(bad)); err == nil {
		t.Error("a collection without license validated")
	}
	if err := v.ValidateCatalog([]byte(`{"type":"Catalog","stac_version":"1.0.0","id":"x","description":"d"}`)); err == nil {
		t.Error("a catalog without links validated")
	}
}
