package statestore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// countingBackend counts the reads that reach the backend.
type countingBackend struct {
	statestore.Backend
	gets atomic.Int64
}

func (c *countingBackend) Get(ctx context.Context, id string) (statestore.Job, error) {
	c.gets.Add(1)
	return c.Backend.Get(ctx, id)
}

const cachedJob = "ds:abc:r1"

// drive takes a job through a CLI run's changes: Claim, each step's
// BeginAttempt, the final Transition.
func drive(t *testing.T, tr *statestore.Tracker, between func(step int)) error {
	t.Helper()
	ctx := context.Background()
	if _, o, err := tr.Claim(ctx, statestore.ClaimRequest{Job: statestore.Job{ID: cachedJob, SourceKey: "x.tif"}, Execution: "e1"}); err != nil || o != statestore.Claimed {
		t.Fatalf("claim: %s %v", o, err)
	}
	steps := []func() error{
		func() error { _, err := tr.BeginAttempt(ctx, cachedJob, "e1", "Convert", 0); return err },
		func() error { _, err := tr.BeginAttempt(ctx, cachedJob, "e1", "Promote", 0); return err },
		func() error {
			_, err := tr.Transition(ctx, statestore.Update{ID: cachedJob, Execution: "e1", To: statestore.Completed})
			return err
		},
	}
	for i, step := range steps {
		between(i)
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// TestRecordCache: with WithRecordCache a job's state changes after its
// claim read nothing back and write the same records; a record another
// writer changed in between is read again (its change kept, or the lease
// found lost), never written over.
func TestRecordCache(t *testing.T) {
	other := func(mem statestore.Backend, c *clock) *statestore.Tracker {
		return statestore.NewTracker(mem, statestore.WithClock(c.now), statestore.WithLease(time.Minute))
	}
	tests := []struct {
		name string
		// between runs before step i on the shared backend (other is a
		// second process's Tracker).
		between func(t *testing.T, other *statestore.Tracker, c *clock, step int)
		// Reads without the cache and with it, Claim's included.
		uncachedGets, cachedGets int64
		wantErr                  error
		wantNote                 string // a history note the final record must keep
	}{
		{"nobody else writes", func(*testing.T, *statestore.Tracker, *clock, int) {}, 4, 1, nil, ""},
		{"another process notes the job", func(t *testing.T, o *statestore.Tracker, _ *clock, step int) {
			if step == 1 {
				if err := o.Note(context.Background(), cachedJob, "e1", "message sent"); err != nil {
					t.Fatal(err)
				}
			}
		}, 4, 2, nil, "message sent"},
		{"another execution takes the job over", func(t *testing.T, o *statestore.Tracker, c *clock, step int) {
			if step == 1 {
				c.advance(2 * time.Minute) // the lease lapsed
				if _, out, err := o.Claim(context.Background(), statestore.ClaimRequest{Job: statestore.Job{ID: cachedJob}, Execution: "e2"}); err != nil || out != statestore.Claimed {
					t.Fatalf("take-over: %s %v", out, err)
				}
			}
		}, 3, 2, statestore.ErrLeaseLost, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := map[bool]statestore.Job{}
			for _, cached := range []bool{false, true} {
				c := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
				mem := &countingBackend{Backend: statestoretest.NewMemory()}
				opts := []statestore.TrackerOption{statestore.WithClock(c.now), statestore.WithLease(time.Minute)}
				if cached {
					opts = append(opts, statestore.WithRecordCache())
				}
				tr := statestore.NewTracker(mem, opts...)
				o := other(mem, c)
				var othersGets int64
				err := drive(t, tr, func(step int) {
					before := mem.gets.Load()
					tt.between(t, o, c, step)
					othersGets += mem.gets.Load() - before
					c.advance(time.Second)
				})
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("cache %v: err %v, want %v", cached, err, tt.wantErr)
				}
				gets := mem.gets.Load() - othersGets
				if want := map[bool]int64{false: tt.uncachedGets, true: tt.cachedGets}[cached]; gets != want {
					t.Errorf("cache %v: %d reads, want %d", cached, gets, want)
				}
				j, err := mem.Backend.Get(context.Background(), cachedJob)
				if err != nil {
					t.Fatal(err)
				}
				if tt.wantNote != "" && !hasNote(j, tt.wantNote) {
					t.Errorf("cache %v: the other writer's note is lost: %+v", cached, j.History)
				}
				results[cached] = j
			}
			if d := statestoretest.JobsEqual(results[false], results[true]); d != "" {
				t.Errorf("records differ with the cache: %s", d)
			}
		})
	}
}

func hasNote(j statestore.Job, note string) bool {
	for _, h := range j.History {
		if h.Note == note {
			return true
		}
	}
	return false
}

// TestRecordCacheConcurrentChanges: changes of one job made at once from a
// remembered record all land (the losers of each compare-and-swap read the
// record again), and none is counted twice.
func TestRecordCacheConcurrentChanges(t *testing.T) {
	tr := statestore.NewTracker(statestoretest.NewMemory(), statestore.WithRecordCache())
	ctx := context.Background()
	if _, _, err := tr.Claim(ctx, statestore.ClaimRequest{Job: statestore.Job{ID: cachedJob}, Execution: "e1"}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := tr.BeginAttempt(ctx, cachedJob, "e1", "Convert", 0)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	j, err := tr.Get(ctx, cachedJob)
	if err != nil {
		t.Fatal(err)
	}
	if j.Attempts != n {
		t.Errorf("attempts %d, want %d", j.Attempts, n)
	}
}
