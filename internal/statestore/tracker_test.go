package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTracker() (*statestore.Tracker, *clock) {
	c := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	return statestore.NewTracker(statestoretest.NewMemory(), statestore.WithClock(c.now), statestore.WithLease(time.Minute)), c
}

func claim(t *testing.T, tr *statestore.Tracker, exec string, reclaim bool) (statestore.Job, statestore.ClaimOutcome) {
	t.Helper()
	j, o, err := tr.Claim(context.Background(), statestore.ClaimRequest{Job: statestore.Job{ID: "ds:abc:r1", SourceKey: "x.tif"}, Execution: exec, Reclaim: reclaim})
	if err != nil {
		t.Fatal(err)
	}
	return j, o
}

func to(t *testing.T, tr *statestore.Tracker, exec string, s statestore.Status) error {
	t.Helper()
	_, err := tr.Transition(context.Background(), statestore.Update{ID: "ds:abc:r1", Execution: exec, To: s})
	return err
}

func TestClaimOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, tr *statestore.Tracker, c *clock)
		exec  string
		want  statestore.ClaimOutcome
	}{
		{"new job", func(*testing.T, *statestore.Tracker, *clock) {}, "e1", statestore.Claimed},
		{"same execution again", func(t *testing.T, tr *statestore.Tracker, _ *clock) { claim(t, tr, "e1", false) }, "e1", statestore.Claimed},
		{"live lease of another", func(t *testing.T, tr *statestore.Tracker, _ *clock) { claim(t, tr, "e0", false) }, "e1", statestore.InProgress},
		{"expired lease is taken over", func(t *testing.T, tr *statestore.Tracker, c *clock) {
			claim(t, tr, "e0", false)
			c.advance(2 * time.Minute)
		}, "e1", statestore.Claimed},
		{"completed", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e0", false)
			if err := to(t, tr, "e0", statestore.Completed); err != nil {
				t.Fatal(err)
			}
		}, "e1", statestore.AlreadyCompleted},
		{"remedial", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e0", false)
			if err := to(t, tr, "e0", statestore.Remedial); err != nil {
				t.Fatal(err)
			}
		}, "e1", statestore.AwaitingRemediation},
		{"quarantined is replayed", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e0", false)
			if err := to(t, tr, "e0", statestore.Quarantined); err != nil {
				t.Fatal(err)
			}
		}, "e1", statestore.Claimed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, c := newTracker()
			tt.setup(t, tr, c)
			j, got := claim(t, tr, tt.exec, false)
			if got != tt.want {
				t.Fatalf("outcome = %s, want %s", got, tt.want)
			}
			if got == statestore.Claimed && (j.Status != statestore.Processing || j.LeaseOwner != tt.exec) {
				t.Fatalf("claimed job = %+v", j)
			}
		})
	}
}

func TestTransitionRules(t *testing.T) {
	tr, _ := newTracker()
	claim(t, tr, "e1", false)
	if err := to(t, tr, "e2", statestore.Completed); !errors.Is(err, statestore.ErrLeaseLost) {
		t.Fatalf("non-holder completed the job: %v", err)
	}
	if _, err := tr.BeginAttempt(context.Background(), "ds:abc:r1", "e1", "Convert", 1); err != nil {
		t.Fatal(err)
	}
	if err := to(t, tr, "e1", statestore.Completed); err != nil {
		t.Fatal(err)
	}
	if err := to(t, tr, "e1", statestore.Remedial); err == nil {
		t.Fatal("COMPLETED → REMEDIAL allowed")
	}
	j, err := tr.Get(context.Background(), "ds:abc:r1")
	if err != nil {
		t.Fatal(err)
	}
	var path []statestore.Status
	for _, h := range j.History {
		path = append(path, h.To)
	}
	if fmt.Sprint(path) != "[PROCESSING RETRYING COMPLETED]" || j.Attempts != 1 || !j.LeaseUntil.IsZero() {
		t.Fatalf("history %v attempts %d lease %v", path, j.Attempts, j.LeaseUntil)
	}
}

func TestCanTransitionFollowsTheJobLifecycle(t *testing.T) {
	for _, tc := range []struct {
		from, to statestore.Status
		ok       bool
	}{
		{statestore.Pending, statestore.Processing, true},
		{statestore.Processing, statestore.Completed, true},
		{statestore.Processing, statestore.Retrying, true},
		{statestore.Retrying, statestore.Completed, true},
		{statestore.Retrying, statestore.Quarantined, true},
		{statestore.Processing, statestore.Remedial, true},
		{statestore.Processing, statestore.Quarantined, true},
		{statestore.Completed, statestore.Remedial, false},
		{statestore.Remedial, statestore.Completed, false},
		{statestore.Pending, statestore.Completed, false},
	} {
		if got := statestore.CanTransition(tc.from, tc.to); got != tc.ok {
			t.Errorf("%s → %s = %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}

func TestConcurrentClaimsHaveOneWinner(t *testing.T) {
	tr, _ := newTracker()
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, o, err := tr.Claim(context.Background(), statestore.ClaimRequest{Job: statestore.Job{ID: "ds:abc:r1"}, Execution: fmt.Sprint("e", i)})
			if err != nil {
				t.Error(err)
				return
			}
			if o == statestore.Claimed {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d executions claimed the job", won)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	tr, _ := newTracker()
	claim(t, tr, "e1", false)
	for i := range statestore.HistoryLimit * 2 {
		if _, err := tr.BeginAttempt(context.Background(), "ds:abc:r1", "e1", "Convert", i+1); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := tr.Get(context.Background(), "ds:abc:r1")
	if len(j.History) != statestore.HistoryLimit {
		t.Fatalf("history has %d entries", len(j.History))
	}
}

func TestReleaseLetsTheNextRunTakeOver(t *testing.T) {
	tr, _ := newTracker()
	ctx := context.Background()
	claim(t, tr, "e1", false)
	if _, o := claim(t, tr, "e2", false); o != statestore.InProgress {
		t.Fatalf("before release: %s", o)
	}
	// Only the holder's release counts.
	if err := tr.Release(ctx, "ds:abc:r1", "e2", "not mine"); err != nil {
		t.Fatal(err)
	}
	if _, o := claim(t, tr, "e3", false); o != statestore.InProgress {
		t.Fatalf("after a stranger's release: %s", o)
	}
	if err := tr.Release(ctx, "ds:abc:r1", "e1", "interrupted"); err != nil {
		t.Fatal(err)
	}
	j, o := claim(t, tr, "e3", false)
	if o != statestore.Claimed || j.LeaseOwner != "e3" {
		t.Fatalf("after release: %s %+v", o, j)
	}
	// A finished job is left alone.
	if err := to(t, tr, "e3", statestore.Completed); err != nil {
		t.Fatal(err)
	}
	if err := tr.Release(ctx, "ds:abc:r1", "e3", "late"); err != nil {
		t.Fatal(err)
	}
	if j, _ := tr.Get(ctx, "ds:abc:r1"); j.Status != statestore.Completed {
		t.Fatalf("status %s", j.Status)
	}
}

// TestZeroLeaseKeepsTheDefault (docs/decisions/0014): a configuration that
// never set the lease (0) must not make every claim expire as it is taken.
func TestZeroLeaseKeepsTheDefault(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	tr := statestore.NewTracker(statestoretest.NewMemory(), statestore.WithClock(c.now), statestore.WithLease(0))
	if tr.Lease() != statestore.DefaultLease {
		t.Fatalf("lease %s, want %s", tr.Lease(), statestore.DefaultLease)
	}
	claim(t, tr, "e1", false)
	c.advance(time.Second)
	if _, o := claim(t, tr, "e2", false); o != statestore.InProgress {
		t.Fatalf("a second execution one second later: %s, want in_progress", o)
	}
}

// TestRoutingTransitionsKeepTheTier: a transition to REMEDIAL or
// QUARANTINED records the job's tier, which a later claim clears from the
// job but not from its history (recovery latency is reported by the tier
// of the first routing).
func TestRoutingTransitionsKeepTheTier(t *testing.T) {
	ctx := context.Background()
	tr, c := newTracker()
	claim(t, tr, "e1", false)
	if _, err := tr.Transition(ctx, statestore.Update{ID: "ds:abc:r1", Execution: "e1", To: statestore.Quarantined,
		Mutate: func(j *statestore.Job) { j.Tier = "transient" }}); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Hour)
	claim(t, tr, "e2", true)
	if _, err := tr.Transition(ctx, statestore.Update{ID: "ds:abc:r1", Execution: "e2", To: statestore.Completed}); err != nil {
		t.Fatal(err)
	}
	j, err := tr.Get(ctx, "ds:abc:r1")
	if err != nil {
		t.Fatal(err)
	}
	var tiers []string
	for _, h := range j.History {
		tiers = append(tiers, string(h.To)+":"+h.Tier)
	}
	if got := fmt.Sprint(tiers); got != "[PROCESSING: QUARANTINED:transient PROCESSING: COMPLETED:]" || j.Tier != "" {
		t.Errorf("history %s, job tier %q", got, j.Tier)
	}
}

// TestRenewKeepsALongTaskItsJob: renewing moves the lease's end without a
// status change or a history entry, so a second execution still finds the
// job in progress after the first lease would have run out; only the
// holder renews, and never a finished job.
func TestRenewKeepsALongTaskItsJob(t *testing.T) {
	tr, c := newTracker()
	ctx := context.Background()
	before, _ := claim(t, tr, "exec-1", false)
	c.advance(50 * time.Second)
	if err := tr.Renew(ctx, "ds:abc:r1", "exec-1"); err != nil {
		t.Fatal(err)
	}
	c.advance(50 * time.Second) // 100 s after the claim: the first lease (1 min) is over
	if _, o := claim(t, tr, "exec-2", false); o != statestore.InProgress {
		t.Fatalf("a second execution got %s; the renewed lease should hold it off", o)
	}
	j, err := tr.Get(ctx, "ds:abc:r1")
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != before.Status || len(j.History) != len(before.History) || !j.LeaseUntil.Equal(c.t.Add(10*time.Second)) {
		t.Fatalf("after renewal: status %s history %d lease until %v; want %s, %d, %v", j.Status, len(j.History), j.LeaseUntil, before.Status, len(before.History), c.t.Add(10*time.Second))
	}
	if err := tr.Renew(ctx, "ds:abc:r1", "exec-2"); !errors.Is(err, statestore.ErrLeaseLost) {
		t.Fatalf("another execution renewed: %v", err)
	}
	if err := to(t, tr, "exec-1", statestore.Completed); err != nil {
		t.Fatal(err)
	}
	if err := tr.Renew(ctx, "ds:abc:r1", "exec-1"); !errors.Is(err, statestore.ErrLeaseLost) {
		t.Fatalf("a finished job renewed: %v", err)
	}
}
