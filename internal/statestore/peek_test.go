package statestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// TestPeekAnswersWhatAClaimWould: Peek by a new execution reports the
// outcome Claim would return, and writes nothing (the version is unchanged).
func TestPeekAnswersWhatAClaimWould(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(t *testing.T, tr *statestore.Tracker, c *clock)
		want  statestore.ClaimOutcome
		found bool
	}{
		{"no record", func(*testing.T, *statestore.Tracker, *clock) {}, statestore.Claimed, false},
		{"live lease of another execution", func(t *testing.T, tr *statestore.Tracker, _ *clock) { claim(t, tr, "e1", false) }, statestore.InProgress, true},
		{"expired lease", func(t *testing.T, tr *statestore.Tracker, c *clock) {
			claim(t, tr, "e1", false)
			c.advance(2 * time.Minute)
		}, statestore.Claimed, true},
		{"completed", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e1", false)
			if err := to(t, tr, "e1", statestore.Completed); err != nil {
				t.Fatal(err)
			}
		}, statestore.AlreadyCompleted, true},
		{"awaiting remediation", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e1", false)
			if err := to(t, tr, "e1", statestore.Remedial); err != nil {
				t.Fatal(err)
			}
		}, statestore.AwaitingRemediation, true},
		{"quarantined", func(t *testing.T, tr *statestore.Tracker, _ *clock) {
			claim(t, tr, "e1", false)
			if err := to(t, tr, "e1", statestore.Quarantined); err != nil {
				t.Fatal(err)
			}
		}, statestore.Claimed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, c := newTracker()
			tt.setup(t, tr, c)
			before, _ := tr.Get(ctx, "ds:abc:r1")
			_, got, found, err := tr.Peek(ctx, "ds:abc:r1")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || found != tt.found {
				t.Errorf("Peek = %s (found %v), want %s (found %v)", got, found, tt.want, tt.found)
			}
			after, _ := tr.Get(ctx, "ds:abc:r1")
			if after.Version != before.Version || after.LeaseOwner != before.LeaseOwner {
				t.Errorf("Peek wrote: version %d → %d, lease %q → %q", before.Version, after.Version, before.LeaseOwner, after.LeaseOwner)
			}
			if _, claimed := claim(t, tr, "e2", false); claimed != tt.want {
				t.Errorf("Claim by a new execution = %s, Peek said %s", claimed, tt.want)
			}
		})
	}
}
