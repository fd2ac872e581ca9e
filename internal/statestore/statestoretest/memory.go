// Package statestoretest holds an in-memory statestore.Backend for unit
// tests and the conformance suite every Backend runs (RunBackendTests).
package statestoretest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Memory is an in-memory statestore.Backend with the same compare-and-swap
// semantics as the real ones. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	jobs map[string]statestore.Job
}

var _ statestore.Backend = (*Memory)(nil)

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory { return &Memory{jobs: map[string]statestore.Job{}} }

func clone(j statestore.Job) statestore.Job {
	j.History = slices.Clone(j.History)
	return j
}

// Get returns a job or statestore.ErrNotFound.
func (m *Memory) Get(ctx context.Context, id string) (statestore.Job, error) {
	if err := ctx.Err(); err != nil {
		return statestore.Job{}, fmt.Errorf("statestoretest.Get: %s: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return statestore.Job{}, fmt.Errorf("statestoretest.Get: %s: %w", id, statestore.ErrNotFound)
	}
	return clone(j), nil
}

// Put stores job with Version expect+1 if the stored Version equals expect
// (expect 0: the job must not exist); otherwise statestore.ErrConflict.
func (m *Memory) Put(ctx context.Context, job statestore.Job, expect int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("statestoretest.Put: %s: %w", job.ID, err)
	}
	switch {
	case job.ID == "":
		return fmt.Errorf("statestoretest.Put: %w", fault.Data(fault.InvalidInput, "job has no ID"))
	case expect < 0:
		return fmt.Errorf("statestoretest.Put: %s: %w", job.ID, fault.Data(fault.InvalidInput, "negative expected version %d", expect))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.jobs[job.ID]
	var have int64
	if ok {
		have = cur.Version
	}
	if have != expect {
		return fmt.Errorf("statestoretest.Put: %s: version is %d, expected %d: %w", job.ID, have, expect, statestore.ErrConflict)
	}
	job.Version = expect + 1
	m.jobs[job.ID] = clone(job)
	return nil
}

// List calls fn for every job with the given status ("" for all), in ID
// order, on a snapshot (fn may write).
func (m *Memory) List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	m.mu.Lock()
	var jobs []statestore.Job
	for _, j := range m.jobs {
		if status == "" || j.Status == status {
			jobs = append(jobs, clone(j))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(jobs, func(a, b statestore.Job) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("statestoretest.List: %s: %w", status, err)
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}
