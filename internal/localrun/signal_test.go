package localrun_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// goodRaster is a sample that converts.
func goodRaster(t *testing.T) (dir, key string) {
	t.Helper()
	dir, ss, _ := samples(t)
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" {
			return dir, relKey(t, dir, s.Path)
		}
	}
	t.Fatal("no good raster sample")
	return "", ""
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 30s waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestASignalLetsRunningFilesFinish: SIGINT/SIGTERM (the run's
// context cancelled) while a file converts starts nothing new, and the
// running file finishes within the grace period: completed in the report,
// COMPLETED in the state store, the inputs not started reported so.
func TestASignalLetsRunningFilesFinish(t *testing.T) {
	dir, key := goodRaster(t)
	p := newPipeline(t, dir)
	p.engine.gate = make(chan struct{})
	closer := migration.NewExecutionFailed(p.cfg, p.store, p.tracker, p.deadLetter, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &localrun.Runner{Executor: p.executor(t, p.store), Workers: 1, Ended: closer.Close, Grace: time.Minute}
	inputs := []migration.Source{
		{Bucket: "src", Key: key, KeyEncoding: "plain", DatasetID: "samples"},
		{Bucket: "src", Key: key, KeyEncoding: "plain", DatasetID: "other"},
	}
	done := make(chan []localrun.Outcome, 1)
	go func() { done <- r.Run(ctx, inputs) }()
	waitFor(t, "the conversion to start", func() bool { return p.engine.count() > 0 })
	cancel() // the signal
	time.Sleep(20 * time.Millisecond)
	close(p.engine.gate)
	var out []localrun.Outcome
	select {
	case out = <-done:
	case <-time.After(time.Minute):
		t.Fatal("run did not end within a minute of the conversion finishing")
	}
	if o := out[0]; o.Status != localrun.StatusCompleted || o.JobID == "" {
		t.Fatalf("running file: %s %s: %s, want completed", o.Status, o.Error, o.Message)
	}
	rec, err := p.tracker.Get(context.Background(), out[0].JobID)
	if err != nil || rec.Status != statestore.Completed {
		t.Fatalf("record %+v %v, want COMPLETED", rec.Status, err)
	}
	if o := out[1]; o.Status != localrun.StatusFailed || o.Error != "Cancelled" {
		t.Errorf("input not started: %s %s: %s", o.Status, o.Error, o.Message)
	}
	if p.engine.count() != 1 {
		t.Errorf("%d conversions, want 1 (nothing new after the signal)", p.engine.count())
	}
	if msgs := p.deadLetter.messages(t); len(msgs) != 0 {
		t.Errorf("dead-letter messages %+v", msgs)
	}
	outputs(t, p) // nothing left in staging
}

// TestAbortAfterPromoteReportsCompleted: an execution stopped
// after Promote recorded the job COMPLETED (grace over, or a second signal,
// between Promote and the end of the execution) converted its file: the
// report says completed, as the state store does, and no dead-letter
// message is sent. Before, the report said "failed".
func TestAbortAfterPromoteReportsCompleted(t *testing.T) {
	for _, how := range []string{"no grace", "second signal"} {
		t.Run(how, func(t *testing.T) {
			dir, key := goodRaster(t)
			p := newPipeline(t, dir)
			closer := migration.NewExecutionFailed(p.cfg, p.store, p.tracker, p.deadLetter, quiet)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			abort := make(chan struct{})
			// Promote does its work, then the signal arrives; the task
			// returns once the execution's context is cancelled, so the
			// execution is aborted right after Promote, deterministically.
			promote := localrun.LambdaFunc(migration.NewPromote(p.cfg, p.store, p.tracker, quiet).Handle)
			stopAfterPromote := func(ectx context.Context, payload json.RawMessage) (json.RawMessage, error) {
				out, err := promote(ectx, payload)
				cancel()
				if how == "second signal" {
					close(abort)
				}
				select {
				case <-ectx.Done():
				case <-time.After(30 * time.Second):
					t.Error("the execution's context was not cancelled within 30s of the signal")
				}
				return out, err
			}
			r := &localrun.Runner{Executor: p.executor(t, p.store, asl.WithLambda(localrun.PromoteFunction, stopAfterPromote)),
				Workers: 1, Ended: closer.Close, Abort: abort}
			if how == "second signal" {
				r.Grace = time.Hour
			}
			o := r.Run(ctx, []migration.Source{{Bucket: "src", Key: key, KeyEncoding: "plain", DatasetID: "samples"}})[0]
			rec, err := p.tracker.Get(context.Background(), o.JobID)
			if err != nil || rec.Status != statestore.Completed {
				t.Fatalf("record %q %v, want COMPLETED (outcome %s %s: %s)", rec.Status, err, o.Status, o.Error, o.Message)
			}
			if o.Status != localrun.StatusCompleted || len(o.Outputs) != 1 || o.Outputs[0] != rec.DestKey ||
				o.Message != "completed before the execution was aborted" {
				t.Fatalf("outcome %s %s: %s %v, want completed with output %s", o.Status, o.Error, o.Message, o.Outputs, rec.DestKey)
			}
			if msgs := p.deadLetter.messages(t); len(msgs) != 0 {
				t.Errorf("dead-letter messages %+v", msgs)
			}
			outputs(t, p)
		})
	}
}
