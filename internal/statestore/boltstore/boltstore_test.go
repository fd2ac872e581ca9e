package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/breaker/breakertest"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

func open(t *testing.T, path string, opts ...boltstore.Option) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend {
		return open(t, filepath.Join(t.TempDir(), "state.db"))
	})
}

func TestConformanceNoSync(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend {
		return open(t, filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	})
}

func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "state.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := statestoretest.FullJob("j1")
	if err := s.Put(ctx, want, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	got, err := s.Get(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := statestoretest.JobsEqual(got, want); diff != "" {
		t.Errorf("after reopen: %s", diff)
	}
	if err := s.Put(ctx, want, 0); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("create after reopen = %v, want ErrConflict", err)
	}
}

// A second opener (another process, or this one) gets a clear error after
// the timeout instead of hanging.
func TestSecondOpenTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	first := open(t, path)
	start := time.Now()
	_, err := boltstore.Open(path, boltstore.WithTimeout(100*time.Millisecond))
	if err == nil {
		t.Fatal("a second Open of a held database succeeded")
	}
	if !errors.Is(err, boltstore.ErrLocked) || fault.TierOf(err) != fault.TierSystemic || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open = %v, want a SystemicError wrapping ErrLocked naming the file", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %s", d)
	}
	// Once the owner closes, the database opens.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, boltstore.WithTimeout(time.Second))
}

func TestClosedStoreIsSystemic(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = s.Get(context.Background(), "x")
	if fault.TierOf(err) != fault.TierSystemic || !strings.Contains(err.Error(), "boltstore.Get: x") {
		t.Errorf("Get on a closed store = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, err := range map[string]error{
		"Put":  s.Put(ctx, statestoretest.FullJob("x"), 0),
		"List": s.List(ctx, "", func(statestore.Job) error { return nil }),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v", name, err)
		}
	}
}

func TestBreakerConformance(t *testing.T) {
	breakertest.Run(t, func(t *testing.T) breaker.Store {
		return open(t, filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	})
}

// TestBreakersAreNotJobs: breaker records live beside the jobs without
// showing up among them.
func TestBreakersAreNotJobs(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	if err := s.PutBreaker(ctx, breaker.Record{Dependency: "s3:dest", State: breaker.Open}, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.List(ctx, "", func(statestore.Job) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("List saw %d jobs (%v), want none", n, err)
	}
	if keys, err := s.CorruptKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("CorruptKeys = %v, %v", keys, err)
	}
}
