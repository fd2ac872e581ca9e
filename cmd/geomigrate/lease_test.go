package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/sampledata"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// goodRaster writes the sample data and returns one raster that converts.
func goodRaster(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "samples")
	ss, err := sampledata.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" {
			return s.Path
		}
	}
	t.Fatal("no good raster among the samples")
	return ""
}

// TestSameFileFourTimesIsConvertedOnce: the local lease defaults
// were never applied (lease 0 s), so every execution of the same file took
// the others' lease over, converted it again, and some ended in the
// dead-letter queue with "COMPLETED → COMPLETED is not allowed".
func TestSameFileFourTimesIsConvertedOnce(t *testing.T) {
	f := goodRaster(t)
	dest := filepath.Join(t.TempDir(), "out")
	out, stderr, err := run(t, "migrate", f, f, f, f, "--dest", dest, "--workers", "4", "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	if r.Totals.Completed != 1 || r.Totals.Skipped != 3 || r.Totals.Files != 4 {
		t.Fatalf("totals %+v, want 1 completed and 3 skipped", r.Totals)
	}
	for _, o := range r.Files {
		if o.Status == "skipped" && o.Reason != "in_progress" && o.Reason != "already_migrated" {
			t.Errorf("%s skipped for %q", o.Key, o.Reason)
		}
	}
}

func TestLeaseFlagIsDocumentedAndValidated(t *testing.T) {
	stdout, _, _ := run(t, "migrate", "--help")
	if !strings.Contains(stdout, "--lease") {
		t.Fatalf("migrate usage does not document --lease:\n%s", stdout)
	}
	f := goodRaster(t)
	for _, lease := range []string{"10s", "15m"} {
		if _, _, err := run(t, "migrate", f, "--dest", t.TempDir(), "--lease", lease); err == nil || !strings.Contains(err.Error(), "--lease") {
			t.Fatalf("--lease %s, not longer than the 15m task timeout, was accepted: %v", lease, err)
		}
	}
}

// TestLeaseOfAKilledRunIsTakenOver: a run killed with
// kill -9 leaves its file PROCESSING under a lease naming its host and PID;
// the next run says so in one line, closes the job (quarantined, dead-letter
// message) and converts the file instead of skipping it "in progress" for
// the rest of the lease.
func TestLeaseOfAKilledRunIsTakenOver(t *testing.T) {
	f := goodRaster(t)
	dest := filepath.Join(t.TempDir(), "out")
	out, stderr, err := run(t, "migrate", f, "--dest", dest)
	if err != nil {
		t.Fatalf("first run: %v\n%s\n%s", err, out, stderr)
	}
	jobID := lastReport(t, out).Files[0].JobID

	// What kill -9 leaves: the job PROCESSING, leased by a process gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	killed := "arn:aws:states:local:000000000000:execution:geomigrate-migrate:" +
		strings.Replace(localrun.ExecutionName("x"), "_"+strconv.Itoa(os.Getpid())+"_", "_"+strconv.Itoa(gone.Process.Pid)+"_", 1)
	db, err := boltstore.Open(filepath.Join(dest, stateDirName, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec, err := db.Get(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	next := rec
	next.Status, next.LeaseOwner, next.LeaseUntil, next.Version = statestore.Processing, killed, time.Now().Add(20*time.Minute), rec.Version+1
	if err := db.Put(ctx, next, rec.Version); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, stderr, err = run(t, "migrate", f, "--dest", dest)
	if err != nil {
		t.Fatalf("second run: %v\n%s\n%s", err, out, stderr)
	}
	want := fmt.Sprintf("1 file(s) were held by process(es) no longer running on this host (PID %d)", gone.Process.Pid)
	if strings.Count(stderr, "no longer running") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the one line %q:\n%s", want, stderr)
	}
	if o := lastReport(t, out).Files[0]; o.Status != "completed" {
		t.Fatalf("second run: %s/%s, want completed", o.Status, o.Reason)
	}
	dlq, err := os.ReadFile(filepath.Join(dest, stateDirName, "dead-letter.jsonl"))
	if err != nil || strings.Count(string(dlq), killed) != 1 {
		t.Errorf("dead-letter queue %s (%v), want one message naming %s", dlq, err, killed)
	}
}
