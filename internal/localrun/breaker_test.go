package localrun_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// outage holds the destination bucket down (503 SlowDown) until recoverAt
// on the executor's fake clock, which advances only by the run's own
// retry back-offs and waits: the outage lasts the same time line with and
// without the breaker, whatever the machine's speed.
func outage(p *pipeline, recoverAt time.Time) *faultstore.Store {
	return faultstore.New(p.store, faultstore.Rule{
		Kind:  faultstore.SlowDown,
		Match: func(bucket, _ string) bool { return bucket == "dest" },
		When:  func(int) bool { return p.clock.Now().Before(recoverAt) },
	})
}

// TestBreakerHoldsJobsWhileTheDestinationIsDown is the breaker's proof: with
// the destination down for 30 minutes, a run without the breaker spends
// every file's retries against it and dead-letters them all; with the
// breaker (its state in the embedded store) far fewer calls reach the
// dead bucket, every file waits in the state machine's WaitForBreaker loop
// instead, none is lost or queued, and all complete once it recovers.
func TestBreakerHoldsJobsWhileTheDestinationIsDown(t *testing.T) {
	dir, keys := goodKeys(t)
	const down = 30 * time.Minute

	// Without the breaker.
	p := newPipeline(t, dir)
	plain := outage(p, p.clock.Now().Add(down))
	for k, o := range p.run(t, plain, keys) {
		if o.Status != localrun.StatusDeadLetter {
			t.Errorf("without the breaker %s is %s, want dlq (its retries spent on the dead bucket)", k, o.Status)
		}
	}
	without := plain.InjectedTotal()

	// With the breaker.
	q := newPipeline(t, dir)
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var (
		mu          sync.Mutex // the observers run on the runner's workers
		transitions []breaker.Transition
	)
	policy := breaker.Policy{Threshold: 5, Window: 2 * time.Minute, Cooldown: 5 * time.Minute}
	var breakerLog lockedBuffer // shown when the proof fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("breaker log:\n%s", breakerLog.String())
		}
	})
	br := breaker.New(db, policy, breaker.WithClock(q.clock.Now),
		breaker.WithLogger(slog.New(slog.NewTextHandler(&breakerLog, nil))),
		breaker.WithObserver(func(tr breaker.Transition) {
			mu.Lock()
			transitions = append(transitions, tr)
			mu.Unlock()
		}))
	faulty := outage(q, q.clock.Now().Add(down))
	// Two workers (the pipeline's default here): executions fail, wait and
	// probe concurrently against the one shared record, and a call can be
	// in flight across a whole outage (the clock advances by every
	// worker's waits). A failure logs the file's history.
	var waits int
	got := q.run(t, breaker.Objects(faulty, br), keys, asl.WithHistory(func(ev asl.Event) {
		if ev.Type == asl.EventWaitStarted && ev.State == "WaitForBreaker" {
			mu.Lock()
			waits++
			mu.Unlock()
		}
	}))
	with := faulty.InjectedTotal()

	for k, o := range got {
		if o.Status != localrun.StatusCompleted {
			t.Errorf("with the breaker %s is %s (%s: %s), want completed after the recovery", k, o.Status, o.Error, o.Message)
			for _, ev := range o.History {
				t.Logf("  %s %s %s %s %.160s", ev.Timestamp.Format("15:04:05.000"), ev.Type, ev.State, ev.Error, ev.Cause)
			}
		}
	}
	if n := len(q.deadLetter.messages(t)) + len(q.remediation.messages(t)); n != 0 {
		t.Errorf("%d queue message(s); an open breaker must not route jobs", n)
	}
	// Every input has exactly one record, and it is terminal.
	records := map[string]statestore.Status{}
	if err := q.tracker.List(context.Background(), "", func(j statestore.Job) error {
		records[j.SourceKey] = j.Status
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(records) != len(keys) {
		t.Errorf("%d job records for %d inputs", len(records), len(keys))
	}
	for _, k := range keys {
		if records[k] != statestore.Completed {
			t.Errorf("%s: record %q, want COMPLETED", k, records[k])
		}
	}
	if waits == 0 {
		t.Error("no execution waited in WaitForBreaker")
	}
	rec, err := db.GetBreaker(context.Background(), breaker.BucketDependency("dest"))
	if err != nil || rec.State != breaker.Closed || rec.Opened == 0 {
		t.Errorf("breaker record after the run = %+v (%v), want CLOSED after opening", rec, err)
	}
	// Observers run on the workers after each committed change, so their
	// order is not the commit order: ask for an opening and a closing.
	opens, closes := 0, 0
	for _, tr := range transitions {
		switch tr.To {
		case breaker.Open:
			opens++
		case breaker.Closed:
			closes++
		}
	}
	if opens == 0 || closes == 0 {
		t.Errorf("transitions %+v, want the breaker opened and closed again", transitions)
	}
	t.Logf("calls against the dead destination: %d without the breaker, %d with it (%d files, %d waits, breaker opened %d times)",
		without, with, len(keys), waits, rec.Opened)
	if with*3 > without {
		t.Errorf("%d calls reached the dead destination with the breaker, %d without: want at most a third", with, without)
	}
}

var _ objectstore.Store = (*faultstore.Store)(nil)

// lockedBuffer is a log destination the workers share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBreakerOpensDuringConvertRetries: six failed staging PUTs. The fifth
// opens the breaker, so Convert's fifth attempt ends in BreakerOpenError
// (four retries spent, none more); the job waits, HashCheck runs again,
// the probe PUT fails (the sixth), the job waits again, and the next probe
// succeeds: completed, no queue message. The same path the cross-check
// (test/sfn) walks on two engines against real servers.
func TestBreakerOpensDuringConvertRetries(t *testing.T) {
	dir, keys := goodKeys(t)
	key := keys[0]
	p := newPipeline(t, dir)
	faulty := faultstore.New(p.store, faultstore.Rule{Op: faultstore.OpPut, Times: 6, Kind: faultstore.SlowDown,
		Match: func(bucket, _ string) bool { return bucket == "dest" }})
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	br := breaker.New(db, breaker.Policy{Threshold: 5, Window: 2 * time.Minute, Cooldown: time.Second}, breaker.WithClock(p.clock.Now))
	o := p.run(t, breaker.Objects(faulty, br), []string{key})[key]
	if o.Status != localrun.StatusCompleted {
		t.Fatalf("outcome %s (%s: %s), want completed", o.Status, o.Error, o.Message)
	}
	var states []string
	retries := 0
	for _, ev := range o.History {
		switch {
		case ev.Type == "RetryScheduled":
			retries++
		case ev.Type == asl.EventWaitStarted && ev.State == "WaitForBreaker":
			states = append(states, "wait")
		case ev.Type == "TaskFailed" && ev.Error == "BreakerOpenError":
			states = append(states, ev.State+":open")
		}
	}
	if got := strings.Join(states, " "); got != "Convert:open wait Convert:open wait" || retries != 4 {
		t.Fatalf("breaker path %q with %d retries, want \"Convert:open wait Convert:open wait\" and 4", got, retries)
	}
	if n := faulty.Injected(faultstore.OpPut); n != 6 {
		t.Fatalf("%d PUTs failed, want 6", n)
	}
	if n := len(p.deadLetter.messages(t)) + len(p.remediation.messages(t)); n != 0 {
		t.Fatalf("%d queue message(s)", n)
	}
}
