package migration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// snapshot is everything a preview must leave as it was: every object of
// both buckets with its metadata, and every state record.
func snapshot(t *testing.T, f *fixture, mem *statestoretest.Memory) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	for _, b := range []string{"src", "dest"} {
		for _, k := range f.store.Keys(b) {
			o, err := f.store.Head(ctx, b, k)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&sb, "%s/%s %s %v\n", b, k, o.ETag, o.Metadata)
		}
	}
	err := mem.List(ctx, "", func(j statestore.Job) error {
		fmt.Fprintf(&sb, "job %s %s v%d %s %s\n", j.ID, j.Status, j.Version, j.LeaseOwner, j.LeaseUntil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestPreviewPredictsHashCheck: for each situation, Preview decides what
// HashCheck then decides for a new execution, and writes nothing.
func TestPreviewPredictsHashCheck(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		setup      func(t *testing.T, f *fixture)
		key        string
		wantDecide string
		wantReason string
		wantCode   fault.Code
	}{
		{name: "new source", setup: func(t *testing.T, f *fixture) { f.put(t, "x.tif", "x") }, key: "x.tif", wantDecide: DecisionConvert},
		{name: "migrated with this recipe", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.migrate(t, "run1", "x.tif")
		}, key: "x.tif", wantDecide: DecisionSkip, wantReason: ReasonAlreadyMigrated},
		{name: "migrated, then the source changed", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.migrate(t, "run1", "x.tif")
			f.put(t, "x.tif", "y")
		}, key: "x.tif", wantDecide: DecisionConvert},
		{name: "migrated, then the output was deleted", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.migrate(t, "run1", "x.tif")
			if err := f.store.Delete(ctx, "dest", "x.tif"); err != nil {
				t.Fatal(err)
			}
		}, key: "x.tif", wantDecide: DecisionConvert},
		{name: "output present without a record: adopted", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			hc, err := f.hash.Preview(ctx, Source{Bucket: "src", Key: "x.tif"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: "x.tif", Body: strings.NewReader("cog"), Size: 3,
				Metadata: map[string]string{objectstore.MetaSourceSHA256: hc.Job.SourceSHA256, objectstore.MetaRecipe: hc.Job.RecipeHash}})
			if err != nil {
				t.Fatal(err)
			}
		}, key: "x.tif", wantDecide: DecisionSkip, wantReason: ReasonAlreadyMigrated},
		{name: "held by a running execution", setup: func(t *testing.T, f *fixture) {
			f.put(t, "x.tif", "x")
			f.check(t, "other", "x.tif")
		}, key: "x.tif", wantDecide: DecisionSkip, wantReason: ReasonInProgress},
		{name: "not geospatial", setup: func(t *testing.T, f *fixture) { f.put(t, "README.txt", "x") }, key: "README.txt", wantDecide: DecisionSkip, wantReason: ReasonNotGeospatial},
		{name: "sidecar without its main file", setup: func(t *testing.T, f *fixture) { f.put(t, "roads.dbf", "x") }, key: "roads.dbf", wantDecide: DecisionSkip, wantReason: ReasonSidecar},
		{name: "missing source", setup: func(t *testing.T, f *fixture) {}, key: "gone.tif", wantCode: fault.SourceNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			mem := statestoretest.NewMemory()
			f.tracker = statestore.NewTracker(mem)
			quiet := slog.New(slog.DiscardHandler)
			f.hash = NewHashCheck(f.cfg, f.store, f.tracker, StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, quiet)
			f.convert = NewConvert(f.cfg, f.store, f.tracker, f.engine, fakeValidator, quiet)
			f.promote = NewPromote(f.cfg, f.store, f.tracker, quiet)
			tt.setup(t, f)

			before := snapshot(t, f, mem)
			src := Source{Bucket: "src", Key: tt.key}
			pre, perr := f.hash.Preview(ctx, src)
			if after := snapshot(t, f, mem); after != before {
				t.Fatalf("Preview wrote:\nbefore\n%s\nafter\n%s", before, after)
			}
			out, err := f.hash.Handle(ctx, HashCheckInput{Source: src, Context: inv("e1", 0)})
			if tt.wantCode != "" {
				var de *fault.DataError
				if !errors.As(perr, &de) || de.Code != tt.wantCode || fault.CodeOf(err) != tt.wantCode {
					t.Fatalf("preview err %v, hashcheck err %v, want DataError %s", perr, err, tt.wantCode)
				}
				return
			}
			if perr != nil || err != nil {
				t.Fatalf("preview err %v, hashcheck err %v", perr, err)
			}
			if pre.Decision != tt.wantDecide || pre.Reason != tt.wantReason {
				t.Errorf("preview %s/%s, want %s/%s", pre.Decision, pre.Reason, tt.wantDecide, tt.wantReason)
			}
			if out.Decision != pre.Decision || out.Reason != pre.Reason || out.Job.ID != pre.Job.ID {
				t.Errorf("HashCheck decided %s/%s (job %s), preview %s/%s (job %s)", out.Decision, out.Reason, out.Job.ID, pre.Decision, pre.Reason, pre.Job.ID)
			}
		})
	}
}
