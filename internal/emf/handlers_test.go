package emf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// metricLines parses the EMF lines a handler wrote into "Name{dim=value,…}=value".
func metricLines(t *testing.T, buf *bytes.Buffer) []string {
	t.Helper()
	var out []string
	for _, ln := range strings.SplitAfter(buf.String(), "\n") {
		if ln == "" {
			continue
		}
		root := checkSpec(t, []byte(ln))
		dir := root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		name := dir["Metrics"].([]any)[0].(map[string]any)["Name"].(string)
		var dims []string
		for _, d := range dir["Dimensions"].([]any)[0].([]any) {
			dims = append(dims, d.(string)+"="+root[d.(string)].(string))
		}
		out = append(out, name+"{"+strings.Join(dims, ",")+"}="+root[name].(json.Number).String())
	}
	return out
}

func TestHandlersEmitMetrics(t *testing.T) {
	ctx := context.Background()
	store := memstore.New("src", "dest")
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "src", Key: "a.tif", Body: strings.NewReader("data"), Size: 4}); err != nil {
		t.Fatal(err)
	}
	tracker := statestore.NewTracker(statestoretest.NewMemory())
	cfg := migration.Config{DestBucket: "dest"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	var buf bytes.Buffer
	m := emf.New(&buf, "geomigrate")
	hc := migration.NewHashCheck(cfg, store, tracker, migration.StoreFingerprinter{Store: store}, log).WithMetrics(m)

	// A retry that fails on data: one Retries and one Errors line.
	_, err := hc.Handle(ctx, migration.HashCheckInput{
		Source:  migration.Source{Bucket: "src", Key: "missing.tif"},
		Context: migration.Invocation{Execution: "x", State: "HashCheck", Attempt: 2},
	})
	if err == nil {
		t.Fatal("want SourceNotFound")
	}
	got := metricLines(t, &buf)
	want := []string{"Retries{State=HashCheck}=1", "Errors{State=HashCheck,Tier=data_specific}=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("metrics %v, want %v", got, want)
	}

	// A first attempt that succeeds: nothing.
	buf.Reset()
	if _, err := hc.Handle(ctx, migration.HashCheckInput{Source: migration.Source{Bucket: "src", Key: "a.tif"}, Context: migration.Invocation{Execution: "x", State: "HashCheck"}}); err != nil {
		t.Fatal(err)
	}
	if got := metricLines(t, &buf); len(got) != 0 {
		t.Errorf("a successful first attempt wrote %v", got)
	}

	// Classify: outcome by tier and route.
	buf.Reset()
	cl := migration.NewClassify(tracker, nil, log).WithMetrics(m)
	if _, err := cl.Handle(ctx, migration.ClassifyInput{
		Source:  migration.Source{Bucket: "src", Key: "bad.tif"},
		Error:   migration.CaughtError{Error: "DataError", Cause: `{"errorMessage":"MissingCRS: no CRS [attempt 1]","errorType":"DataError"}`},
		Context: migration.Invocation{Execution: "x", State: "Classify"},
	}); err != nil {
		t.Fatal(err)
	}
	got = metricLines(t, &buf)
	want = []string{"Classified{Tier=data_specific,Route=remediation}=1",
		// the job ended, routed: fallback_rate's numerator and denominator, and the thresholds
		"JobsEnded{}=1", "JobsEnded{DatasetType=raster}=1", "JobsEnded{Format=tif}=1",
		"JobsRouted{Tier=data_specific}=1", "JobsRouted{Tier=data_specific,DatasetType=raster}=1", "JobsRouted{Tier=data_specific,Format=tif}=1",
		"FallbackThreshold{Tier=data_specific}=0.05", "FallbackThreshold{Tier=transient}=0.15"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("metrics %v, want %v", got, want)
	}

	// Without metrics set, handlers stay silent (no-op default).
	hc.WithMetrics(nil)
	buf.Reset()
	_, _ = hc.Handle(ctx, migration.HashCheckInput{Source: migration.Source{Bucket: "src", Key: "missing.tif"}, Context: migration.Invocation{Attempt: 1}})
	if buf.Len() != 0 {
		t.Errorf("metrics written after WithMetrics(nil): %s", buf.String())
	}
}

// TestPromoteEmitsRecoveryLatency: a job dead-lettered after its retries and
// completed by a replay half an hour later counts once as ended (not
// routed) and reports 30 minutes of recovery under the tier of its routing;
// the thresholds reported are those the handler was given.
func TestPromoteEmitsRecoveryLatency(t *testing.T) {
	ctx := context.Background()
	store := memstore.New("src", "dest")
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "src", Key: "roads.gpkg", Body: strings.NewReader("data"), Size: 4}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tracker := statestore.NewTracker(statestoretest.NewMemory(), statestore.WithClock(func() time.Time { return now }))
	cfg := migration.Config{DestBucket: "dest"}
	log := slog.New(slog.DiscardHandler)
	var buf bytes.Buffer
	m := emf.New(&buf, "geomigrate")
	th := func() signals.Thresholds { return signals.Thresholds{DataSpecificRate: 0.02, TransientRate: 0.3} }
	hc := migration.NewHashCheck(cfg, store, tracker, migration.StoreFingerprinter{Store: store}, log)
	cl := migration.NewClassify(tracker, nil, log).WithMetrics(m).WithFallbackThresholds(th)
	pr := migration.NewPromote(cfg, store, tracker, log).WithMetrics(m).WithFallbackThresholds(th)

	first, err := hc.Handle(ctx, migration.HashCheckInput{Source: migration.Source{Bucket: "src", Key: "roads.gpkg"}, Context: migration.Invocation{Execution: "x1", State: "HashCheck"}})
	if err != nil || first.Decision != migration.DecisionConvert {
		t.Fatalf("first HashCheck: %+v %v", first, err)
	}
	if _, err := cl.Handle(ctx, migration.ClassifyInput{Source: first.Source, Job: first.Job,
		Error:   migration.CaughtError{Error: "TransientError", Cause: `{"errorMessage":"S3 SlowDown [attempt 5]","errorType":"TransientError"}`},
		Context: migration.Invocation{Execution: "x1", State: "Classify"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Minute)
	again, err := hc.Handle(ctx, migration.HashCheckInput{Source: migration.Source{Bucket: "src", Key: "roads.gpkg"}, Context: migration.Invocation{Execution: "x2", State: "HashCheck"}})
	if err != nil || again.Decision != migration.DecisionConvert {
		t.Fatalf("replayed HashCheck: %+v %v", again, err)
	}
	staged := again.Job.StagingPrefix + "roads.parquet"
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "dest", Key: staged, Body: strings.NewReader("pq"), Size: 2}); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	in := migration.PromoteInput{Job: again.Job, Context: migration.Invocation{Execution: "x2", State: "Promote"},
		Converted: migration.ConvertOutput{Outputs: []migration.Artifact{{StagingKey: staged, DestKey: "roads.parquet", Size: 2}}}}
	if _, err := pr.Handle(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := metricLines(t, &buf)
	want := []string{"BytesPromoted{State=Promote}=2",
		"JobsEnded{}=1", "JobsEnded{DatasetType=vector}=1", "JobsEnded{Format=gpkg}=1",
		"FallbackThreshold{Tier=data_specific}=0.02", "FallbackThreshold{Tier=transient}=0.3",
		"RecoveryLatency{}=1800", "RecoveryLatency{Tier=transient}=1800"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("metrics\n%v\nwant\n%v", got, want)
	}

	// The retry of a Promote whose response was lost finds the job
	// completed: the job's end is not counted twice.
	buf.Reset()
	in.Context.Attempt = 1
	if _, err := pr.Handle(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got := metricLines(t, &buf); strings.Join(got, " ") != "Retries{State=Promote}=1 BytesPromoted{State=Promote}=2" {
		t.Errorf("retry after completion wrote %v", got)
	}
}
