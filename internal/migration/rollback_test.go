package migration

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// finalKeys lists the destination's keys outside staging, the
// quarantine bundles and the STAC tree's shared documents (the dataset
// collection and the root catalog).
func finalKeys(f *fixture) []string {
	var out []string
	for _, k := range f.store.Keys("dest") {
		if !strings.HasPrefix(k, DefaultStagingPrefix) && !strings.HasPrefix(k, "quarantine/") && !strings.HasSuffix(k, "collection.json") && k != "catalog.json" {
			out = append(out, k)
		}
	}
	return out
}

// TestRoutedJobLeavesNoFinalKey: Promote publishes a job's COG, then fails
// on its STAC item for good; when the job is routed (Classify, or
// ExecutionFailed closing an execution that ended), the COG is rolled
// back and staging emptied, so consumers never see half a job. A
// neighbour's output under the same stem and an older conversion of
// another source stay.
func TestRoutedJobLeavesNoFinalKey(t *testing.T) {
	for _, router := range []string{"classify", "executionfailed"} {
		t.Run(router, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			f.classify.WithStagingCleanup(f.store, f.cfg)
			f.put(t, "a/x.y.img", "the neighbour")
			f.migrate(t, "e0", "a/x.y.img")
			keep := finalKeys(f)
			if len(keep) != 2 {
				t.Fatalf("the neighbour's final keys: %v", keep)
			}
			f.put(t, "a/x.img", "raster-bytes")
			exec := execArn
			job, conv := f.stage(t, exec, "a/x.img")
			broken := faultstore.New(f.store, faultstore.Rule{Op: "Put", Match: func(_, key string) bool {
				return key == conv.Outputs[0].Item.DestKey
			}, Kind: faultstore.AccessDenied})
			p := NewPromote(f.cfg, broken, f.tracker, slog.New(slog.DiscardHandler))
			if _, err := p.Handle(ctx, PromoteInput{Job: job, Converted: conv, Context: inv(exec, 0)}); err == nil {
				t.Fatal("promote succeeded with its item's write refused")
			}
			if _, err := f.store.Head(ctx, "dest", conv.Outputs[0].DestKey); err != nil {
				t.Fatalf("the COG was not promoted before the item failed: %v", err)
			}
			switch router {
			case "classify":
				if _, err := f.classify.Handle(ctx, ClassifyInput{Source: Source{Bucket: "src", Key: "a/x.img"}, Job: job,
					Error: CaughtError{"SystemicError", lambdaCauseOf(t, "SystemicError", "AccessDenied [attempt 3]")}, Context: inv(exec, 0)}); err != nil {
					t.Fatal(err)
				}
			case "executionfailed":
				h := NewExecutionFailed(f.cfg, f.store, f.tracker, &sentQueue{}, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn)
				out, err := h.Handle(ctx, statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/x.img")))
				if err != nil || out.Outcome != EndedClosed {
					t.Fatalf("executionfailed: %+v %v", out, err)
				}
			}
			if got := finalKeys(f); strings.Join(got, " ") != strings.Join(keep, " ") {
				t.Errorf("final keys after routing: %v, want only the neighbour's %v", got, keep)
			}
			if s := staged(f); len(s) != 0 {
				t.Errorf("staging after routing: %v", s)
			}
			rec, err := f.tracker.Get(ctx, job.ID)
			if err != nil || rec.Status == statestore.Completed {
				t.Errorf("job %+v %v: routed, not completed", rec.Status, err)
			}
		})
	}
}

// TestPromoteResolvesALostAnswerByLineage: the copy to a final key is done
// but its answer lost; Promote reads the key's lineage and goes on,
// writing no key twice and needing no retry of the state.
func TestPromoteResolvesALostAnswerByLineage(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, "x.img", "raster-bytes")
	job, conv := f.stage(t, "e1", "x.img")
	lossy := faultstore.New(f.store, faultstore.Rule{Op: "Copy", Key: conv.Outputs[0].DestKey, Times: 1, Applied: true, Kind: faultstore.ConnReset})
	p := NewPromote(f.cfg, lossy, f.tracker, slog.New(slog.DiscardHandler))
	if _, err := p.Handle(ctx, PromoteInput{Job: job, Converted: conv, Context: inv("e1", 0)}); err != nil {
		t.Fatalf("promote after a lost answer: %v", err)
	}
	if c, p := lossy.Calls("Copy"), lossy.Calls("Put"); c != 1 || p != 3 {
		t.Errorf("%d copies and %d puts, want 1 copy (the output) and 3 puts (its item, the new collection, the root catalog): none redone", c, p)
	}
	got, err := f.store.Head(ctx, "dest", conv.Outputs[0].DestKey)
	if err != nil || !isPromoted(got, promotedMetadata(job, conv.Outputs[0])) {
		t.Fatalf("final key %+v %v", got, err)
	}
	if rec, err := f.tracker.Get(ctx, job.ID); err != nil || rec.Status != statestore.Completed {
		t.Fatalf("job %+v %v, want COMPLETED", rec.Status, err)
	}
}

// TestRollbackLeavesOtherLineages: a final key under the job's stem that
// holds another source's output, or this source's under another recipe,
// is not the job's to roll back.
func TestRollbackLeavesOtherLineages(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	job := Job{ID: "j", SourceBucket: "src", SourceKey: "a/x.img", SourceSHA256: "s1", RecipeHash: "r1", DestBucket: "dest"}
	mine := map[string]string{objectstore.MetaSourceKey: "src/a/x.img", objectstore.MetaSourceSHA256: "s1", objectstore.MetaRecipe: "r1"}
	for key, meta := range map[string]map[string]string{
		"a/x.tif":              mine,
		"a/x.tif.stac.json":    mine,
		"a/x/roads.parquet":    mine,
		"a/x.other.tif":        mine, // not a name the job's outputs get
		"a/x.fgb":              {objectstore.MetaSourceKey: "src/b/x.img", objectstore.MetaSourceSHA256: "s1", objectstore.MetaRecipe: "r1"},
		"a/x/lakes.parquet":    {objectstore.MetaSourceKey: "src/a/x.img", objectstore.MetaSourceSHA256: "s1", objectstore.MetaRecipe: "r0"},
		"a/x/rivers.parquet":   {objectstore.MetaSourceKey: "src/a/x.img", objectstore.MetaSourceSHA256: "s0", objectstore.MetaRecipe: "r1"},
		"a/x/unmarked.parquet": nil,
	} {
		if _, err := f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: key, Body: strings.NewReader(key), Size: int64(len(key)), Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rollbackPromoted(ctx, f.store, f.cfg, job)
	if err != nil || n != 3 {
		t.Fatalf("rollback: %d, %v; want 3 deleted", n, err)
	}
	want := "a/x.fgb a/x.other.tif a/x/lakes.parquet a/x/rivers.parquet a/x/unmarked.parquet"
	if got := strings.Join(finalKeys(f), " "); got != want {
		t.Errorf("left %s, want %s", got, want)
	}
	// A store that keeps failing transiently is reported, not ignored.
	broken := faultstore.New(f.store, faultstore.Rule{Op: "List"})
	if _, err := rollbackPromoted(ctx, broken, f.cfg, job); err == nil || errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("rollback over a failing List: %v", err)
	}
}

// TestRoutedJobStagingIsRemovedThroughPassingFaults: the listing and the
// deletes of a routed job's staged outputs are retried like the rollback,
// so a fault that passes leaves nothing in staging.
func TestRoutedJobStagingIsRemovedThroughPassingFaults(t *testing.T) {
	for _, op := range []string{faultstore.OpList, faultstore.OpDelete} {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			hc, _ := f.converted(t, "e1", "a.tif", "raster")
			staged := func() []string {
				var keys []string
				_ = f.store.List(ctx, "dest", hc.Job.StagingPrefix, func(o objectstore.Object) error { keys = append(keys, o.Key); return nil })
				return keys
			}
			if len(staged()) == 0 {
				t.Fatal("nothing staged")
			}
			flaky := faultstore.New(f.store, faultstore.Rule{Op: op, Times: 2, Kind: faultstore.ConnReset})
			n, err := removeStaged(ctx, flaky, f.cfg, hc.Job)
			if err != nil || n == 0 {
				t.Fatalf("removeStaged through two %s faults: %d, %v", op, n, err)
			}
			if left := staged(); len(left) != 0 {
				t.Errorf("staging holds %v", left)
			}
		})
	}
}
