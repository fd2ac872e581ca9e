package migration

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// listCounting counts List calls by prefix.
type listCounting struct {
	objectstore.Store
	mu    sync.Mutex
	lists []string
}

func (s *listCounting) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	s.mu.Lock()
	s.lists = append(s.lists, prefix)
	s.mu.Unlock()
	return s.Store.List(ctx, bucket, prefix, fn)
}

// TestHashCheckTakesSidecarsFromTheRunsListing: where the run listed a
// source's prefix, HashCheck finds its sidecars there (no LIST of its
// own), the same ones a LIST would find, and Convert reads those
// (Job.SidecarsListed, no LIST either); a source the listing does not
// cover is listed as before.
func TestHashCheckTakesSidecarsFromTheRunsListing(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		key      string
		sidecars []string
		lists    []string
	}{
		{"a/dem.tif", []string{"a/dem.tfw", "a/dem.tif.aux.xml"}, nil},
		{"a/demx.tif", nil, nil},
		{"b/x.tif", []string{"b/x.tfw"}, []string{"b/x"}},
	} {
		t.Run(tt.key, func(t *testing.T) {
			f := newFixture(t)
			for _, k := range []string{"a/dem.tif", "a/dem.tfw", "a/dem.tif.aux.xml", "a/demx.tif", "a/dem/inner.tfw", "b/x.tif", "b/x.tfw"} {
				f.put(t, k, "bytes of "+k)
			}
			listing := NewListing()
			if err := f.store.List(ctx, "src", "a/", func(o objectstore.Object) error { listing.Add("src", o); return nil }); err != nil {
				t.Fatal(err)
			}
			listing.Listed("src", "a/")
			store := &listCounting{Store: f.store}
			quiet := slog.New(slog.DiscardHandler)
			hc := NewHashCheck(f.cfg, store, f.tracker, StoreFingerprinter{Store: store}, quiet).WithListing(listing)
			out, err := hc.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: tt.key}, Context: inv("e1", 0)})
			if err != nil || out.Decision != DecisionConvert {
				t.Fatalf("hashcheck: %+v %v", out, err)
			}
			if got := slices.Sorted(maps.Keys(out.Job.SidecarETags)); !slices.Equal(got, tt.sidecars) || !out.Job.SidecarsListed {
				t.Errorf("sidecars %v (listed %v), want %v", got, out.Job.SidecarsListed, tt.sidecars)
			}
			conv := NewConvert(f.cfg, store, f.tracker, f.engine, fakeValidator, quiet)
			if _, err := conv.Handle(ctx, ConvertInput{Job: out.Job, Context: inv("e1", 0)}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(store.lists, tt.lists) {
				t.Errorf("LISTs %q, want %q", store.lists, tt.lists)
			}
		})
	}
}

// TestReconcileTakesTheItemsPromoteWrote: with an ItemLog shared by
// Promote and the run's tree, Reconcile links the run's items (the same
// collection extent and links as reading them) without reading them back.
func TestReconcileTakesTheItemsPromoteWrote(t *testing.T) {
	ctx := context.Background()
	var colls [][]byte
	for _, withLog := range []bool{false, true} {
		f := newDescribingFixture(t)
		f.cfg.CatalogByRun = true
		// A datetime of its own: the two runs' sources differ in Last-Modified.
		f.cfg.Recipe.Datetime = "2020-01-02T03:04:05Z"
		log := NewItemLog(DefaultItemLogEntries)
		store := &readCounting{Store: f.store, reads: map[string]int{}}
		quiet := slog.New(slog.DiscardHandler)
		f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store}, quiet)
		f.convert = NewConvert(f.cfg, f.store, f.tracker, &describingEngine{}, fakeValidator, quiet)
		f.promote = NewPromote(f.cfg, store, f.tracker, quiet)
		tree := NewTree(f.cfg, store)
		if withLog {
			f.promote.WithItemLog(log)
			tree.WithItemLog(log)
		}
		f.put(t, "x.img", "1,2")
		f.migrate(t, "e1", "x.img")
		if n, err := tree.Reconcile(ctx); err != nil || n != 1 {
			t.Fatalf("reconcile linked %d: %v", n, err)
		}
		item := "x.tif.stac.json"
		if got, want := store.reads["dest/"+item], map[bool]int{false: 1, true: 0}[withLog]; got != want {
			t.Errorf("item log %v: the item was read %d times, want %d", withLog, got, want)
		}
		body, _ := f.object(t, CollectionKey("", "src"))
		colls = append(colls, body)
	}
	if string(colls[0]) != string(colls[1]) {
		t.Errorf("collections differ:\nread back: %s\nfrom the log: %s", colls[0], colls[1])
	}
}
