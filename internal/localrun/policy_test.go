package localrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// TestPolicyEditChangesTheRoutingOfLaterExecutions: the policy file is
// edited while a run goes on (after its first execution ended); the second
// execution of the same run, in the same process, routes by the new
// document. An invalid edit changes nothing and is reported.
func TestPolicyEditChangesTheRoutingOfLaterExecutions(t *testing.T) {
	const corruptToDLQ = `{"version": 1, "classification": {"rules": [
		{"error": "DataError", "code": "UnsupportedFormat", "tier": "data_specific", "route": "dlq"}]}}`
	tests := []struct {
		name, edit string
		want       string // the second file's status
		refused    string // in Source.Refused after the edit
	}{
		{"valid edit", corruptToDLQ, localrun.StatusDeadLetter, ""},
		{"invalid edit", strings.Replace(corruptToDLQ, `"dlq"}`, `"sqs"}`, 1), localrun.StatusRemediation, "/classification/rules/0/route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			for _, k := range []string{"a.tif", "b.tif"} { // not TIFFs: UnsupportedFormat
				if err := os.WriteFile(filepath.Join(src, k), []byte("not a raster, "+k), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(t.TempDir(), "policy.json")
			if err := os.WriteFile(path, []byte(`{"version": 1}`), 0o644); err != nil {
				t.Fatal(err)
			}
			p := newPipeline(t, src)
			doc := policy.NewSource(policy.File{Path: path}, 0, quiet)
			if _, err := doc.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			p.rules = doc
			r := &localrun.Runner{Executor: p.executor(t, p.store), Workers: 1, OnDone: func(o localrun.Outcome) {
				if o.Key == "a.tif" {
					if err := os.WriteFile(path, []byte(tt.edit), 0o644); err != nil {
						t.Error(err)
					}
				}
			}}
			out := r.Run(context.Background(), []migration.Source{
				{Bucket: "src", Key: "a.tif", KeyEncoding: "plain", DatasetID: "samples"},
				{Bucket: "src", Key: "b.tif", KeyEncoding: "plain", DatasetID: "samples"},
			})
			if out[0].Status != localrun.StatusRemediation || out[0].Code != "UnsupportedFormat" {
				t.Fatalf("first file: %s %s %s", out[0].Status, out[0].Code, out[0].Message)
			}
			if out[1].Status != tt.want {
				t.Errorf("second file: %s, want %s", out[1].Status, tt.want)
			}
			err := doc.Refused()
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("refusal %v does not name %s", err, tt.refused)
			}
			if n, m := len(p.remediation.messages(t)), len(p.deadLetter.messages(t)); n+m != 2 {
				t.Errorf("%d remediation and %d dead-letter messages for 2 routed files", n, m)
			}
		})
	}
}

// TestPolicyJobDeadlineEndsTheBreakerWait: the destination is down for 30
// minutes and the breaker holds the file in the WaitForBreaker loop; the
// policy's 10-minute job deadline ends the loop at the next HashCheck: the
// file goes to the dead-letter queue saying why, its job is quarantined,
// and the execution does not run on to the state machine's TimeoutSeconds.
func TestPolicyJobDeadlineEndsTheBreakerWait(t *testing.T) {
	dir, keys := goodKeys(t)
	p := newPipeline(t, dir)
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "state.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	br := breaker.New(db, breaker.Policy{Threshold: 5, Window: 2 * time.Minute, Cooldown: 5 * time.Minute}, breaker.WithClock(p.clock.Now))
	doc, err := policy.Parse([]byte(`{"version": 1, "job_deadline_seconds": 600}`))
	if err != nil {
		t.Fatal(err)
	}
	p.deadline = policy.Static(doc)
	start := p.clock.Now()
	t.Setenv("W1", "1")
	got := p.run(t, breaker.Objects(outage(p, start.Add(30*time.Minute)), br), keys[:1])
	o := got[keys[0]]
	if o.Status != localrun.StatusDeadLetter || o.Error != "SystemicError" || !strings.Contains(o.Message, "job deadline of 10m0s passed") {
		t.Fatalf("%s: %s %s: %s", keys[0], o.Status, o.Error, o.Message)
	}
	if took := p.clock.Now().Sub(start); took < 10*time.Minute || took > 20*time.Minute {
		t.Errorf("the execution ended %s after its start, want soon after the 10-minute deadline", took)
	}
	j, err := p.tracker.Get(context.Background(), o.JobID)
	if err != nil || j.Status != statestore.Quarantined {
		t.Errorf("job record %+v (%v), want QUARANTINED", j, err)
	}
}
