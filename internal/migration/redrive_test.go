package migration

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// TestARedrivenExecutionCompletesItsOwnJob: an execution that timed out in
// Convert is closed by executionfailed (QUARANTINED, one dead-letter
// message). Redriven, Step Functions runs Convert again with the same
// execution ARN and the state input the failed state had, on a retry
// attempt or not: the execution resumes its own job and completes it, and
// a later failure event of the same execution sends no second message. A
// redrive after a replay has completed the job is a lost lease.
func TestARedrivenExecutionCompletesItsOwnJob(t *testing.T) {
	ctx := context.Background()
	for _, attempt := range []int{0, 1} {
		f := newFixture(t)
		f.put(t, "a/dem.img", "raster-bytes")
		hc := f.check(t, execArn, "a/dem.img")
		q := &sentQueue{}
		ef := NewExecutionFailed(f.cfg, f.store, f.tracker, q, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn)
		timedOut := statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/dem.img"))
		if out, err := ef.Handle(ctx, timedOut); err != nil || out.Outcome != EndedClosed {
			t.Fatalf("executionfailed: %+v, %v", out, err)
		}

		conv, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv(execArn, attempt)})
		if err != nil {
			t.Fatalf("redriven Convert (attempt %d): %v", attempt, err)
		}
		if _, err := f.promote.Handle(ctx, PromoteInput{Job: hc.Job, Converted: conv, Context: inv(execArn, 0)}); err != nil {
			t.Fatalf("redriven Promote: %v", err)
		}
		if j, _ := f.tracker.Get(ctx, hc.Job.ID); j.Status != statestore.Completed || j.LeaseOwner != execArn {
			t.Fatalf("after the redrive: %s held by %s", j.Status, j.LeaseOwner)
		}
		if out, err := ef.Handle(ctx, timedOut); err != nil || out.Outcome == EndedClosed {
			t.Fatalf("a second failure event of the redriven execution: %+v, %v", out, err)
		}
		if len(q.msgs) != 1 {
			t.Fatalf("%d dead-letter messages for one execution, want 1", len(q.msgs))
		}
	}

	f := newFixture(t)
	f.put(t, "a/dem.img", "raster-bytes")
	hc := f.check(t, execArn, "a/dem.img")
	ef := NewExecutionFailed(f.cfg, f.store, f.tracker, &sentQueue{}, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn)
	if _, err := ef.Handle(ctx, statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/dem.img"))); err != nil {
		t.Fatal(err)
	}
	f.migrate(t, "arn:replay", "a/dem.img")
	_, err := f.convert.Handle(ctx, ConvertInput{Job: hc.Job, Context: inv(execArn, 0)})
	var se *fault.SystemicError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), statestore.ErrLeaseLost.Error()) {
		t.Fatalf("a redrive after a replay completed the job: %v, want a lost lease", err)
	}
}
