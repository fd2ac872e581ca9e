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
	id, err := h.identify(ctx, src)
	if err != nil {
		return HashCheckOutput{}, err
	}
	if v := decideSource(id); v.final {
		if v.err != nil {
			return HashCheckOutput{Source: id.src}, v.err
		}
		return HashCheckOutput{Source: id.src, Decision: v.decision, Reason: v.reason}, nil
	}
	job, sidecars, err := h.identifyContent(ctx, id)
	if err != nil {
		return HashCheckOutput{}, err
	}
	out := HashCheckOutput{Source: id.src, Job: job}
	done := func(v verdict) (HashCheckOutput, error) {
		if v.err != nil {
			return out, v.err
		}
		out.Decision, out.Reason = v.decision, v.reason
		if out.Decision == DecisionConvert {
			out.Route = h.route(ctx, job, sidecars)
		}
		return out, nil
	}
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
