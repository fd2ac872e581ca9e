package statestore

import (
	"slices"
	"sync"
)

// recordCacheMax bounds the records a Tracker remembers: a process that
// claims jobs others finish (a HashCheck function) would otherwise keep
// one per job it ever claimed.
const recordCacheMax = 4096

// WithRecordCache makes the Tracker start a state change of a job from the
// record it last wrote for it, instead of reading the record back first.
// The write is conditional on that record's version, as every write is, so
// a record changed since by anyone else fails it (ErrConflict): the Tracker
// then reads the record and decides again, as after any lost race. A
// decision not to write (a lease lost, a change not allowed) is never made
// on a remembered record alone. For a process that drives each job through
// several states (a CLI run: Claim, then each step's BeginAttempt and the
// final Transition) it saves one read per state change
// (docs/decisions/0116).
func WithRecordCache() TrackerOption {
	return func(t *Tracker) { t.records = &recordCache{m: map[string]Job{}} }
}

// recordCache holds the record a Tracker last wrote for each job, until
// the job ends (a terminal status) or the Tracker writes it another way.
type recordCache struct {
	mu sync.Mutex
	m  map[string]Job
}

// get is the remembered record of id, with a history of its own (a
// transition appends to it).
func (c *recordCache) get(id string) (Job, bool) {
	if c == nil {
		return Job{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.m[id]
	if ok {
		j.History = slices.Clone(j.History)
	}
	return j, ok
}

// wrote remembers j, just written; a terminal record is dropped instead
// (nothing more is written for the job in this run).
func (c *recordCache) wrote(j Job) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if j.Status.Terminal() {
		delete(c.m, j.ID)
		return
	}
	if _, ok := c.m[j.ID]; !ok && len(c.m) >= recordCacheMax {
		clear(c.m)
	}
	j.History = slices.Clone(j.History)
	c.m[j.ID] = j
}

// drop forgets id's record: it was written some other way, or a write of
// it failed (a write whose answer was lost may have landed).
func (c *recordCache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
