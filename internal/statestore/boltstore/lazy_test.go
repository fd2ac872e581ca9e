package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// TestLazyPut: a lazy write is seen at once by Get and List and by the next
// compare-and-swap, and is committed with the next Put (one commit for
// both), by Close, or on its own after a short while.
func TestLazyPut(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a := statestoretest.FullJob("a")
	if err := s.Put(ctx, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.LazyPut(ctx, a, 0); err == nil {
		t.Error("LazyPut of a new record (expect 0) was accepted")
	}
	a.Attempts = 7
	commits := boltstore.Commits(s)
	if err := s.LazyPut(ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got.Attempts != 7 || got.Version != 2 {
		t.Errorf("Get after LazyPut = attempts %d version %d, %v; want 7, 2", got.Attempts, got.Version, err)
	}
	var listed []statestore.Job
	if err := s.List(ctx, a.Status, func(j statestore.Job) error { listed = append(listed, j); return nil }); err != nil || len(listed) != 1 || listed[0].Attempts != 7 {
		t.Errorf("List after LazyPut = %+v, %v", listed, err)
	}
	if err := s.Put(ctx, a, 1); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("Put expecting the version the lazy write replaced: %v, want ErrConflict", err)
	}
	if err := s.LazyPut(ctx, a, 1); !errors.Is(err, statestore.ErrConflict) {
		t.Errorf("LazyPut expecting the replaced version: %v, want ErrConflict", err)
	}
	if n := boltstore.Commits(s) - commits; n != 0 {
		t.Errorf("lazy writes and refused writes made %d commits, want 0", n)
	}
	// The next durable write, of another job, carries it.
	if err := s.Put(ctx, statestoretest.FullJob("b"), 0); err != nil {
		t.Fatal(err)
	}
	if n := boltstore.Commits(s) - commits; n != 1 {
		t.Errorf("%d commits for a lazy write and a Put, want 1", n)
	}
	// Close commits what is still pending.
	a.Attempts = 8
	if err := s.LazyPut(ctx, a, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	if got, err := s.Get(ctx, "a"); err != nil || got.Attempts != 8 || got.Version != 3 {
		t.Errorf("after reopening: attempts %d version %d, %v; want 8, 3", got.Attempts, got.Version, err)
	}
	// Left alone, a lazy write is committed within about a second.
	a.Attempts = 9
	commits = boltstore.Commits(s)
	if err := s.LazyPut(ctx, a, 3); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for boltstore.Commits(s) == commits && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if boltstore.Commits(s) == commits {
		t.Error("a lazy write was not committed on its own")
	}
}

// TestJobLifeCommits: a job's life on the happy path — claim, Convert's
// attempt, Promote's attempt, COMPLETED — is two commits (each two
// fdatasyncs in bbolt) instead of four: the attempts change neither status
// nor lease owner and ride in the next state change. The record is the same
// as with a backend that writes each at once.
func TestJobLifeCommits(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	mem := statestoretest.NewMemory()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := statestore.WithClock(func() time.Time { return now })
	var records []statestore.Job
	for _, b := range []statestore.Backend{s, mem} {
		tr := statestore.NewTracker(b, clock)
		before := boltstore.Commits(s)
		if _, outcome, err := tr.Claim(ctx, statestore.ClaimRequest{Job: statestore.Job{ID: "j", SourceKey: "k"}, Execution: "e1"}); err != nil || outcome != statestore.Claimed {
			t.Fatalf("claim: %s %v", outcome, err)
		}
		for _, state := range []string{"Convert", "Promote"} {
			if _, err := tr.BeginAttempt(ctx, "j", "e1", state, 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tr.Transition(ctx, statestore.Update{ID: "j", Execution: "e1", To: statestore.Completed, Note: "promoted"}); err != nil {
			t.Fatal(err)
		}
		if b == statestore.Backend(s) {
			if n := boltstore.Commits(s) - before; n != 2 {
				t.Errorf("%d commits for a job's life, want 2", n)
			}
		}
		j, err := b.Get(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, j)
	}
	if diff := statestoretest.JobsEqual(records[0], records[1]); diff != "" {
		t.Errorf("bolt record differs from the in-memory one: %s", diff)
	}
	if records[0].Attempts != 2 || len(records[0].History) != 2 {
		t.Errorf("record: %d attempts, history %+v; want 2 attempts, claim and completion", records[0].Attempts, records[0].History)
	}
}

// TestDeferredCompletion: a COMPLETED written Deferred (Promote's, once
// the outputs are final) rides in the next job's claim, so a job's life
// costs one commit, and until that commit the file holds the job's
// durable claim: what a crash leaves is a job PROCESSING under the lease
// of the execution that claimed it, which the next run takes over, never
// a job with no record or an older one. Commit writes it out at once.
func TestDeferredCompletion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := open(t, path, boltstore.WithLazyFlushAfter(time.Hour))
	tr := statestore.NewTracker(s)
	life := func(id string) {
		t.Helper()
		if _, outcome, err := tr.Claim(ctx, statestore.ClaimRequest{Job: statestore.Job{ID: id, SourceKey: id}, Execution: "e-" + id}); err != nil || outcome != statestore.Claimed {
			t.Fatalf("claim %s: %s %v", id, outcome, err)
		}
		for _, state := range []string{"Convert", "Promote"} {
			if _, err := tr.BeginAttempt(ctx, id, "e-"+id, state, 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tr.Transition(ctx, statestore.Update{ID: id, Execution: "e-" + id, To: statestore.Completed, Note: "promoted", Deferred: true}); err != nil {
			t.Fatal(err)
		}
	}
	// onDisk is the record of id as a crash now would leave it: the
	// file's committed pages, opened as the next run would.
	onDisk := func(id string) (statestore.Job, error) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		crashed := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(crashed, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c := open(t, crashed)
		defer c.Close()
		return c.Get(ctx, id)
	}

	before := boltstore.Commits(s)
	life("a")
	if n := boltstore.Commits(s) - before; n != 1 {
		t.Errorf("%d commits for a job's life with its completion deferred, want 1 (the claim)", n)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got.Status != statestore.Completed {
		t.Errorf("Get after the deferred completion: %s, %v; want COMPLETED", got.Status, err)
	}
	if got, err := onDisk("a"); err != nil || got.Status != statestore.Processing || got.LeaseOwner != "e-a" {
		t.Errorf("on disk before the next commit: %s held by %q, %v; want the durable claim (PROCESSING, e-a)", got.Status, got.LeaseOwner, err)
	}
	before = boltstore.Commits(s)
	life("b")
	if n := boltstore.Commits(s) - before; n != 1 {
		t.Errorf("%d commits for the next job's life, want 1 (its claim, carrying a's completion)", n)
	}
	if got, err := onDisk("a"); err != nil || got.Status != statestore.Completed || got.Attempts != 2 {
		t.Errorf("on disk after the next claim: %s, %d attempts, %v; want COMPLETED with 2 attempts", got.Status, got.Attempts, err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := onDisk("b"); err != nil || got.Status != statestore.Completed {
		t.Errorf("on disk after Commit: %s, %v; want COMPLETED", got.Status, err)
	}
	// A record that does not exist yet is never deferred.
	before = boltstore.Commits(s)
	if _, err := tr.Transition(ctx, statestore.Update{ID: "c", Execution: "e-c", To: statestore.Quarantined, Seed: &statestore.Job{SourceKey: "c"}, Deferred: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := onDisk("c"); err != nil || got.Status != statestore.Quarantined || boltstore.Commits(s)-before != 1 {
		t.Errorf("a seeded record written Deferred: on disk %s, %v after %d commits; want it committed at once", got.Status, err, boltstore.Commits(s)-before)
	}
}
