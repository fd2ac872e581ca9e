package localrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// TestCrashBeforeTheDeferredCompletionResumes: Promote's COMPLETED waits
// for the next commit of the embedded state store (docs/decisions/0115).
// A crash at that moment (the state file as it is on disk, its lazy
// writes lost) must leave a job that the next run finishes: the job's
// claim is on disk and its outputs are at their final keys, so the run
// that takes it over ends COMPLETED with the same output, one record for
// the file, and nothing queued for remediation or the dead-letter queue.
func TestCrashBeforeTheDeferredCompletionResumes(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "incoming"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := "incoming/point.geojson"
	body := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":1},"geometry":{"type":"Point","coordinates":[10.5,45.25]}}]}`
	if err := os.WriteFile(filepath.Join(src, key), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, src)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	db, err := boltstore.Open(dbPath, boltstore.WithLazyFlushAfter(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p.tracker = statestore.NewTracker(db)
	first := p.run(t, p.store, []string{key})[key]
	if first.Status != localrun.StatusCompleted || len(first.Outputs) == 0 {
		t.Fatalf("first run: %s %s %s", first.Status, first.Error, first.Message)
	}
	output := filepath.Join(p.destDir, first.Outputs[0])
	want := sha(t, output)

	// The crash: what the file holds now, opened by the next run.
	raw, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(crashed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := boltstore.Open(crashed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Close() })
	rec, err := next.Get(ctx, first.JobID)
	if err != nil || rec.Status != statestore.Processing || !strings.HasSuffix(rec.LeaseOwner, ":"+first.Execution) {
		t.Fatalf("on disk at the crash: %s held by %q, %v; want the durable claim of %s", rec.Status, rec.LeaseOwner, err, first.Execution)
	}

	// The next run, once the dead run's lease has lapsed (the CLI knows
	// sooner: it holds the store's lock).
	later := func() time.Time { return time.Now().Add(24 * time.Hour) }
	p.tracker = statestore.NewTracker(next, statestore.WithClock(later))
	again := p.run(t, p.store, []string{key})[key]
	if again.Status != localrun.StatusCompleted {
		t.Fatalf("run after the crash: %s %s %s", again.Status, again.Error, again.Message)
	}
	if got := sha(t, output); got != want {
		t.Errorf("output after the resumed run %s, want the first run's %s", got, want)
	}
	var records []statestore.Job
	if err := next.List(ctx, "", func(j statestore.Job) error { records = append(records, j); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Status != statestore.Completed {
		t.Fatalf("records after the resumed run: %+v; want one, COMPLETED", records)
	}
	if h := records[0].History; !historyNotes(h, "taken over") {
		t.Errorf("history does not say the job was taken over: %+v", h)
	}
	if n := len(p.remediation.messages(t)) + len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d queue message(s) after a resumed run, want none", n)
	}
}

func historyNotes(h []statestore.Transition, note string) bool {
	for _, e := range h {
		if strings.Contains(e.Note, note) {
			return true
		}
	}
	return false
}
