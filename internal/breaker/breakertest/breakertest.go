// Package breakertest is the conformance suite of breaker.Store and an
// in-memory Store for the breaker's own tests.
package breakertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// Memory is a breaker.Store in a map.
type Memory struct {
	mu   sync.Mutex
	recs map[string]breaker.Record
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{recs: map[string]breaker.Record{}} }

// GetBreaker implements breaker.Store.
func (m *Memory) GetBreaker(_ context.Context, dep string) (breaker.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[dep]
	if !ok {
		return breaker.Record{}, fmt.Errorf("memory: %s: %w", dep, breaker.ErrNotFound)
	}
	return r, nil
}

// PutBreaker implements breaker.Store.
func (m *Memory) PutBreaker(_ context.Context, rec breaker.Record, expect int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec.Dependency == "" {
		return errors.New("memory: record has no dependency")
	}
	cur, ok := m.recs[rec.Dependency]
	if (!ok && expect != 0) || (ok && cur.Version != expect) {
		return fmt.Errorf("memory: %s: %w", rec.Dependency, breaker.ErrConflict)
	}
	rec.Version = expect + 1
	m.recs[rec.Dependency] = rec
	return nil
}

// ListBreakers implements breaker.Store, in dependency order.
func (m *Memory) ListBreakers(_ context.Context, fn func(breaker.Record) error) error {
	m.mu.Lock()
	var recs []breaker.Record
	for _, r := range m.recs {
		recs = append(recs, r)
	}
	m.mu.Unlock()
	slices.SortFunc(recs, func(a, b breaker.Record) int {
		switch {
		case a.Dependency < b.Dependency:
			return -1
		case a.Dependency > b.Dependency:
			return 1
		}
		return 0
	})
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Run is the conformance suite of breaker.Store. newStore is called once
// per subtest and must return an empty store. Subtests whose names start
// with "Concurrent" need atomic conditional writes.
//
// Pinned beyond the interface's comments: a missing record is ErrNotFound;
// every field round-trips (times with time.Equal); PutBreaker stores
// Version expect+1; a stale or absent expected version is ErrConflict; of
// racing breakers exactly one worker turns an expired OPEN into the probe.
func Run(t *testing.T, newStore func(t *testing.T) breaker.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s breaker.Store)
	}{
		{"GetMissing", testGetMissing},
		{"RoundTrip", testRoundTrip},
		{"StaleVersion", testStaleVersion},
		{"List", testList},
		{"ConcurrentPutOneWins", testConcurrentPut},
		{"ConcurrentOneProbe", testConcurrentOneProbe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.UTC)

func testGetMissing(t *testing.T, s breaker.Store) {
	if _, err := s.GetBreaker(context.Background(), "s3:nothing"); !errors.Is(err, breaker.ErrNotFound) {
		t.Fatalf("GetBreaker of a missing record = %v, want ErrNotFound", err)
	}
}

func testRoundTrip(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	want := breaker.Record{Dependency: "s3:dest", State: breaker.Open, Failures: 5, FirstFailure: t0,
		OpenUntil: t0.Add(time.Minute), ProbeUntil: t0.Add(2 * time.Minute), LastError: "s3.Put: SlowDown",
		Opened: 3, UpdatedAt: t0.Add(time.Second), Version: 99}
	if err := s.PutBreaker(ctx, want, 0); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetBreaker(ctx, "s3:dest")
	if err != nil {
		t.Fatal(err)
	}
	want.Version = 1
	if got.Dependency != want.Dependency || got.State != want.State || got.Failures != want.Failures ||
		!got.FirstFailure.Equal(want.FirstFailure) || !got.OpenUntil.Equal(want.OpenUntil) || !got.ProbeUntil.Equal(want.ProbeUntil) ||
		got.LastError != want.LastError || got.Opened != want.Opened || !got.UpdatedAt.Equal(want.UpdatedAt) || got.Version != 1 {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Zero times stay zero.
	closed := breaker.Record{Dependency: "s3:src", State: breaker.Closed, UpdatedAt: t0}
	if err := s.PutBreaker(ctx, closed, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetBreaker(ctx, "s3:src"); err != nil || !got.OpenUntil.IsZero() || !got.FirstFailure.IsZero() || got.State != breaker.Closed {
		t.Fatalf("closed record = %+v, %v", got, err)
	}
}

func testStaleVersion(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	r := breaker.Record{Dependency: "s3:dest", State: breaker.Closed, UpdatedAt: t0}
	if err := s.PutBreaker(ctx, r, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBreaker(ctx, r, 0); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	if err := s.PutBreaker(ctx, breaker.Record{Dependency: "s3:other", UpdatedAt: t0}, 3); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("update of a missing record = %v, want ErrConflict", err)
	}
	r.Failures = 1
	if err := s.PutBreaker(ctx, r, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBreaker(ctx, r, 1); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("stale update = %v, want ErrConflict", err)
	}
	if got, _ := s.GetBreaker(ctx, "s3:dest"); got.Version != 2 || got.Failures != 1 {
		t.Fatalf("stored = %+v, want version 2, 1 failure", got)
	}
}

func testList(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	for _, d := range []string{"s3:b", "s3:a", "s3:c"} {
		if err := s.PutBreaker(ctx, breaker.Record{Dependency: d, State: breaker.Closed, UpdatedAt: t0}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := s.ListBreakers(ctx, func(r breaker.Record) error { got = append(got, r.Dependency); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"s3:a", "s3:b", "s3:c"}) {
		t.Fatalf("ListBreakers = %v", got)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.ListBreakers(ctx, func(breaker.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("ListBreakers with a failing callback = %v after %d records", err, n)
	}
}

func testConcurrentPut(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.PutBreaker(ctx, breaker.Record{Dependency: "s3:dest", State: breaker.Closed, Failures: i, UpdatedAt: t0}, 0)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, breaker.ErrConflict):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d racing creates won, want 1", wins.Load())
	}
}

// testConcurrentOneProbe: workers sharing the store find the cooldown
// over at the same moment; exactly one is let through as the probe.
func testConcurrentOneProbe(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	open := breaker.Record{Dependency: "s3:dest", State: breaker.Open, Failures: 5, OpenUntil: now.Add(-time.Second), UpdatedAt: t0}
	if err := s.PutBreaker(ctx, open, 0); err != nil {
		t.Fatal(err)
	}
	var allowed, refused atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := breaker.New(s, breaker.Policy{Threshold: 5, Window: time.Minute, Cooldown: time.Minute}, breaker.WithClock(func() time.Time { return now }))
			_, err := b.Allow(ctx, "s3:dest")
			var boe *fault.BreakerOpenError
			switch {
			case err == nil:
				allowed.Add(1)
			case errors.As(err, &boe):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 1 || refused.Load() != 11 {
		t.Fatalf("%d probes allowed, %d refused; want 1 and 11", allowed.Load(), refused.Load())
	}
	if got, _ := s.GetBreaker(ctx, "s3:dest"); got.State != breaker.HalfOpen {
		t.Fatalf("state after the probe started = %s, want HALF_OPEN", got.State)
	}
}
