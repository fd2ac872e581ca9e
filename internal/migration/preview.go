package migration

import (
	"context"
	"fmt"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Preview is what HashCheck would decide for src, found out without
// writing anything: no claim, no adoption record, no lease. It reads what
// Handle reads (the object and its sidecars, hashed; the state record; the
// destination's metadata) and decides with the same functions (decideSource,
// decideUnclaimed, decideClaim), so a dry run (geomigrate plan) predicts
// the run: DecisionConvert, or DecisionSkip with the reason a run would
// give. An error is what HashCheck would fail with (an invalid key, a
// pipeline output given as a source, a store failure).
func (h *HashCheck) Preview(ctx context.Context, src Source) (HashCheckOutput, error) {
	out, sidecars, decided, err := h.examine(ctx, src)
	if decided || err != nil {
		return out, err
	}
	job := out.Job
	done := func(v verdict) (HashCheckOutput, error) { return h.decide(ctx, out, sidecars, v) }
	cur, outcome, recordFound, err := h.tracker.Peek(ctx, job.ID)
	if err != nil {
		return out, fmt.Errorf("hashcheck preview: %w", err)
	}
	destMigrated := false
	if !recordFound {
		if destMigrated, err = h.migrated(ctx, job.DestKey, job); err != nil {
			return out, err
		}
	}
	if decideUnclaimed(recordFound, destMigrated) {
		return done(skip(ReasonAlreadyMigrated)) // a run adopts the output
	}
	destMigrated = false
	if outcome == statestore.AlreadyCompleted {
		destKey := cur.DestKey
		if destKey == "" {
			destKey = job.DestKey
		}
		if destMigrated, err = h.migrated(ctx, destKey, job); err != nil {
			return out, err
		}
	}
	v := decideClaim(outcome, destMigrated, false)
	if v.reclaim {
		// A run claims again with Reclaim, which always takes the lease of
		// a COMPLETED record: the output is gone, it is converted again.
		v = decideClaim(statestore.Claimed, false, true)
	}
	return done(v)
}
