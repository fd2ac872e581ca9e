package migration

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
)

// stage runs HashCheck and Convert for key as execution exec: the job is
// claimed and its output sits in staging.
func (f *fixture) stage(t *testing.T, exec, key string) (Job, ConvertOutput) {
	t.Helper()
	hc := f.check(t, exec, key)
	if hc.Decision != DecisionConvert {
		t.Fatalf("%s: %s/%s", key, hc.Decision, hc.Reason)
	}
	conv, err := f.convert.Handle(context.Background(), ConvertInput{Job: hc.Job, Context: inv(exec, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return hc.Job, conv
}

func staged(f *fixture) []string {
	var out []string
	for _, k := range f.store.Keys("dest") {
		if strings.HasPrefix(k, DefaultStagingPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// TestClassifyDeletesTheRoutedJobsStaging (docs/decisions/0007): a job routed
// after Convert staged its output leaves nothing in staging on AWS either;
// a neighbour with the same bytes (same staging directory) keeps its own.
func TestClassifyDeletesTheRoutedJobsStaging(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.classify.WithStagingCleanup(f.store, f.cfg)
	f.put(t, "a/x.img", "same bytes")
	f.put(t, "a/x.y.img", "same bytes")
	job, conv := f.stage(t, "e1", "a/x.img")
	_, other := f.stage(t, "e2", "a/x.y.img")
	if len(staged(f)) != 2 { // two outputs (their STAC items travel in the payload)
		t.Fatalf("staged %v", staged(f))
	}
	out, err := f.classify.Handle(ctx, ClassifyInput{Source: Source{Bucket: "src", Key: "a/x.img"}, Job: job,
		Error: CaughtError{"SystemicError", lambdaCauseOf(t, "SystemicError", "AccessDenied [attempt 1]")}, Context: inv("e1", 0)})
	if err != nil || out.Route != RouteDeadLetter {
		t.Fatalf("classify: %+v %v", out, err)
	}
	left := staged(f)
	if want := []string{other.Outputs[0].StagingKey}; !slices.Equal(left, want) || slices.Contains(left, conv.Outputs[0].StagingKey) {
		t.Fatalf("staging after classify: %v; want only %v", left, want)
	}
}

// TestClassifyRoutesEvenWhenStagingCannotBeDeleted: the cleanup is best
// effort; the route and the record are the same as without it.
func TestClassifyRoutesEvenWhenStagingCannotBeDeleted(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, "x.img", "bytes")
	job, conv := f.stage(t, "e1", "x.img")
	broken := faultstore.New(f.store, faultstore.Rule{Op: "Delete", Err: errors.New("AccessDenied")})
	cl := NewClassify(f.tracker, nil, slog.New(slog.DiscardHandler)).WithStagingCleanup(broken, f.cfg)
	out, err := cl.Handle(ctx, ClassifyInput{Source: Source{Bucket: "src", Key: "x.img"}, Job: job,
		Error: CaughtError{"DataError", lambdaCauseOf(t, "DataError", "MissingCRS: none [attempt 1]")}, Context: inv("e1", 0)})
	if err != nil || out.Route != RouteRemediation || out.Message.Code != "MissingCRS" {
		t.Fatalf("classify: %+v %v", out, err)
	}
	if !slices.Contains(staged(f), conv.Outputs[0].StagingKey) {
		t.Fatalf("the delete was refused, yet %s is gone", conv.Outputs[0].StagingKey)
	}
}

// TestClassifyLeavesAnotherHoldersStaging: when the job belongs to another
// execution now, its staging is theirs.
func TestClassifyLeavesAnotherHoldersStaging(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.classify.WithStagingCleanup(f.store, f.cfg)
	f.put(t, "x.img", "bytes")
	job, conv := f.stage(t, "e1", "x.img")
	// e1's lease is taken over by e2 (e1 was presumed dead).
	if err := f.tracker.Release(ctx, job.ID, "e1", "test"); err != nil {
		t.Fatal(err)
	}
	if hc := f.check(t, "e2", "x.img"); hc.Decision != DecisionConvert {
		t.Fatalf("e2: %+v", hc)
	}
	if _, err := f.classify.Handle(ctx, ClassifyInput{Source: Source{Bucket: "src", Key: "x.img"}, Job: job,
		Error: CaughtError{"SystemicError", "boom"}, Context: inv("e1", 0)}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(staged(f), conv.Outputs[0].StagingKey) {
		t.Fatal("e1's classify deleted staging of a job e2 holds")
	}
}

func TestIsOutputOf(t *testing.T) {
	for rest, want := range map[string]bool{".tif": true, ".parquet": true, "/roads.parquet": true, "/a.b.fgb": true,
		".y.tif": false, "/x/roads.parquet": false, "": false, ".tif.aux.xml": false,
		// STAC items and Promote's staged collection update.
		".tif.stac.json": true, "/roads.parquet.stac.json": true, ".stac-collection.json": true,
		".stac.json": false, ".y.tif.stac.json": false, "/x/roads.parquet.stac.json": false} {
		if got := isOutputOf(rest); got != want {
			t.Errorf("isOutputOf(%q) = %v, want %v", rest, got, want)
		}
	}
}
