// Package breaker is a circuit breaker on the stores the pipeline depends
// on (docs/operations.md, "Circuit breaker"): after Threshold consecutive
// systemic or transient failures of a dependency within Window, the
// breaker opens and calls fail fast with a fault.BreakerOpenError for
// Cooldown; then one call goes through as a probe (HALF_OPEN): its success
// closes the breaker, its failure opens it for another Cooldown.
//
// The state is shared by every worker through a Store (a DynamoDB item per
// dependency on AWS, the embedded state database locally) and changed only
// by compare-and-swap on Record.Version, so concurrent workers agree on one
// transition and exactly one of them sends the probe.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// State is a breaker's position.
type State string

const (
	Closed   State = "CLOSED"
	Open     State = "OPEN"
	HalfOpen State = "HALF_OPEN"
)

var (
	// ErrNotFound: no record for the dependency (it is CLOSED).
	ErrNotFound = errors.New("breaker: no record")
	// ErrConflict: a lost compare-and-swap; re-read and decide again.
	ErrConflict = errors.New("breaker: conflict")
)

// Record is the shared state of one dependency's breaker.
type Record struct {
	Dependency string `json:"dependency" dynamodbav:"dependency"`
	State      State  `json:"state" dynamodbav:"breaker_state"`
	// Failures counts consecutive counted failures since FirstFailure.
	Failures     int       `json:"failures" dynamodbav:"failures"`
	FirstFailure time.Time `json:"first_failure,omitzero" dynamodbav:"first_failure,omitempty"`
	// OpenUntil is the end of the cooldown (OPEN).
	OpenUntil time.Time `json:"open_until,omitzero" dynamodbav:"open_until,omitempty"`
	// ProbeUntil is when an unanswered probe is given up (HALF_OPEN), so
	// a worker that died mid-probe does not hold the breaker half-open.
	ProbeUntil time.Time `json:"probe_until,omitzero" dynamodbav:"probe_until,omitempty"`
	LastError  string    `json:"last_error,omitempty" dynamodbav:"last_error,omitempty"`
	// Opened counts how many times the breaker opened (for status).
	Opened    int       `json:"opened" dynamodbav:"opened"`
	UpdatedAt time.Time `json:"updated_at" dynamodbav:"breaker_updated_at"`
	// Version increases by one on every write; the compare-and-swap token.
	Version int64 `json:"version" dynamodbav:"version"`
}

// Store keeps breaker records. PutBreaker is a compare-and-swap on
// Version: expect 0 means "must not exist yet"; otherwise the stored
// Version must equal expect; a lost race returns ErrConflict. The stored
// record gets Version expect+1.
type Store interface {
	GetBreaker(ctx context.Context, dependency string) (Record, error)
	PutBreaker(ctx context.Context, rec Record, expect int64) error
	ListBreakers(ctx context.Context, fn func(Record) error) error
}

// Policy sets when a breaker opens and for how long.
type Policy struct {
	// Threshold consecutive counted failures open the breaker (0: the
	// breaker is off). Keep it at or below the state machine's attempts
	// per task (5) so one job's retries open it before its budget is spent.
	Threshold int
	// Window: failures further apart than this do not add up.
	Window time.Duration
	// Cooldown is how long the breaker stays OPEN before a probe.
	Cooldown time.Duration
	// ProbeTimeout is how long a probe may take before another worker may
	// probe again (0: Cooldown).
	ProbeTimeout time.Duration
}

// DefaultPolicy: 5 failures within 2 minutes open the breaker for 1 minute.
var DefaultPolicy = Policy{Threshold: 5, Window: 2 * time.Minute, Cooldown: time.Minute}

func (p Policy) probeTimeout() time.Duration {
	if p.ProbeTimeout > 0 {
		return p.ProbeTimeout
	}
	return p.Cooldown
}

// Transition is a change of state, reported to the log and to metrics.
type Transition struct {
	Dependency string
	From, To   State
	Failures   int
	Reason     string
}

// DefaultClosedCache is how long a worker trusts a healthy (CLOSED, no
// failures) record it read before reading it again: Convert reads a source
// by ranges, one call per block, and a store read per call would double
// the requests. A worker's own counted failure forgets it at once; another
// worker's opening is seen within this time.
const DefaultClosedCache = 2 * time.Second

// Breaker applies a Policy to the records of a Store.
type Breaker struct {
	store    Store
	policy   Policy
	now      func() time.Time
	log      *slog.Logger
	observe  func(Transition)
	cacheFor time.Duration

	mu    sync.Mutex
	clean map[string]cleanRead // dependency → the healthy record read last
	// forgets counts forget calls: a healthy record read before one of
	// this process's failures (on another worker) must not be remembered
	// after it.
	forgets uint64
}

// cleanRead is a healthy record's read, trusted until until.
type cleanRead struct {
	until  time.Time
	opened int
}

// Option configures New.
type Option func(*Breaker)

// WithClock sets the time source (tests use the executor's fake clock).
func WithClock(now func() time.Time) Option { return func(b *Breaker) { b.now = now } }

// WithLogger logs transitions to l.
func WithLogger(l *slog.Logger) Option { return func(b *Breaker) { b.log = l } }

// WithObserver calls fn on every transition this process made (metrics).
func WithObserver(fn func(Transition)) Option { return func(b *Breaker) { b.observe = fn } }

// WithClosedCache sets how long a healthy record is trusted without
// reading it again (0: read before every call). Default
// DefaultClosedCache.
func WithClosedCache(d time.Duration) Option { return func(b *Breaker) { b.cacheFor = d } }

// New returns a breaker over store with policy.
func New(store Store, policy Policy, opts ...Option) *Breaker {
	b := &Breaker{store: store, policy: policy, now: time.Now, log: slog.New(slog.DiscardHandler),
		cacheFor: DefaultClosedCache, clean: map[string]cleanRead{}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Enabled reports whether the policy can open the breaker.
func (b *Breaker) Enabled() bool { return b != nil && b.policy.Threshold > 0 }

// Policy returns the breaker's policy.
func (b *Breaker) Policy() Policy { return b.policy }

// Ticket is what Allow saw; Done uses it to skip a write when nothing
// changes (the common case: a closed breaker and a call that succeeded).
type Ticket struct {
	dependency string
	clean      bool // CLOSED without counted failures when allowed
	// opened is Record.Opened when allowed (known: the record was read):
	// an answer to a call allowed before the breaker's latest opening
	// says nothing about the dependency since, so it neither closes nor
	// reopens that opening nor counts after it (see Done).
	opened int
	known  bool
}

// predates reports whether the call of t was allowed before rec's latest
// opening.
func (t Ticket) predates(rec Record) bool {
	return t.known && t.opened < rec.Opened
}

// Allow decides whether a call to dependency may be made. It returns a
// *fault.BreakerOpenError while the breaker is OPEN (or HALF_OPEN with a
// probe in flight); once the cooldown is over the first caller turns it
// HALF_OPEN and is let through as the probe. A store that cannot be read
// lets the call through (logged): the breaker never fails a call itself.
func (b *Breaker) Allow(ctx context.Context, dependency string) (Ticket, error) {
	t := Ticket{dependency: dependency}
	if !b.Enabled() {
		t.clean = true
		return t, nil
	}
	if opened, ok := b.healthy(dependency); ok {
		t.clean, t.opened, t.known = true, opened, true
		return t, nil
	}
	for {
		gen := b.generation()
		rec, err := b.get(ctx, dependency)
		if err != nil {
			// Fail open: the breaker saves calls to a dead dependency; when
			// its own state cannot be read, the call itself decides.
			b.log.Warn("breaker: state unreadable; call let through", "dependency", dependency, "error", err)
			t.clean = true
			return t, nil
		}
		now := b.now()
		next, allow := decideAllow(rec, now, b.policy)
		if !allow {
			return t, openError(rec, now, nil)
		}
		t.opened, t.known = rec.Opened, true
		if next == nil {
			t.clean = rec.State == Closed && rec.Failures == 0
			if t.clean {
				b.remember(dependency, now, rec.Opened, gen)
			}
			return t, nil
		}
		if err := b.put(ctx, *next, rec.Version); errors.Is(err, ErrConflict) {
			continue
		} else if err != nil {
			b.log.Warn("breaker: probe not recorded; call let through", "dependency", dependency, "error", err)
			return t, nil
		}
		b.report(Transition{Dependency: dependency, From: rec.State, To: next.State, Failures: rec.Failures, Reason: "cooldown over: probing"})
		return t, nil
	}
}

// Done records the outcome of an allowed call and returns the error the
// caller should see: callErr itself, or a *fault.BreakerOpenError wrapping
// it when the breaker is (now) open, so the job waits instead of spending
// its retries. Only systemic and transient failures count; an answer such
// as "not found" or "precondition failed" shows the dependency is up.
func (b *Breaker) Done(ctx context.Context, t Ticket, callErr error) error {
	if !b.Enabled() || ctx.Err() != nil {
		return callErr
	}
	failed := Counts(callErr)
	if !failed && t.clean {
		return callErr
	}
	if failed {
		b.forget(t.dependency)
	}
	for {
		rec, err := b.get(ctx, t.dependency)
		if err != nil {
			b.log.Warn("breaker: state not recorded", "dependency", t.dependency, "error", err)
			return callErr
		}
		now := b.now()
		if t.predates(rec) && (failed || rec.State != Closed) {
			// Allowed before the breaker (re)opened and answered since: the
			// opening stands (a late success does not close it, a late
			// failure does not end the probe in flight), and a failure, even
			// after the breaker closed again, belongs to the outage it
			// covered: not counted, and reported as the breaker (CLOSED: wait
			// a second), so the job starts again instead of spending a retry.
			if failed {
				return openError(rec, now, callErr)
			}
			return callErr
		}
		next := decideDone(rec, now, b.policy, callErr)
		if next == nil {
			if failed && rec.State == Open {
				return openError(rec, now, callErr)
			}
			return callErr
		}
		if err := b.put(ctx, *next, rec.Version); errors.Is(err, ErrConflict) {
			continue
		} else if err != nil {
			b.log.Warn("breaker: state not recorded", "dependency", t.dependency, "error", err)
			return callErr
		}
		if next.State != rec.State {
			reason := "probe succeeded"
			switch {
			case next.State == Open && rec.State == HalfOpen:
				reason = "probe failed"
			case next.State == Open:
				reason = fmt.Sprintf("%d consecutive failures", next.Failures)
			case rec.State == Open:
				reason = "a call succeeded"
			}
			b.report(Transition{Dependency: t.dependency, From: rec.State, To: next.State, Failures: next.Failures, Reason: reason})
		}
		if next.State == Open {
			return openError(*next, now, callErr)
		}
		return callErr
	}
}

// Counts reports whether a call's error counts against its dependency:
// a systemic or transient failure, not an answer about the data.
func Counts(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var open *fault.BreakerOpenError
	if errors.As(err, &open) {
		return false
	}
	switch fault.TierOf(err) {
	case fault.TierTransient, fault.TierSystemic:
		return true
	}
	return false
}

// decideAllow returns whether a call may go and, when the call changes
// the record (it becomes the probe), the record to write.
func decideAllow(rec Record, now time.Time, p Policy) (*Record, bool) {
	switch rec.State {
	case Open:
		if now.Before(rec.OpenUntil) {
			return nil, false
		}
	case HalfOpen:
		if now.Before(rec.ProbeUntil) {
			return nil, false
		}
	default:
		return nil, true
	}
	next := rec
	next.State, next.ProbeUntil, next.UpdatedAt = HalfOpen, now.Add(p.probeTimeout()), now
	return &next, true
}

// decideDone returns the record after a call's outcome, or nil when the
// record stays as it is.
func decideDone(rec Record, now time.Time, p Policy, callErr error) *Record {
	next := rec
	next.UpdatedAt = now
	if !Counts(callErr) {
		if rec.State == Closed && rec.Failures == 0 {
			return nil
		}
		next.State, next.Failures, next.FirstFailure, next.OpenUntil, next.ProbeUntil = Closed, 0, time.Time{}, time.Time{}, time.Time{}
		return &next
	}
	next.LastError = truncate(callErr.Error(), 500)
	switch rec.State {
	case Open:
		return nil // opened by another worker meanwhile
	case HalfOpen:
		next.Failures++
		return opened(next, now, p)
	}
	if rec.Failures > 0 && now.Sub(rec.FirstFailure) <= p.Window {
		next.Failures++
	} else {
		next.Failures, next.FirstFailure = 1, now
	}
	if next.Failures >= p.Threshold {
		return opened(next, now, p)
	}
	return &next
}

func opened(r Record, now time.Time, p Policy) *Record {
	r.State, r.OpenUntil, r.ProbeUntil = Open, now.Add(p.Cooldown), time.Time{}
	r.Opened++
	return &r
}

// openError is the fail-fast error for rec at now; RetryAfterSeconds is
// the rest of the cooldown (or of the probe), at least one second.
func openError(rec Record, now time.Time, cause error) error {
	until := rec.OpenUntil
	if rec.State == HalfOpen {
		until = rec.ProbeUntil
	}
	secs := max(int(math.Ceil(until.Sub(now).Seconds())), 1)
	return &fault.BreakerOpenError{Dependency: rec.Dependency, State: string(rec.State), RetryAfterSeconds: secs, Err: cause}
}

// healthy reports whether a healthy record of dependency was read within
// cacheFor, and its Opened.
func (b *Breaker) healthy(dependency string) (int, bool) {
	if b.cacheFor <= 0 {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.clean[dependency]
	return r.opened, ok && b.now().Before(r.until)
}

// remember trusts a healthy record read when forgets was gen, unless a
// failure was recorded since: it may have been read before that failure.
func (b *Breaker) remember(dependency string, now time.Time, opened int, gen uint64) {
	if b.cacheFor <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.forgets != gen {
		return
	}
	b.clean[dependency] = cleanRead{until: now.Add(b.cacheFor), opened: opened}
}

func (b *Breaker) forget(dependency string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forgets++
	delete(b.clean, dependency)
}

func (b *Breaker) generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.forgets
}

func (b *Breaker) get(ctx context.Context, dependency string) (Record, error) {
	rec, err := b.store.GetBreaker(ctx, dependency)
	switch {
	case errors.Is(err, ErrNotFound):
		return Record{Dependency: dependency, State: Closed}, nil
	case err != nil:
		return Record{}, fmt.Errorf("breaker: %s: %w", dependency, err)
	}
	if rec.State == "" {
		rec.State = Closed
	}
	return rec, nil
}

func (b *Breaker) put(ctx context.Context, rec Record, expect int64) error {
	if err := b.store.PutBreaker(ctx, rec, expect); err != nil {
		return fmt.Errorf("breaker: %s: %w", rec.Dependency, err)
	}
	return nil
}

func (b *Breaker) report(t Transition) {
	level := slog.LevelInfo
	if t.To == Open {
		level = slog.LevelWarn
	}
	b.log.Log(context.Background(), level, "circuit breaker "+string(t.To), "dependency", t.Dependency,
		"from", string(t.From), "to", string(t.To), "failures", t.Failures, "reason", t.Reason)
	if b.observe != nil {
		b.observe(t)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// List calls fn for every recorded breaker, as stored (status output).
func List(ctx context.Context, s Store, fn func(Record) error) error {
	if err := s.ListBreakers(ctx, fn); err != nil {
		return fmt.Errorf("breaker.List: %w", err)
	}
	return nil
}

// Counter is where transitions are counted (migration.Metrics; EMF on
// AWS).
type Counter interface {
	Count(name string, value float64, unit string, dims ...string)
}

// MetricTransitions counts breaker transitions, once by Dependency and To
// (the new state), once by To alone: the stack's alarm watches To=OPEN
// without knowing the bucket names.
const MetricTransitions = "BreakerTransitions"

// CountTransitions is an observer (WithObserver) counting each transition
// on c.
func CountTransitions(c Counter) func(Transition) {
	return func(t Transition) {
		if c != nil {
			c.Count(MetricTransitions, 1, "Count", "Dependency", t.Dependency, "To", string(t.To))
			c.Count(MetricTransitions, 1, "Count", "To", string(t.To))
		}
	}
}
