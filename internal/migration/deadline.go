package migration

import (
	"context"
	"fmt"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// JobDeadline gives the job deadline in force when it is asked
// (internal/policy reads it from the run-time document).
type JobDeadline interface {
	JobDeadline(ctx context.Context) time.Duration
}

// WithJobDeadline makes HashCheck refuse to start an execution's job once
// the execution is older than d's deadline: the job goes to the dead-letter
// queue with a SystemicError saying so, instead of waiting on (a breaker
// loop re-enters HashCheck) until the state machine's own TimeoutSeconds
// ends it unrouted. Executions that do not pass their start time
// (Invocation.Started) are not bounded.
func (h *HashCheck) WithJobDeadline(d JobDeadline) *HashCheck {
	h.deadline = d
	return h
}

// WithClock sets the clock the job deadline is measured on (the executor's
// in tests with a fake one).
func (h *HashCheck) WithClock(now func() time.Time) *HashCheck {
	h.now = now
	return h
}

// checkDeadline fails an execution older than the job deadline in force.
func (h *HashCheck) checkDeadline(ctx context.Context, inv Invocation) error {
	if h.deadline == nil || inv.Started == "" {
		return nil
	}
	started, err := time.Parse(time.RFC3339, inv.Started)
	if err != nil {
		return &fault.SystemicError{Op: "migration.HashCheck", Err: fmt.Errorf("execution start time %q: %w", inv.Started, err)}
	}
	limit := h.deadline.JobDeadline(ctx)
	if age := h.now().Sub(started); limit > 0 && age > limit {
		return &fault.SystemicError{Op: "migration.HashCheck", Err: fmt.Errorf("job deadline of %s passed: the execution started %s ago (run-time policy job_deadline_seconds)",
			limit, age.Truncate(time.Second))}
	}
	return nil
}
