package emf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
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
	want = []string{"Classified{Tier=data_specific,Route=remediation}=1"}
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
