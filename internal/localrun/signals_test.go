package localrun

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// TestRecovered: with every source merged, a file fixed after its routing
// (a new job) recovers as well as a replay of the same job; reading only
// the completed jobs' own records sees the replay alone.
func TestRecovered(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(m int, from, to statestore.Status, tier string) statestore.Transition {
		return statestore.Transition{At: t0.Add(time.Duration(m) * time.Minute), From: from, To: to, Tier: tier}
	}
	const P, C, M, Q = statestore.Processing, statestore.Completed, statestore.Remedial, statestore.Quarantined
	db := statestoretest.NewMemory()
	for _, j := range []statestore.Job{
		{ID: "roads-old", SourceBucket: "src", SourceKey: "roads.gpkg", Status: M, History: []statestore.Transition{at(0, "", P, ""), at(1, P, M, "data_specific")}},
		{ID: "roads-new", SourceBucket: "src", SourceKey: "roads.gpkg", Status: C, History: []statestore.Transition{at(60, "", P, ""), at(61, P, C, "")}},
		{ID: "dem", SourceBucket: "src", SourceKey: "dem.tif", Status: C, History: []statestore.Transition{at(0, "", P, ""), at(2, P, Q, "transient"), at(12, Q, P, ""), at(14, P, C, "")}},
		{ID: "plain", SourceBucket: "src", SourceKey: "plain.tif", Status: C, History: []statestore.Transition{at(0, "", P, ""), at(1, P, C, "")}},
	} {
		if err := db.Put(ctx, j, 0); err != nil {
			t.Fatal(err)
		}
	}
	tracker := statestore.NewTracker(db)
	outcomes := []Outcome{
		{Bucket: "src", Key: "roads.gpkg", JobID: "roads-new", Status: StatusCompleted},
		{Bucket: "src", Key: "dem.tif", JobID: "dem", Status: StatusCompleted},
		{Bucket: "src", Key: "plain.tif", JobID: "plain", Status: StatusCompleted},
		{Bucket: "src", Key: "other.tif", JobID: "other", Status: StatusRemediation, Tier: "data_specific"},
	}
	for _, tt := range []struct {
		everySource bool
		want        map[string]time.Duration
	}{
		{true, map[string]time.Duration{"data_specific": 60 * time.Minute, "transient": 12 * time.Minute}},
		{false, map[string]time.Duration{"transient": 12 * time.Minute}},
	} {
		got, err := Recovered(ctx, tracker, outcomes, tt.everySource)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]time.Duration{}
		for _, l := range got {
			m[l.Tier] = l.Duration
		}
		if len(got) != len(tt.want) || len(m) != len(tt.want) {
			t.Errorf("everySource %v: %+v, want %v", tt.everySource, got, tt.want)
		}
		for k, v := range tt.want {
			if m[k] != v {
				t.Errorf("everySource %v: %s %v, want %v", tt.everySource, k, m[k], v)
			}
		}
	}
	if _, err := Recovered(ctx, tracker, []Outcome{{Key: "x", JobID: "missing", Status: StatusCompleted}}, false); err == nil {
		t.Error("a completed job without a record read without error")
	}
}

func TestDeadLetterAgeAndPrint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dead-letter.jsonl")
	q, err := DeadLetterAge(ctx, path, time.Now(), nil)
	if err != nil || q.Depth != 0 || !q.OldestSentAt.IsZero() {
		t.Fatalf("missing file: %+v %v", q, err)
	}
	jq, err := jsonlqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b"} {
		if _, err := jq.Send(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	jq.Close()
	later := time.Now().Add(3 * time.Hour)
	q, err = DeadLetterAge(ctx, path, later, nil)
	if err != nil || q.Depth != 2 || q.OldestAgeSeconds < 3*3600 || q.OldestAgeSeconds > 3*3600+60 {
		t.Fatalf("two messages: %+v %v", q, err)
	}

	s := signals.Compute([]signals.End{{Key: "a.tif"}, {Key: "b.tif", Tier: "data_specific"}}, nil, signals.Thresholds{})
	s.DeadLetter = q
	var buf bytes.Buffer
	PrintSignals(&buf, s, 0)
	for _, want := range []string{"1 of 2 (50.0%)", "ABOVE THRESHOLD: investigate the source data", "by format:       tif 1/2 (50.0%)", "Dead-letter queue: 2 message(s), oldest 3h0m"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("printed signals lack %q:\n%s", want, buf.String())
		}
	}
}
