package localrun_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/stac/stactest"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// TestEveryOutputHasASchemaValidItem runs the samples through the local
// state machine (directory store, GDAL) once with GeoParquet and once with
// FlatGeobuf, and checks beside every output a STAC item that validates
// against the official schemas and describes that very file, the report
// naming it, and the dataset's collection covering every item.
func TestEveryOutputHasASchemaValidItem(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	dir, _, keys := samples(t)
	for _, vector := range []string{recipe.FormatGeoParquet, recipe.FormatFlatGeobuf} {
		t.Run(vector, func(t *testing.T) {
			p := newPipeline(t, dir)
			p.cfg.Recipe.VectorFormat = vector
			h := localrun.Handlers{
				HashCheck: migration.NewHashCheck(p.cfg, p.store, p.tracker, migration.StoreFingerprinter{Store: p.store, Threshold: 1 << 30}, quiet),
				// The engine itself, not the counting wrapper: its Describe
				// is what gives items their footprint, bands and columns.
				Convert:  migration.NewConvert(p.cfg, p.store, p.tracker, gdalEngine(t), validate.Output, quiet),
				Promote:  migration.NewPromote(p.cfg, p.store, p.tracker, quiet),
				Classify: migration.NewClassify(p.tracker, nil, quiet),
			}
			exec, err := localrun.NewExecutor(h, localrun.Queues{Remediation: p.remediation, DeadLetter: p.deadLetter})
			if err != nil {
				t.Fatal(err)
			}
			var inputs []migration.Source
			for _, k := range keys {
				inputs = append(inputs, migration.Source{Bucket: "src", Key: k, KeyEncoding: "plain", DatasetID: "samples"})
			}
			outcomes := (&localrun.Runner{Executor: exec, Workers: 2}).Run(context.Background(), inputs)

			formats := map[string]int{}
			var items []string
			for _, o := range outcomes {
				if o.Status != localrun.StatusCompleted {
					continue
				}
				if len(o.STACItems) != len(o.Outputs) {
					t.Fatalf("%s: report names items %v for outputs %v", o.Key, o.STACItems, o.Outputs)
				}
				for i, out := range o.Outputs {
					if o.STACItems[i] != out+stac.ItemSuffix {
						t.Errorf("%s: item %s for output %s", o.Key, o.STACItems[i], out)
					}
					formats[checkItem(t, v, p.destDir, out, o.STACItems[i])]++
					items = append(items, o.STACItems[i])
				}
			}
			want := map[string]int{stac.MediaCOG: 4, stac.MediaGeoParquet: 4}
			if vector == recipe.FormatFlatGeobuf {
				want = map[string]int{stac.MediaCOG: 4, stac.MediaFlatGeobuf: 4}
			}
			if len(formats) != len(want) || formats[stac.MediaCOG] != want[stac.MediaCOG] || formats[stac.MediaGeoParquet] != want[stac.MediaGeoParquet] || formats[stac.MediaFlatGeobuf] != want[stac.MediaFlatGeobuf] {
				t.Errorf("items by media type %v, want %v", formats, want)
			}
			// Every item on disk is one the report names: none left over.
			var onDisk []string
			filepath.WalkDir(p.destDir, func(f string, d os.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(f, stac.ItemSuffix) {
					rel, _ := filepath.Rel(p.destDir, f)
					onDisk = append(onDisk, filepath.ToSlash(rel))
				}
				return nil
			})
			if len(onDisk) != len(items) {
				t.Errorf("items on disk %v, in the report %v", onDisk, items)
			}
			checkCollection(t, p.destDir, items)
		})
	}
}

// checkItem validates the item of one output and checks it describes
// that file; it returns the asset's media type.
func checkItem(t *testing.T, v *stactest.Validator, destDir, out, itemKey string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(destDir, filepath.FromSlash(itemKey)))
	if err != nil {
		t.Fatalf("no item beside %s: %v", out, err)
	}
	if err := v.ValidateItem(body); err != nil {
		t.Fatalf("%s: %v\n%s", itemKey, err, body)
	}
	var item struct {
		ID         string
		BBox       []float64
		Properties map[string]any
		Assets     map[string]map[string]any
		Links      []stac.Link
	}
	if err := json.Unmarshal(body, &item); err != nil {
		t.Fatal(err)
	}
	a := item.Assets[stac.DataAssetKey]
	href, _ := a["href"].(string)
	target := path.Join(path.Dir(itemKey), href)
	if target != out {
		t.Errorf("%s: asset href %s resolves to %s, want %s", itemKey, href, target, out)
	}
	fi, err := os.Stat(filepath.Join(destDir, filepath.FromSlash(out)))
	if err != nil {
		t.Fatal(err)
	}
	if a["file:checksum"] != stac.Multihash(sha(t, filepath.Join(destDir, filepath.FromSlash(out)))) || a["file:size"] != float64(fi.Size()) {
		t.Errorf("%s: checksum %v size %v do not match %s", itemKey, a["file:checksum"], a["file:size"], out)
	}
	if len(item.BBox) != 4 || item.Properties["proj:code"] == nil {
		t.Errorf("%s: bbox %v proj:code %v", itemKey, item.BBox, item.Properties["proj:code"])
	}
	sw, _ := item.Properties["processing:software"].(map[string]any)
	if sw["GDAL"] == nil || sw["PROJ"] == nil || sw["geomigrate"] == nil {
		t.Errorf("%s: processing:software %v", itemKey, sw)
	}
	media, _ := a["type"].(string)
	switch media {
	case stac.MediaCOG:
		if bands, _ := a["raster:bands"].([]any); len(bands) == 0 || item.Properties["proj:shape"] == nil || item.Properties["proj:transform"] == nil {
			t.Errorf("%s: raster:bands %v shape %v", itemKey, a["raster:bands"], item.Properties["proj:shape"])
		}
	case stac.MediaGeoParquet:
		if cols, _ := item.Properties["table:columns"].([]any); len(cols) < 2 || item.Properties["table:row_count"] == nil {
			t.Errorf("%s: table:columns %v row_count %v", itemKey, item.Properties["table:columns"], item.Properties["table:row_count"])
		}
	}
	for _, l := range item.Links {
		if l.Rel == "collection" {
			if got := path.Join(path.Dir(itemKey), l.Href); got != migration.CollectionKey("", "samples") {
				t.Errorf("%s: collection link %s resolves to %s", itemKey, l.Href, got)
			}
		}
	}
	return media
}

func checkCollection(t *testing.T, destDir string, items []string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(destDir, filepath.FromSlash(migration.CollectionKey("", "samples"))))
	if err != nil {
		t.Fatal(err)
	}
	coll, err := stac.ParseCollection(body)
	if err != nil {
		t.Fatal(err)
	}
	cb := coll.Extent.Spatial.BBox[0]
	for _, k := range items {
		b, err := os.ReadFile(filepath.Join(destDir, filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		var item struct{ BBox []float64 }
		json.Unmarshal(b, &item)
		if item.BBox[0] < cb[0] || item.BBox[1] < cb[1] || item.BBox[2] > cb[2] || item.BBox[3] > cb[3] {
			t.Errorf("collection bbox %v does not cover %s %v", cb, k, item.BBox)
		}
	}
	if cb[0] == -180 && cb[2] == 180 {
		t.Errorf("collection bbox %v is still the whole world", cb)
	}
}
