package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/stac/stactest"
)

// describingEngine is the fake engine with a Describe: the footprint of
// a source is given by its first bytes ("x0,y0" → a 1° square there).
type describingEngine struct{ fakeEngine }

func (e *describingEngine) Describe(_ context.Context, path, format string) (stac.Description, error) {
	var x, y float64
	if _, err := fmt.Sscanf(strings.TrimPrefix(readString(path), "COG:"), "%g,%g", &x, &y); err != nil {
		return stac.Description{}, err
	}
	return stac.Description{EPSG: 4326, BBox: []float64{x, y, x + 1, y + 1}, NativeBBox: []float64{x, y, x + 1, y + 1}, Shape: []int{1, 1},
		Transform: []float64{1, 0, x, 0, -1, y + 1}, Bands: []stac.Band{{DataType: "uint8"}}}, nil
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func newDescribingFixture(t *testing.T) *fixture {
	f := newFixture(t)
	quiet := slog.New(slog.DiscardHandler)
	f.convert = NewConvert(f.cfg, f.store, f.tracker, &describingEngine{}, fakeValidator, quiet)
	return f
}

func (f *fixture) object(t *testing.T, key string) ([]byte, objectstore.Object) {
	t.Helper()
	head, err := f.store.Head(context.Background(), "dest", key)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	rc, err := f.store.Open(context.Background(), "dest", key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b, head
}

// Every promoted output has a schema-valid item beside it, whose asset
// is that output (href, checksum, size) and whose object carries the
// output's lineage metadata; the dataset's collection covers them all.
func TestPromotedOutputsHaveItemsAndACollection(t *testing.T) {
	v, err := stactest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		fixture  func(*testing.T) *fixture
		wantBBox []float64
	}{
		{"engine that describes", newDescribingFixture, []float64{10, 40, 13, 42}},
		{"engine that does not", newFixture, []float64{-180, -90, 180, 90}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fixture(t)
			f.put(t, "a/one.img", "10,40")
			f.put(t, "b/two.img", "12,41")
			for _, k := range []string{"a/one.img", "b/two.img"} {
				if hc := f.migrate(t, "e-"+k, k); hc.Decision != DecisionConvert {
					t.Fatalf("%s: %s", k, hc.Decision)
				}
			}
			for _, out := range []string{"a/one.tif", "b/two.tif"} {
				body, head := f.object(t, out+stac.ItemSuffix)
				if err := v.ValidateItem(body); err != nil {
					t.Fatalf("%s: %v\n%s", out, err, body)
				}
				data, outHead := f.object(t, out)
				var item struct {
					ID     string
					Assets map[string]map[string]any
					Links  []stac.Link
				}
				if err := json.Unmarshal(body, &item); err != nil {
					t.Fatal(err)
				}
				a := item.Assets[stac.DataAssetKey]
				if item.ID != out || a["href"] != "./"+out[2:] || a["file:checksum"] != stac.Multihash(outHead.Metadata[MetaOutputSHA256]) || a["file:size"] != float64(len(data)) {
					t.Errorf("%s: id %s asset %v", out, item.ID, a)
				}
				links := map[string]string{}
				for _, l := range item.Links {
					links[l.Rel] = l.Href
				}
				if links["collection"] != "../collections/src/collection.json" || links["parent"] != links["collection"] || links["root"] != "../catalog.json" || links["self"] != "./"+out[2:]+stac.ItemSuffix {
					t.Errorf("%s: links %+v", out, item.Links)
				}
				if head.Metadata[objectstore.MetaSourceKey] != "src/"+strings.TrimSuffix(out, ".tif")+".img" || head.Metadata[MetaOutputSHA256] != sha256Hex(body) {
					t.Errorf("%s: item metadata %v", out, head.Metadata)
				}
			}
			body, _ := f.object(t, CollectionKey("", "src"))
			coll, err := stac.ParseCollection(body)
			if err != nil {
				t.Fatal(err)
			}
			if got := coll.Extent.Spatial.BBox[0]; fmt.Sprint(got) != fmt.Sprint(tc.wantBBox) {
				t.Errorf("collection bbox %v, want %v", got, tc.wantBBox)
			}
			if coll.Extent.Temporal.Interval[0][0] == nil {
				t.Error("collection has no start time")
			}
			// Promote links no item (that would rewrite the collection per
			// job); the run links them all at its end.
			for _, l := range coll.Links {
				if l.Rel == "item" {
					t.Errorf("Promote linked an item: %+v", l)
				}
			}
			if err := NewTree(f.cfg, f.store).Include(context.Background(), []string{"b/two.tif" + stac.ItemSuffix, "a/one.tif" + stac.ItemSuffix}); err != nil {
				t.Fatal(err)
			}
			body, _ = f.object(t, CollectionKey("", "src"))
			if coll, err = stac.ParseCollection(body); err != nil {
				t.Fatal(err)
			}
			var items []string
			for _, l := range coll.Links {
				if l.Rel == "item" {
					items = append(items, l.Href)
				}
			}
			if strings.Join(items, " ") != "../../a/one.tif.stac.json ../../b/two.tif.stac.json" {
				t.Errorf("collection item links %v", items)
			}
			cb, _ := f.object(t, CatalogKey(""))
			cat, err := stac.ParseCatalog(cb)
			if err != nil || len(cat.Links) != 3 || cat.Links[2].Rel != "child" || cat.Links[2].Href != "./collections/src/collection.json" {
				t.Errorf("catalog %v: %s", err, cb)
			}
			for _, doc := range []struct {
				b     []byte
				check func([]byte) error
			}{{body, v.ValidateCollection}, {cb, v.ValidateCatalog}} {
				if err := doc.check(doc.b); err != nil {
					t.Errorf("%v\n%s", err, doc.b)
				}
			}
		})
	}
}

// Promote publishes an item only after its output, and a failed item copy
// leaves the job retryable: the retry publishes it and nothing else
// changes.
func TestItemPromotionRetries(t *testing.T) {
	f := newDescribingFixture(t)
	ctx := context.Background()
	f.put(t, "x.img", "1,2")
	hc := f.check(t, "e1", "x.img")
	conv, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv("e1", 0)})
	if err != nil {
		t.Fatal(err)
	}
	item := conv.Outputs[0].Item
	if item == nil || item.DestKey != "x.tif"+stac.ItemSuffix {
		t.Fatalf("staged item %+v", item)
	}
	broken := faultstore.New(f.store, faultstore.Rule{Op: "Put", Key: item.DestKey, Err: errors.New("connection reset")})
	p := NewPromote(f.cfg, broken, f.tracker, slog.New(slog.DiscardHandler))
	if _, err := p.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 0)}); err == nil {
		t.Fatal("promote succeeded without its item")
	}
	if _, err := f.store.Head(ctx, "dest", "x.tif"); err != nil {
		t.Fatalf("the output was to be published before its item: %v", err)
	}
	if _, err := f.store.Head(ctx, "dest", item.DestKey); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("item at its final key after a failed write: %v", err)
	}
	if _, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv("e1", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Head(ctx, "dest", item.DestKey); err != nil {
		t.Fatal(err)
	}
	if s := staged(f); len(s) != 0 {
		t.Fatalf("staging left: %v", s)
	}
}

// Concurrent promotions of one dataset each widen the collection, and
// concurrent runs link their items; none loses another's extent or link
// (conditional copies, re-read on 412).
func TestCollectionConcurrentUpdates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := Job{DatasetID: "ds", DestBucket: "dest", SourceKey: fmt.Sprintf("f%d.img", i), StagingPrefix: fmt.Sprintf("%sjob%d/", DefaultStagingPrefix, i)}
			x := float64(i)
			if i%2 == 0 {
				errs <- f.promote.includeInCollection(ctx, job, []*StagedItem{{DestKey: fmt.Sprintf("f%d.tif.stac.json", i), BBox: []float64{x, -x, x + 1, 1 - x}}})
				return
			}
			// Runs ending at once, each linking its item.
			tree := NewTree(f.cfg, f.store)
			errs <- tree.include(ctx, []TreeEntry{{Key: fmt.Sprintf("f%d.tif.stac.json", i), Dataset: "ds", BBox: []float64{x, -x, x + 1, 1 - x}}}, true)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	body, _ := f.object(t, CollectionKey("", "ds"))
	coll, err := stac.ParseCollection(body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(coll.Extent.Spatial.BBox[0]), fmt.Sprint([]float64{0, -(n - 1), n, 1}); got != want {
		t.Fatalf("bbox %s, want %s", got, want)
	}
	links := 0
	for _, l := range coll.Links {
		if l.Rel == "item" {
			links++
		}
	}
	if links != n/2 {
		t.Fatalf("%d item links, want %d: a concurrent update lost some", links, n/2)
	}
	if s := staged(f); len(s) != 0 {
		t.Fatalf("staging left: %v", s)
	}
}

// A destination key holding something that is not a collection is not
// overwritten.
func TestCollectionKeyHoldingSomethingElse(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := CollectionKey("", "ds")
	if _, err := f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: key, Body: strings.NewReader("not json"), Size: 8}); err != nil {
		t.Fatal(err)
	}
	job := Job{DatasetID: "ds", DestBucket: "dest", SourceKey: "x.img", StagingPrefix: DefaultStagingPrefix + "j/"}
	err := f.promote.includeInCollection(ctx, job, []*StagedItem{{BBox: []float64{0, 0, 1, 1}}})
	if err == nil || !strings.Contains(err.Error(), "holds no STAC collection") {
		t.Fatalf("error %v", err)
	}
	if b, _ := f.object(t, key); string(b) != "not json" {
		t.Fatal("overwritten")
	}
}

// A recipe rule's datetime dates the items of the sources it matches,
// over what the file declares; other sources keep the source's
// Last-Modified. The datetime enters the recipe hash.
func TestRecipeDatetimeDatesTheItems(t *testing.T) {
	file, err := recipe.Parse([]byte("version: 1\nrules:\n  - match: \"a/**\"\n    datetime: 2019-06-01\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.cfg.Recipes = &recipe.Book{File: file}
	quiet := slog.New(slog.DiscardHandler)
	f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, quiet)
	f.convert = NewConvert(f.cfg, f.store, f.tracker, &describingEngine{}, fakeValidator, quiet)
	f.promote = NewPromote(f.cfg, f.store, f.tracker, quiet)
	f.put(t, "a/one.img", "10,40")
	f.put(t, "b/two.img", "12,41")
	hashes := map[string]string{}
	for _, k := range []string{"a/one.img", "b/two.img"} {
		hc := f.migrate(t, "e-"+k, k)
		if hc.Decision != DecisionConvert {
			t.Fatalf("%s: %s", k, hc.Decision)
		}
		hashes[k] = hc.Job.RecipeHash
	}
	if hashes["a/one.img"] == hashes["b/two.img"] {
		t.Error("the datetime did not enter the recipe hash")
	}
	for out, want := range map[string]string{"a/one.tif": "2019-06-01T00:00:00Z", "b/two.tif": ""} {
		body, _ := f.object(t, out+stac.ItemSuffix)
		var item struct{ Properties map[string]any }
		if err := json.Unmarshal(body, &item); err != nil {
			t.Fatal(err)
		}
		got, _ := item.Properties["datetime"].(string)
		if want != "" && got != want || want == "" && (got == "" || strings.HasPrefix(got, "2019")) {
			t.Errorf("%s: datetime %q, want %q", out, got, want)
		}
	}
	if _, err := recipe.Parse([]byte("version: 1\ndefaults:\n  datetime: last tuesday\n")); err == nil || !strings.Contains(err.Error(), "datetime") {
		t.Errorf("a bad datetime: %v", err)
	}
}

// Reconcile links the items no collection links yet (a run killed before
// its end, Lambda's Promote) and no others: a second call writes nothing.
func TestTreeReconcileLinksWhatIsUnlinked(t *testing.T) {
	f := newDescribingFixture(t)
	f.put(t, "a/one.img", "10,40")
	f.put(t, "b/two.img", "12,41")
	for _, k := range []string{"a/one.img", "b/two.img"} {
		if hc := f.migrate(t, "e-"+k, k); hc.Decision != DecisionConvert {
			t.Fatalf("%s: %s", k, hc.Decision)
		}
	}
	ctx := context.Background()
	tree := NewTree(f.cfg, f.store)
	n, err := tree.Reconcile(ctx)
	if err != nil || n != 2 {
		t.Fatalf("first reconcile linked %d: %v", n, err)
	}
	_, before := f.object(t, CollectionKey("", "src"))
	if n, err := tree.Reconcile(ctx); err != nil || n != 0 {
		t.Fatalf("second reconcile linked %d: %v", n, err)
	}
	if _, after := f.object(t, CollectionKey("", "src")); after.ETag != before.ETag {
		t.Error("a reconcile with nothing to link rewrote the collection")
	}
	body, _ := f.object(t, CollectionKey("", "src"))
	coll, err := stac.ParseCollection(body)
	if err != nil {
		t.Fatal(err)
	}
	items := 0
	for _, l := range coll.Links {
		if l.Rel == stac.RelItem {
			items++
		}
	}
	cb, _ := f.object(t, CatalogKey(""))
	if items != 2 || !strings.Contains(string(cb), `"./collections/src/collection.json"`) {
		t.Errorf("%d item links; catalog %s", items, cb)
	}
}
