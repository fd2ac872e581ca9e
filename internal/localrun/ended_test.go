package localrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// TestUnfinishedExecutionsCloseTheirJobs: an execution
// that times out (the definition's TimeoutSeconds) or is interrupted
// (Ctrl-C) leaves its job QUARANTINED with the lease released, its staging
// gone and one dead-letter message naming the execution; the next run
// converts the file at once instead of skipping it "in progress".
func TestUnfinishedExecutionsCloseTheirJobs(t *testing.T) {
	for _, how := range []string{"timeout", "interrupt"} {
		t.Run(how, func(t *testing.T) {
			dir, ss, _ := samples(t)
			var key string
			for _, s := range ss {
				if !s.Bad && s.Kind == "raster" {
					key = relKey(t, dir, s.Path)
					break
				}
			}
			p := newPipeline(t, dir)
			p.engine.gate = make(chan struct{})
			closer := migration.NewExecutionFailed(p.cfg, p.store, p.tracker, p.deadLetter, quiet)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan localrun.Outcome, 1)
			r := &localrun.Runner{Executor: p.executor(t, p.store), Workers: 1, Ended: closer.Close}
			go func() {
				done <- r.Run(ctx, []migration.Source{{Bucket: "src", Key: key, KeyEncoding: "plain", DatasetID: "samples"}})[0]
			}()
			waitFor(t, "the conversion to start", func() bool { return p.engine.count() > 0 })
			wantErr := "Aborted"
			if how == "timeout" {
				p.clock.Advance(3 * time.Hour) // past the definition's TimeoutSeconds
				wantErr = "States.Timeout"
				close(p.engine.gate)
			} else {
				cancel()
			}
			first := <-done
			if how == "interrupt" {
				close(p.engine.gate)
			}
			if first.Status != localrun.StatusDeadLetter || first.Error != wantErr || first.JobID == "" {
				t.Fatalf("unfinished execution: %+v", first)
			}
			rec, err := p.tracker.Get(context.Background(), first.JobID)
			if err != nil || rec.Status != statestore.Quarantined || !rec.LeaseUntil.IsZero() {
				t.Fatalf("record %+v %v", rec, err)
			}
			msgs := p.deadLetter.messages(t)
			if len(msgs) != 1 || !strings.HasSuffix(msgs[0].Execution, ":"+first.Execution) || msgs[0].JobID != first.JobID || msgs[0].Replay.Key != key {
				t.Fatalf("dead-letter messages %+v", msgs)
			}
			if first.Hint == "" || first.Hint != msgs[0].Hint {
				t.Errorf("outcome hint %q, want the dead-letter message's %q", first.Hint, msgs[0].Hint)
			}
			if o := p.run(t, p.store, []string{key})[key]; o.Status != localrun.StatusCompleted {
				t.Fatalf("next run: %s/%s, want completed at once", o.Status, o.Reason)
			}
			outputs(t, p) // fails on anything left in staging
		})
	}
}
