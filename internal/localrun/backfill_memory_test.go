package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// The backfill's orchestration keeps nothing per item: each child's
// result goes to the result files and its outcome to the outcome spool as
// it ends. The heap left live after a run of 5,000 items (outcomes still
// open, not read back) exceeds that of a run of 1,000 by at most
// perItemBound per extra item; the peak heap during the run, which holds the listing
// until each item starts, is logged. The children are a one-state machine
// (no GDAL), so what is measured is the backfill's own bookkeeping.
func TestBackfillRetainedHeapPerItem(t *testing.T) {
	const perItemBound = 64 // bytes; the outcomes held in memory were 633 B
	child, err := asl.Parse([]byte(`{"StartAt":"Done","States":{"Done":{"Type":"Pass","Result":{"status":"skipped","reason":"already_migrated"},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	live := func(n int) (retained, peak uint64, count int) {
		src, ops := t.TempDir(), t.TempDir()
		dir := filepath.Join(src, "in")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.geojson", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("ops", ops))
		if err != nil {
			t.Fatal(err)
		}
		// The store indexes a large directory when it is first listed
		// (internal/dirindex): listed once here, that index is the
		// store's before the run, not the backfill's.
		if err := store.List(context.Background(), "src", "in/", func(objectstore.Object) error { return nil }); err != nil {
			t.Fatal(err)
		}
		// Twice: sync.Pool's buffers (the store's 256 KiB copy buffers)
		// survive one collection in its victim cache.
		runtime.GC()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: asl.NewExecutor(child)})
		if err != nil {
			t.Fatal(err)
		}
		stop, peakHeap := sampleHeap()
		res, outcomes, err := bf.Run(context.Background(), "mem", json.RawMessage(`{"prefix":"in/","max_concurrency":4}`))
		stop()
		if err != nil || res.Status != "SUCCEEDED" {
			t.Fatalf("backfill: %v %+v", err, res)
		}
		defer outcomes.Close()
		runtime.GC()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(outcomes)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), *peakHeap, outcomes.Len()
	}
	small, peakSmall, n1 := live(1000)
	large, peakLarge, n2 := live(5000)
	if n1 != 1000 || n2 != 5000 {
		t.Fatalf("%d and %d outcomes, want 1000 and 5000", n1, n2)
	}
	grown := int64(large) - int64(small)
	t.Logf("live heap after the run: %d KiB at 1,000 items, %d KiB at 5,000 (%d B per extra item); peak heap during it %d KiB and %d KiB",
		small>>10, large>>10, grown/4000, peakSmall>>10, peakLarge>>10)
	if grown > perItemBound*4000 {
		t.Errorf("live heap grew %d B per item from 1,000 to 5,000 items, want at most %d", grown/4000, perItemBound)
	}
}

// A runner told to drop the histories keeps none in its outcomes (a
// migrate of many files would hold every event of every execution), and
// still reads the outcome from them.
func TestRunnerDropHistory(t *testing.T) {
	child, err := asl.Parse([]byte(`{"StartAt":"Done","States":{"Done":{"Type":"Pass","Result":{"status":"skipped","reason":"already_migrated"},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []bool{false, true} {
		r := &localrun.Runner{Executor: asl.NewExecutor(child), Workers: 2, DropHistory: drop}
		out := r.Run(context.Background(), []migration.Source{{Bucket: "b", Key: "a.tif"}, {Bucket: "b", Key: "c.tif"}})
		for _, o := range out {
			if o.Status != localrun.StatusSkipped {
				t.Errorf("drop %v: %s ended %q, want skipped", drop, o.Key, o.Status)
			}
			if kept := o.History != nil; kept == drop {
				t.Errorf("drop %v: %s kept %d history events", drop, o.Key, len(o.History))
			}
		}
	}
}
