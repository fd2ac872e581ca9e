package statestore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// heartbeatTrackers are two runs over one store and one clock, each
// naming its leases and vouching for them for 20 s (lease: 10 minutes).
func heartbeatTrackers() (a, b *statestore.Tracker, c *clock) {
	c = &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	mem := statestoretest.NewMemory()
	a = statestore.NewTracker(mem, statestore.WithClock(c.now), statestore.WithLease(10*time.Minute))
	b = statestore.NewTracker(mem, statestore.WithClock(c.now), statestore.WithLease(10*time.Minute))
	a.SetHolder("run-a", 20*time.Second)
	b.SetHolder("run-b", 20*time.Second)
	return a, b, c
}

func TestHeartbeatDecidesWhetherALeaseIsLive(t *testing.T) {
	tests := []struct {
		name string
		// after: what happens between run a's claim and run b's
		after func(t *testing.T, a *statestore.Tracker, c *clock)
		want  statestore.ClaimOutcome
		note  string
	}{
		{"fresh heartbeat", func(*testing.T, *statestore.Tracker, *clock) {}, statestore.InProgress, ""},
		{"heartbeat stopped (the run was killed)", func(_ *testing.T, _ *statestore.Tracker, c *clock) { c.advance(21 * time.Second) },
			statestore.Claimed, "heartbeat of a1 stopped (run-a); taken over"},
		{"heartbeats kept up past the first vouch and the lease", func(t *testing.T, a *statestore.Tracker, c *clock) {
			for range 40 { // 40 × 15 s = 10 minutes
				c.advance(15 * time.Second)
				if n, err := a.Beat(context.Background()); err != nil || n != 1 {
					t.Fatalf("Beat: %d, %v", n, err)
				}
			}
		}, statestore.InProgress, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b, c := heartbeatTrackers()
			j, _, err := a.Claim(context.Background(), statestore.ClaimRequest{Job: statestore.Job{ID: "j"}, Execution: "a1"})
			if err != nil {
				t.Fatal(err)
			}
			if j.Holder != "run-a" || !j.HeartbeatUntil.Equal(c.t.Add(20*time.Second)) {
				t.Fatalf("claim wrote holder %q until %s", j.Holder, j.HeartbeatUntil)
			}
			tt.after(t, a, c)
			j, got, err := b.Claim(context.Background(), statestore.ClaimRequest{Job: statestore.Job{ID: "j"}, Execution: "b1"})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("second run's claim: %s, want %s", got, tt.want)
			}
			if tt.note != "" && j.History[len(j.History)-1].Note != tt.note {
				t.Errorf("take-over note %q, want %q", j.History[len(j.History)-1].Note, tt.note)
			}
			if got == statestore.Claimed {
				// The stopped run's later writes find the lease gone.
				if _, err := a.Transition(context.Background(), statestore.Update{ID: "j", Execution: "a1", To: statestore.Completed}); !errors.Is(err, statestore.ErrLeaseLost) {
					t.Errorf("the old holder completed the taken-over job: %v", err)
				}
				if n, _ := a.Beat(context.Background()); n != 0 {
					t.Errorf("the old holder still beats %d lease(s)", n)
				}
			}
		})
	}
}

func TestBeatForgetsFinishedAndReleasedJobs(t *testing.T) {
	a, _, _ := heartbeatTrackers()
	ctx := context.Background()
	for _, id := range []string{"done", "released", "running"} {
		if _, _, err := a.Claim(ctx, statestore.ClaimRequest{Job: statestore.Job{ID: id}, Execution: "e-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Transition(ctx, statestore.Update{ID: "done", Execution: "e-done", To: statestore.Completed}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "released", "e-released", "test"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Beat(ctx); n != 1 || err != nil {
		t.Fatalf("Beat renewed %d (%v), want only the running job", n, err)
	}
	done, _ := a.Get(ctx, "done")
	if done.Holder != "" || !done.HeartbeatUntil.IsZero() {
		t.Errorf("a completed job keeps holder %q until %s", done.Holder, done.HeartbeatUntil)
	}
}

// TestARedrivenExecutionResumesItsOwnJob: Step Functions' redrive reruns
// the failed state with the same execution ARN; the job its own failure
// quarantined re-enters PROCESSING (even on a retry attempt), while a
// job another execution claimed since is lost to it.
func TestARedrivenExecutionResumesItsOwnJob(t *testing.T) {
	for _, attempt := range []int{0, 2} {
		tr, _ := newTracker()
		ctx := context.Background()
		claim(t, tr, "arn:exec:1", false)
		if err := to(t, tr, "arn:exec:1", statestore.Quarantined); err != nil {
			t.Fatal(err)
		}
		j, err := tr.BeginAttempt(ctx, "ds:abc:r1", "arn:exec:1", "Convert", attempt)
		if err != nil {
			t.Fatalf("attempt %d of the redriven execution: %v", attempt, err)
		}
		if j.Status != statestore.Processing || j.LeaseOwner != "arn:exec:1" || !strings.HasPrefix(j.History[len(j.History)-1].Note, "redriven: ") {
			t.Fatalf("attempt %d: %s held by %s, last note %q", attempt, j.Status, j.LeaseOwner, j.History[len(j.History)-1].Note)
		}
		if err := to(t, tr, "arn:exec:1", statestore.Completed); err != nil {
			t.Fatal(err)
		}
	}

	tr, _ := newTracker()
	claim(t, tr, "arn:exec:1", false)
	if err := to(t, tr, "arn:exec:1", statestore.Quarantined); err != nil {
		t.Fatal(err)
	}
	claim(t, tr, "arn:replay:2", false) // a replay claims the quarantined job
	if err := to(t, tr, "arn:replay:2", statestore.Completed); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.BeginAttempt(context.Background(), "ds:abc:r1", "arn:exec:1", "Convert", 0); !errors.Is(err, statestore.ErrLeaseLost) {
		t.Fatalf("a redrive after a replay completed the job: %v, want ErrLeaseLost", err)
	}
}
