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
