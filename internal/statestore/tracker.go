package statestore

// Size: the job tracker: one lease state machine's transitions and their helpers read top to bottom.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// allowed lists the legal status changes. Beyond the job lifecycle
// (docs/decisions/0006: PENDING → PROCESSING → COMPLETED; PROCESSING →
// RETRYING → COMPLETED | QUARANTINED; PROCESSING → REMEDIAL | QUARANTINED) it
// admits RETRYING → REMEDIAL (a retry that meets a data fault) and the
// re-entries a replay needs, and "" → COMPLETED to adopt an output that an
// earlier run (or another tool) already promoted: a quarantined job (systemic
// fault, since fixed) and a job whose worker died (lease expired) may be
// claimed again.
var allowed = map[Status][]Status{
	"":          {Pending, Processing, Completed, Remedial, Quarantined},
	Pending:     {Processing, Remedial, Quarantined},
	Processing:  {Retrying, Completed, Remedial, Quarantined, Processing},
	Retrying:    {Retrying, Completed, Remedial, Quarantined, Processing},
	Completed:   {Processing},
	Remedial:    {Processing},
	Quarantined: {Processing},
}

// CanTransition reports whether a job may move from one status to another.
func CanTransition(from, to Status) bool {
	for _, s := range allowed[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ClaimOutcome says what a claim found.
type ClaimOutcome string

const (
	// Claimed: the caller now holds the lease and must do the work.
	Claimed ClaimOutcome = "claimed"
	// AlreadyCompleted: the job finished before; nothing to do.
	AlreadyCompleted ClaimOutcome = "already_completed"
	// InProgress: another execution holds a live lease.
	InProgress ClaimOutcome = "in_progress"
	// AwaitingRemediation: the data was found at fault before and has not
	// changed; converting it again would fail the same way.
	AwaitingRemediation ClaimOutcome = "awaiting_remediation"
)

// Tracker applies the job lifecycle rules over a Backend.
type Tracker struct {
	backend Backend
	now     func() time.Time
	lease   time.Duration
	ttl     time.Duration

	// holder and vouch are set by SetHolder: the run this Tracker's leases
	// name, and how long each heartbeat vouches for it.
	holder string
	vouch  time.Duration
	mu     sync.Mutex
	held   map[string]string // job ID → execution, the leases Beat refreshes
	// records is WithRecordCache's (nil: every change reads the record).
	records *recordCache
}

// TrackerOption configures a Tracker.
type TrackerOption func(*Tracker)

// WithClock sets the time source (tests).
func WithClock(now func() time.Time) TrackerOption { return func(t *Tracker) { t.now = now } }

// DefaultLease is the lease of a Tracker built without WithLease.
const DefaultLease = 20 * time.Minute

// WithLease sets how long a claim stays exclusive without renewal. It must
// outlast the longest single task attempt (Lambda: 15 minutes). Zero or less
// keeps DefaultLease: a zero lease would expire as it is taken, and every
// execution of the same job would take it over (docs/decisions/0014).
func WithLease(d time.Duration) TrackerOption {
	return func(t *Tracker) {
		if d > 0 {
			t.lease = d
		}
	}
}

// Lease is how long a claim stays exclusive without renewal.
func (t *Tracker) Lease() time.Duration { return t.lease }

// WithTTL sets how long terminal records are kept (0: forever).
func WithTTL(d time.Duration) TrackerOption { return func(t *Tracker) { t.ttl = d } }

// NewTracker returns a Tracker over b.
func NewTracker(b Backend, opts ...TrackerOption) *Tracker {
	t := &Tracker{backend: b, now: time.Now, lease: DefaultLease}
	for _, o := range opts {
		o(t)
	}
	return t
}

// SetHolder makes every lease this Tracker takes or renews name holder (a
// run's identity) with a heartbeat that vouches for it for vouch; Beat
// renews the heartbeats of the leases it holds. Set once, before use, by a
// run that can beat (a local run); a Tracker without a holder takes
// leases that only expire (Step Functions' tasks cannot beat between
// states). docs/decisions/0102.
func (t *Tracker) SetHolder(holder string, vouch time.Duration) {
	t.holder, t.vouch = holder, vouch
	t.held = map[string]string{}
}

// Holder is the run SetHolder named ("" if none).
func (t *Tracker) Holder() string { return t.holder }

// stamp puts this Tracker's holder and a fresh heartbeat on a lease it
// writes for execution, and remembers the lease for Beat.
func (t *Tracker) stamp(j *Job, execution string, now time.Time) {
	if t.holder == "" {
		return
	}
	j.Holder, j.HeartbeatUntil = t.holder, now.Add(t.vouch)
	t.mu.Lock()
	t.held[j.ID] = execution
	t.mu.Unlock()
}

// forget drops a lease from those Beat refreshes.
func (t *Tracker) forget(id string) {
	if t.holder == "" {
		return
	}
	t.mu.Lock()
	delete(t.held, id)
	t.mu.Unlock()
}

// Beat renews the heartbeat (and the lease) of every unfinished job this
// Tracker's run holds, and forgets those it holds no more. It returns how
// many it renewed.
func (t *Tracker) Beat(ctx context.Context) (int, error) {
	if t.holder == "" {
		return 0, nil
	}
	t.mu.Lock()
	held := make(map[string]string, len(t.held))
	for id, e := range t.held {
		held[id] = e
	}
	t.mu.Unlock()
	n := 0
	var errs []error
	for id, execution := range held {
		for {
			now := t.now().UTC()
			cur, err := t.backend.Get(ctx, id)
			if err != nil {
				errs = append(errs, fmt.Errorf("statestore.Beat: %s: %w", id, err))
				break
			}
			if cur.LeaseOwner != execution || cur.Status.Terminal() || !now.Before(cur.LeaseUntil) || cur.Holder != t.holder {
				t.mu.Lock()
				if t.held[id] == execution {
					delete(t.held, id)
				}
				t.mu.Unlock()
				break
			}
			next := cur
			next.HeartbeatUntil, next.LeaseUntil = now.Add(t.vouch), now.Add(t.lease)
			next.UpdatedAt, next.Version = now, cur.Version+1
			err = t.backend.Put(ctx, next, cur.Version)
			if err != nil {
				t.records.drop(id)
			}
			if errors.Is(err, ErrConflict) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("statestore.Beat: %s: %w", id, err))
			} else {
				t.records.wrote(next)
				n++
			}
			break
		}
	}
	return n, errors.Join(errs...)
}

// Live reports whether a job's lease still excludes other executions at
// now: unexpired, and vouched for by its heartbeat if it has one.
func Live(j Job, now time.Time) bool {
	if !now.Before(j.LeaseUntil) {
		return false
	}
	return j.HeartbeatUntil.IsZero() || now.Before(j.HeartbeatUntil)
}

// RetryAt is when a claim of a job held by a live lease can next succeed
// if its holder stops now: the heartbeat's end, or the lease's.
func RetryAt(j Job) time.Time {
	if !j.HeartbeatUntil.IsZero() && j.HeartbeatUntil.Before(j.LeaseUntil) {
		return j.HeartbeatUntil
	}
	return j.LeaseUntil
}

// Get returns the job record.
func (t *Tracker) Get(ctx context.Context, id string) (Job, error) { return t.backend.Get(ctx, id) }

// List passes every job with the status ("" for all) to fn.
func (t *Tracker) List(ctx context.Context, status Status, fn func(Job) error) error {
	return t.backend.List(ctx, status, fn)
}

// ClaimRequest asks for the lease on a job.
type ClaimRequest struct {
	Job       Job    // identity and source fields of the job; ID required
	Execution string // the claiming execution; also the lease owner
	Attempt   int    // $$.State.RetryCount of the claiming task
	// Reclaim forces a new run of a job whose record says COMPLETED or
	// REMEDIAL (the output is gone, or an operator replays it).
	Reclaim bool
}

// Claim takes the lease on a job unless it is done, awaiting remediation or
// held by a live lease of another execution. A claim by the execution that
// already holds the lease succeeds again, so a retried task is harmless.
func (t *Tracker) Claim(ctx context.Context, req ClaimRequest) (Job, ClaimOutcome, error) {
	if req.Job.ID == "" || req.Execution == "" {
		return Job{}, "", errors.New("statestore.Claim: job ID and execution are required")
	}
	for {
		now := t.now().UTC()
		cur, err := t.backend.Get(ctx, req.Job.ID)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Job{}, "", fmt.Errorf("statestore.Claim: %s: %w", req.Job.ID, err)
		}
		outcome, write := standing(cur, exists, req.Execution, req.Reclaim, now)
		if !write {
			if outcome == Claimed && cur.Holder == t.holder {
				t.stamp(&Job{ID: cur.ID}, req.Execution, now)
			}
			return cur, outcome, nil
		}
		var note string
		switch {
		case !exists:
			cur = req.Job
			cur.Status, cur.Version, cur.History, cur.Attempts = "", 0, nil, 0
			cur.CreatedAt = now
		case (cur.Status == Processing || cur.Status == Retrying) && now.Before(cur.LeaseUntil):
			note = "heartbeat of " + cur.LeaseOwner + " stopped (" + cur.Holder + "); taken over"
		case cur.Status == Processing || cur.Status == Retrying:
			note = "lease of " + cur.LeaseOwner + " expired; taken over"
		case cur.Status == Quarantined:
			note = "replay after quarantine"
		case cur.Status == Completed || cur.Status == Remedial:
			note = "reclaimed"
		}
		next := cur
		next.LeaseOwner = req.Execution
		next.LeaseUntil = now.Add(t.lease)
		next.Tier, next.ErrorName, next.ErrorCause = "", "", ""
		next.ExpiresAt = 0
		next.Holder, next.HeartbeatUntil = "", time.Time{}
		t.stamp(&next, req.Execution, now)
		t.record(&next, Processing, req.Execution, req.Attempt, note, now)
		next.UpdatedAt, next.Version = now, cur.Version+1
		if err := t.backend.Put(ctx, next, cur.Version); err != nil {
			t.records.drop(req.Job.ID)
			if errors.Is(err, ErrConflict) {
				continue // someone else wrote first: decide again on fresh state
			}
			return Job{}, "", fmt.Errorf("statestore.Claim: %s: %w", req.Job.ID, err)
		}
		t.records.wrote(next)
		return next, Claimed, nil
	}
}

// standing is what a claim by execution finds in the record cur (exists:
// there is one) at now: the outcome, and whether the claim must write the
// record (take the lease) to get it. Claim acts on it; Peek only reports it.
func standing(cur Job, exists bool, execution string, reclaim bool, now time.Time) (ClaimOutcome, bool) {
	switch {
	case !exists:
		return Claimed, true
	case cur.Status == Completed && !reclaim:
		return AlreadyCompleted, false
	case cur.Status == Remedial && !reclaim:
		return AwaitingRemediation, false
	case cur.Status == Processing || cur.Status == Retrying:
		switch {
		case cur.LeaseOwner == execution:
			return Claimed, false
		case Live(cur, now):
			return InProgress, false
		}
	}
	return Claimed, true
}

// Peek is what a Claim of job id by a new execution would find now, without
// writing anything (a dry run): Claimed when it would take the lease. found
// reports whether a record exists.
func (t *Tracker) Peek(ctx context.Context, id string) (job Job, outcome ClaimOutcome, found bool, err error) {
	cur, err := t.backend.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return Job{}, Claimed, false, nil
	case err != nil:
		return Job{}, "", false, fmt.Errorf("statestore.Peek: %s: %w", id, err)
	}
	outcome, _ = standing(cur, true, "", false, t.now().UTC())
	return cur, outcome, true, nil
}

// Update is a status change requested by the lease holder.
type Update struct {
	ID        string
	Execution string
	Attempt   int
	To        Status
	Note      string
	// Seed creates the record in the target status when none exists (a job
	// that failed before it could be claimed still gets a terminal record).
	Seed *Job
	// Mutate, if set, changes other fields of the record being written.
	Mutate func(*Job)
	// Deferred lets a LazyPutter backend commit this write with the next
	// one (docs/decisions/0115). Only for a change recovery redoes when a
	// crash loses it: Promote's COMPLETED, once every output is durable
	// at its final key. The durable claim before it is then what the
	// next run finds; it takes the job over and finds the outputs
	// promoted. A record that does not exist yet is written at once.
	Deferred bool

	// resume: an attempt of the lease's own execution, which may re-enter
	// a job that execution's failure quarantined (BeginAttempt).
	resume bool
}

// ErrLeaseLost reports that another execution holds the job now.
var ErrLeaseLost = errors.New("statestore: lease held by another execution")

// Transition moves a job to u.To if the lifecycle allows it and the caller
// holds the lease (or the job is not leased). Moving to the status the job
// already has by the same execution is a no-op apart from Mutate, so a
// retried task can repeat it.
func (t *Tracker) Transition(ctx context.Context, u Update) (Job, error) {
	return t.transition(ctx, u, false)
}

// transition is Transition; lazy lets a Backend that is a LazyPutter hold
// the write back when it changes neither the status nor the lease owner.
func (t *Tracker) transition(ctx context.Context, u Update, lazy bool) (Job, error) {
	for {
		now := t.now().UTC()
		// A remembered record only ever leads to a conditional write: any
		// decision not to write is made again on the record read back.
		cur, remembered := t.records.get(u.ID)
		var err error
		if !remembered {
			cur, err = t.backend.Get(ctx, u.ID)
		}
		reread := func() bool {
			if remembered {
				t.records.drop(u.ID)
			}
			return remembered
		}
		switch {
		case errors.Is(err, ErrNotFound) && u.Seed != nil:
			cur = *u.Seed
			cur.ID, cur.Status, cur.Version, cur.History = u.ID, "", 0, nil
			cur.CreatedAt = now
		case err != nil:
			return Job{}, fmt.Errorf("statestore.Transition: %s: %w", u.ID, err)
		}
		if cur.LeaseOwner != "" && cur.LeaseOwner != u.Execution && !cur.Status.Terminal() && Live(cur, now) {
			if reread() {
				continue
			}
			return cur, fmt.Errorf("statestore.Transition: %s → %s: %w (%s)", u.ID, u.To, ErrLeaseLost, cur.LeaseOwner)
		}
		if u.resume && cur.Status.Terminal() && cur.LeaseOwner != u.Execution {
			if reread() {
				continue
			}
			// Another execution claimed the job since (a replay, a take-over)
			// and finished it: this one's claim is gone.
			return cur, fmt.Errorf("statestore.Transition: %s (%s) → %s: %w (%s)", u.ID, cur.Status, u.To, ErrLeaseLost, cur.LeaseOwner)
		}
		if u.resume && cur.Status == Quarantined && cur.LeaseOwner == u.Execution {
			// The same execution resumes (Step Functions redrive keeps the
			// execution ARN and reruns the failed state, docs/decisions/0102):
			// its job re-enters PROCESSING, as a claim after quarantine would.
			u.To = Processing
			u.Note = "redriven: " + u.Note
		}
		same := cur.Status == u.To && cur.LeaseOwner == u.Execution
		if !same && !CanTransition(cur.Status, u.To) {
			if reread() {
				continue
			}
			return cur, fmt.Errorf("statestore.Transition: %s: %s → %s is not allowed", u.ID, cur.Status, u.To)
		}
		next := cur
		if u.Mutate != nil {
			u.Mutate(&next)
		}
		if !same || u.To == Retrying {
			t.record(&next, u.To, u.Execution, u.Attempt, u.Note, now)
		}
		next.UpdatedAt, next.Version = now, cur.Version+1
		next.LeaseOwner = u.Execution
		if u.To.Terminal() {
			next.LeaseUntil = time.Time{}
			next.Holder, next.HeartbeatUntil = "", time.Time{}
			if t.ttl > 0 {
				next.ExpiresAt = now.Add(t.ttl).Unix()
			}
		} else {
			next.LeaseUntil = now.Add(t.lease)
			t.stamp(&next, u.Execution, now)
		}
		put := t.backend.Put
		if lp, ok := t.backend.(LazyPutter); ok && ((lazy && same) || u.Deferred) && cur.Version > 0 {
			put = lp.LazyPut
		}
		if err := put(ctx, next, cur.Version); err != nil {
			t.records.drop(u.ID)
			if errors.Is(err, ErrConflict) {
				continue
			}
			return Job{}, fmt.Errorf("statestore.Transition: %s: %w", u.ID, err)
		}
		t.records.wrote(next)
		if u.To.Terminal() {
			t.forget(u.ID)
		}
		return next, nil
	}
}

// BeginAttempt records that a task attempt starts on a claimed job: the
// first attempt keeps PROCESSING, a retry moves it to RETRYING. Either way
// the lease is renewed and the attempt counted, which is what later tells
// first attempts from retries and how many were made. When the status does
// not change, a LazyPutter backend commits the record with the job's next
// state change (docs/decisions/0083): after a crash the claim, held by the
// same execution, is all recovery needs. The execution that holds the job
// may also resume it after its own failure quarantined it (a redrive);
// once another execution has claimed it, the attempt is ErrLeaseLost.
func (t *Tracker) BeginAttempt(ctx context.Context, id, execution, state string, attempt int) (Job, error) {
	to := Processing
	if attempt > 0 {
		to = Retrying
	}
	return t.transition(ctx, Update{
		ID: id, Execution: execution, Attempt: attempt, To: to,
		Note:   fmt.Sprintf("%s attempt %d", state, attempt+1),
		Mutate: func(j *Job) { j.Attempts++ },
		resume: true,
	}, true)
}

func (t *Tracker) record(j *Job, to Status, execution string, attempt int, note string, now time.Time) {
	tr := Transition{At: now, From: j.Status, To: to, Execution: execution, Attempt: attempt, Note: note}
	if to == Remedial || to == Quarantined {
		tr.Tier = j.Tier
	}
	j.History = append(j.History, tr)
	if over := len(j.History) - HistoryLimit; over > 0 {
		j.History = append([]Transition(nil), j.History[over:]...)
	}
	j.Status = to
}

// Release gives up the lease an execution holds on an unfinished job, so
// the next run takes it over at once instead of waiting for the lease to
// expire (an interrupted local run, an execution that timed out). A job
// held by someone else, or already finished, is left alone.
func (t *Tracker) Release(ctx context.Context, id, execution, note string) error {
	for {
		now := t.now().UTC()
		cur, err := t.backend.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("statestore.Release: %s: %w", id, err)
		case cur.Status.Terminal() || cur.LeaseOwner != execution || !now.Before(cur.LeaseUntil):
			return nil
		}
		next := cur
		next.History = append(next.History, Transition{At: now, From: cur.Status, To: cur.Status, Execution: execution, Note: "lease released: " + note})
		if over := len(next.History) - HistoryLimit; over > 0 {
			next.History = append([]Transition(nil), next.History[over:]...)
		}
		next.LeaseUntil, next.UpdatedAt, next.Version = now, now, cur.Version+1
		next.HeartbeatUntil = time.Time{}
		t.records.drop(id)
		if err := t.backend.Put(ctx, next, cur.Version); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("statestore.Release: %s: %w", id, err)
		}
		t.forget(id)
		return nil
	}
}

// errFound stops a List early.
var errFound = errors.New("statestore: found")

// FindLeasedBy returns the job whose lease an execution holds or last held
// (a terminal transition keeps the execution as its owner), looking in the
// given statuses in order at records updated since the execution started:
// with a RecentLister backend (DynamoDB's status index is sorted by
// updated_at) that reads only the jobs touched since, not every job.
func (t *Tracker) FindLeasedBy(ctx context.Context, execution string, since time.Time, statuses ...Status) (Job, bool, error) {
	for _, s := range statuses {
		var found Job
		match := func(j Job) error {
			if j.LeaseOwner == execution && j.Status == s && !j.UpdatedAt.Before(since) {
				found = j
				return errFound
			}
			return nil
		}
		var err error
		if rl, ok := t.backend.(RecentLister); ok && !since.IsZero() {
			err = rl.ListUpdatedSince(ctx, s, since, match)
		} else {
			err = t.backend.List(ctx, s, match)
		}
		switch {
		case errors.Is(err, errFound):
			// The listing may lag (an index); the record itself decides.
			cur, err := t.backend.Get(ctx, found.ID)
			if err != nil {
				return Job{}, false, fmt.Errorf("statestore.FindLeasedBy: %s: %w", found.ID, err)
			}
			if cur.LeaseOwner == execution {
				return cur, true, nil
			}
		case err != nil:
			return Job{}, false, fmt.Errorf("statestore.FindLeasedBy: %s: %w", s, err)
		}
	}
	return Job{}, false, nil
}

// Renew extends the lease an execution holds on an unfinished job by the
// tracker's lease from now, with no status change and no history entry: a
// task longer than the lease (the container path) keeps its job while it
// runs. A job held by another execution, or finished, is ErrLeaseLost.
func (t *Tracker) Renew(ctx context.Context, id, execution string) error {
	for {
		now := t.now().UTC()
		cur, err := t.backend.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("statestore.Renew: %s: %w", id, err)
		}
		if cur.LeaseOwner != execution || cur.Status.Terminal() {
			return fmt.Errorf("statestore.Renew: %s (%s, held by %s): %w", id, cur.Status, cur.LeaseOwner, ErrLeaseLost)
		}
		next := cur
		next.LeaseUntil = now.Add(t.lease)
		t.stamp(&next, execution, now)
		next.UpdatedAt, next.Version = now, cur.Version+1
		t.records.drop(id)
		if err := t.backend.Put(ctx, next, cur.Version); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("statestore.Renew: %s: %w", id, err)
		}
		return nil
	}
}

// Note appends a history entry without changing the status, on behalf of
// the execution that holds or last held the job (what happened after the
// job's last transition: a message sent about it, for instance).
func (t *Tracker) Note(ctx context.Context, id, execution, note string) error {
	for {
		now := t.now().UTC()
		cur, err := t.backend.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("statestore.Note: %s: %w", id, err)
		}
		if cur.LeaseOwner != execution {
			return fmt.Errorf("statestore.Note: %s: %w (%s)", id, ErrLeaseLost, cur.LeaseOwner)
		}
		next := cur
		next.History = append(next.History, Transition{At: now, From: cur.Status, To: cur.Status, Execution: execution, Note: note})
		if over := len(next.History) - HistoryLimit; over > 0 {
			next.History = append([]Transition(nil), next.History[over:]...)
		}
		next.UpdatedAt, next.Version = now, cur.Version+1
		t.records.drop(id)
		if err := t.backend.Put(ctx, next, cur.Version); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("statestore.Note: %s: %w", id, err)
		}
		return nil
	}
}
