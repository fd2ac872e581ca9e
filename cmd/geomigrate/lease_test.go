package main

import (
	"context"
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
	if !strings.Contains(stdout, "--heartbeat") {
		t.Fatalf("migrate usage does not document --heartbeat:\n%s", stdout)
	}
	if _, _, err := run(t, "migrate", f, "--dest", t.TempDir(), "--heartbeat", "10ms"); err == nil || !strings.Contains(err.Error(), "--heartbeat 10ms: want 100ms or more") {
		t.Fatalf("--heartbeat 10ms was accepted: %v", err)
	}
}

// forgeLease puts what a killed run leaves on a completed job of the
// local state store: the job PROCESSING under an unexpired lease of owner
// and holder, vouched for by a heartbeat until heartbeatUntil.
func forgeLease(t *testing.T, dest, jobID, owner, holder string, heartbeatUntil time.Time) {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(dest, stateDirName, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rec, err := db.Get(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	next := rec
	next.Status, next.LeaseOwner, next.LeaseUntil, next.Version = statestore.Processing, owner, time.Now().Add(20*time.Minute), rec.Version+1
	next.Holder, next.HeartbeatUntil = holder, heartbeatUntil
	if err := db.Put(ctx, next, rec.Version); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseOfAKilledRunIsTakenOver: a run killed with kill -9 leaves its
// file PROCESSING under a live lease. The embedded state store admits one
// process at a time, so the next run, which holds it, knows that run has
// ended, whatever its host, PID namespace or heartbeat say: it says so in
// one line and converts the file, leaving no dead-letter message behind
// (status: 0 outstanding), instead of skipping it "in progress" for the
// rest of the lease.
func TestLeaseOfAKilledRunIsTakenOver(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip(err)
	}
	legacy := "arn:aws:states:local:000000000000:execution:geomigrate-migrate:" +
		strings.Replace(localrun.ExecutionName("x"), "_"+strconv.Itoa(os.Getpid())+"_", "_"+strconv.Itoa(gone.Process.Pid)+"_", 1)
	other := localrun.ThisRun
	other.Token = "0123456789abcdef"
	elsewhere, container := other, other
	elsewhere.Host, elsewhere.PID = "another-host", os.Getpid()
	container.PIDNS, container.PID = "4026532999", 1
	owner := "arn:aws:states:local:000000000000:execution:geomigrate-migrate:20261201T120000_h_1_abcdef123456"
	tests := []struct {
		name, owner, holder string
		heartbeat           time.Time
	}{
		{"a lease without a holder, its PID gone", legacy, "", time.Time{}},
		{"a run on another host, its heartbeat fresh", owner, elsewhere.String(), time.Now().Add(time.Hour)},
		{"PID 1 of a container gone, its heartbeat fresh", owner, container.String(), time.Now().Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := goodRaster(t)
			dest := filepath.Join(t.TempDir(), "out")
			out, stderr, err := run(t, "migrate", f, "--dest", dest)
			if err != nil {
				t.Fatalf("first run: %v\n%s\n%s", err, out, stderr)
			}
			forgeLease(t, dest, lastReport(t, out).Files[0].JobID, tt.owner, tt.holder, tt.heartbeat)

			out, stderr, err = run(t, "migrate", f, "--dest", dest)
			if err != nil {
				t.Fatalf("second run: %v\n%s\n%s", err, out, stderr)
			}
			want := "1 file(s) were held by runs no longer running (its run has ended: it no longer holds the state store open); this run takes them over"
			if strings.Count(stderr, "no longer running") != 1 || !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks the one line %q:\n%s", want, stderr)
			}
			if o := lastReport(t, out).Files[0]; o.Status != "completed" {
				t.Fatalf("second run: %s/%s, want completed", o.Status, o.Reason)
			}
			if dlq, err := os.ReadFile(filepath.Join(dest, stateDirName, "dead-letter.jsonl")); len(dlq) > 0 {
				t.Errorf("dead-letter queue after a take-over that completed (%v):\n%s", err, dlq)
			}
		})
	}
}

// TestADeadLetterOfACompletedJobIsSuperseded: a dead run's job that was
// not among the next run's files is closed with a dead-letter message (no
// run would finish it); once a later run completes the file, status counts
// the message superseded, not outstanding.
func TestADeadLetterOfACompletedJobIsSuperseded(t *testing.T) {
	f := goodRaster(t)
	dest := filepath.Join(t.TempDir(), "out")
	out, stderr, err := run(t, "migrate", f, "--dest", dest)
	if err != nil {
		t.Fatalf("first run: %v\n%s\n%s", err, out, stderr)
	}
	job := lastReport(t, out).Files[0].JobID
	other := localrun.ThisRun
	other.Token = "0123456789abcdef"
	forgeLease(t, dest, job, "arn:aws:states:local:000000000000:execution:geomigrate-migrate:20261201T120000_h_1_abcdef123456", other.String(), time.Now().Add(time.Hour))

	// A run of another file closes the dead run's job.
	another := filepath.Join(t.TempDir(), "another.tif")
	copyFile(t, f, another)
	if out, stderr, err := run(t, "migrate", another, "--dest", dest); err != nil || !strings.Contains(stderr, "1 not among its files closed (quarantined, dead-letter message)") {
		t.Fatalf("run of another file: %v\n%s\n%s", err, out, stderr)
	}
	status := func() string {
		out, _, err := run(t, "status", "--dest", dest)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if s := status(); !strings.Contains(s, "queue dead-letter  1 message(s)  ") || !strings.Contains(s, "Dead-letter queue: 1 message") {
		t.Fatalf("status after the close, want one outstanding dead letter:\n%s", s)
	}
	if out, stderr, err := run(t, "migrate", f, "--dest", dest); err != nil || lastReport(t, out).Files[0].Status != "completed" {
		t.Fatalf("rerun of the file: %v\n%s\n%s", err, out, stderr)
	}
	if s := status(); !strings.Contains(s, "1 message(s), 0 outstanding (1 superseded: their job has completed") || strings.Contains(s, "Dead-letter queue: 1 message") {
		t.Fatalf("status after the file completed, want its dead letter superseded:\n%s", s)
	}
}
