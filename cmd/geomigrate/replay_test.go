package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
)

// TestLocalReplayDeletesOnlyEndedJobs replays the local remediation queue:
// unchanged files keep their messages; a fixed file converts and its message
// is acknowledged (deleted) for good.
func TestLocalReplayDeletesOnlyEndedJobs(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--progress", "plain"); err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	remediation := pathsFor(dest, "").remediation
	depth := func() int {
		st, err := jsonlqueue.Scan(context.Background(), remediation, func(queue.Message) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return st.Messages
	}
	before := depth()
	if before < 2 {
		t.Fatalf("%d remediation message(s) after migrating the samples, want several", before)
	}

	out, stderr, err := run(t, "replay", "--dest", dest, "--queue", "remediation", "--progress", "plain")
	if err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
	}
	if got := depth(); got != before || !strings.Contains(out, "0 deleted") {
		t.Fatalf("replay of unchanged files left %d of %d messages:\n%s", got, before, out)
	}

	good, err := os.ReadFile(filepath.Join(samples, "dem_utm33.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(samples, "no_crs.tif"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = run(t, "replay", "--dest", dest, "--queue", "remediation", "--progress", "plain")
	if err != nil {
		t.Fatalf("replay after the fix: %v\n%s\n%s", err, out, stderr)
	}
	for _, o := range lastReport(t, out).Files {
		if o.Key == "no_crs.tif" && o.Status != localrun.StatusCompleted {
			t.Errorf("fixed no_crs.tif: %+v", o)
		}
	}
	if got := depth(); got != before-1 || !strings.Contains(out, "1 deleted") {
		t.Fatalf("after replaying the fixed file %d message(s) left, want %d:\n%s", got, before-1, out)
	}
	status, _, err := run(t, "status", "--dest", dest)
	if err != nil || !strings.Contains(status, "queue remediation") {
		t.Fatalf("status: %v\n%s", err, status)
	}
}

func TestReplaySource(t *testing.T) {
	for _, tc := range []struct {
		body string
		want migration.Source
		ok   bool
	}{
		{`{"version":1,"key":"a.tif","replay":{"bucket":"raw","key":"a.tif","key_encoding":"plain","dataset_id":"d"}}`,
			migration.Source{Bucket: "raw", Key: "a.tif", KeyEncoding: "plain", DatasetID: "d"}, true},
		// ClassifyFailed: the normalized input next to the raw error.
		{`{"source":{"bucket":"raw","key":"b+c.tif","key_encoding":"url","dataset_id":""},"error":{"Error":"Lambda.Unknown"},"classify_error":{},"execution":"arn"}`,
			migration.Source{Bucket: "raw", Key: "b+c.tif", KeyEncoding: "url"}, true},
		{`{"error":"no source"}`, migration.Source{}, false},
		{`not json`, migration.Source{}, false},
	} {
		got, err := replaySource(tc.body)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("replaySource(%s) = %+v, %v", tc.body, got, err)
		}
	}
}

func TestJobEnded(t *testing.T) {
	for _, tc := range []struct {
		o    localrun.Outcome
		want bool
	}{
		{localrun.Outcome{Status: localrun.StatusCompleted}, true},
		{localrun.Outcome{Status: localrun.StatusRemediation}, true},
		{localrun.Outcome{Status: localrun.StatusDeadLetter}, true},
		{localrun.Outcome{Status: localrun.StatusSkipped, Reason: migration.ReasonAlreadyMigrated}, true},
		// A message about a file now ignored (README.txt routed before
		// non-geospatial files were ignored) has nothing left to do.
		{localrun.Outcome{Status: localrun.StatusIgnored, Reason: migration.ReasonNotGeospatial}, true},
		{localrun.Outcome{Status: localrun.StatusSkipped, Reason: migration.ReasonAwaitingRemediation}, false},
		{localrun.Outcome{Status: localrun.StatusSkipped, Reason: migration.ReasonInProgress}, false},
		{localrun.Outcome{Status: localrun.StatusNotStarted}, false},
		{localrun.Outcome{Status: localrun.StatusFailed}, false},
	} {
		if got := jobEnded(tc.o); got != tc.want {
			t.Errorf("jobEnded(%s/%s) = %v, want %v", tc.o.Status, tc.o.Reason, got, tc.want)
		}
	}
}
