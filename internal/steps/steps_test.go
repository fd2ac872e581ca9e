package steps_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
	"github.com/geomigrate/geomigrate/internal/steps"
)

// recorder is a Metrics that keeps the metric names it is given.
type recorder struct {
	mu     sync.Mutex
	names  []string
	values map[string]float64 // last value by name and dimensions
}

func (r *recorder) Count(name string, v float64, _ string, dims ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, name)
	if r.values == nil {
		r.values = map[string]float64{}
	}
	r.values[name+"{"+strings.Join(dims, ",")+"}"] = v
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.names, " ")
}

func ports(t *testing.T, m migration.Metrics) steps.Ports {
	t.Helper()
	store := memstore.New("src", "dest")
	if _, err := store.Put(context.Background(), objectstore.PutRequest{Bucket: "src", Key: "a.tif", Body: strings.NewReader("data"), Size: 4}); err != nil {
		t.Fatal(err)
	}
	return steps.Ports{
		Config:  migration.Config{DestBucket: "dest", StagingPrefix: migration.DefaultStagingPrefix},
		Store:   store,
		Tracker: statestore.NewTracker(statestoretest.NewMemory()),
		Metrics: m,
	}
}

// TestEachBuildReportsToItsOwnMetrics: the metrics are a field of the
// handlers a Ports builds, so two wirings in one process (two backends, or
// tests side by side) never report to each other's.
func TestEachBuildReportsToItsOwnMetrics(t *testing.T) {
	ctx := context.Background()
	var a, b recorder
	pa, pb := ports(t, &a), ports(t, &b)
	pb.FallbackThresholds = func() signals.Thresholds { return signals.Thresholds{DataSpecificRate: 0.01} }
	missing := migration.HashCheckInput{Source: migration.Source{Bucket: "src", Key: "missing.tif"}, Context: migration.Invocation{State: "HashCheck", Attempt: 1}}
	if _, err := pa.HashCheck().Handle(ctx, missing); err == nil {
		t.Fatal("want SourceNotFound")
	}
	if a.got() != "Retries Errors" || b.got() != "" {
		t.Errorf("after a's HashCheck: a %q, b %q", a.got(), b.got())
	}
	caught := migration.ClassifyInput{
		Source:  migration.Source{Bucket: "src", Key: "bad.tif"},
		Error:   migration.CaughtError{Error: "DataError", Cause: `{"errorMessage":"MissingCRS: no CRS","errorType":"DataError"}`},
		Context: migration.Invocation{State: "Classify"},
	}
	if _, err := pb.Classify().Handle(ctx, caught); err != nil {
		t.Fatal(err)
	}
	const classified = "Classified JobsEnded JobsEnded JobsEnded JobsRouted JobsRouted JobsRouted FallbackThreshold FallbackThreshold"
	if a.got() != "Retries Errors" || b.got() != classified {
		t.Errorf("after b's Classify: a %q, b %q", a.got(), b.got())
	}
	// The thresholds of the wiring are those reported; a zero field is the default.
	if ds, tr := b.values["FallbackThreshold{Tier,data_specific}"], b.values["FallbackThreshold{Tier,transient}"]; ds != 0.01 || tr != 0.15 {
		t.Errorf("thresholds reported %v %v, want 0.01 0.15", ds, tr)
	}
	// Without Metrics the handlers are silent, and nothing is nil.
	p := ports(t, nil)
	if _, err := p.HashCheck().Handle(ctx, missing); err == nil {
		t.Fatal("want SourceNotFound")
	}
	if p.Convert(nil, nil) == nil || p.Promote() == nil || p.ExecutionFailed(queue.Sender(nil), "") == nil {
		t.Error("a handler is nil")
	}
}

// TestHandlersShareTheConfiguration: every handler of one Ports converts
// with the same recipe.
func TestHandlersShareTheConfiguration(t *testing.T) {
	p := ports(t, nil)
	p.Config.Recipe.VectorFormat = "FlatGeobuf"
	if got := p.HashCheck().Recipe().VectorFormat; got != "FlatGeobuf" {
		t.Errorf("HashCheck recipe vector format %q", got)
	}
}

// TestHashCheckUsesTheFastFingerprintAboveTheThreshold: the wired HashCheck
// takes the configured threshold, and its default (1 GiB) when none is set,
// never "hash everything in full" for an unset one.
func TestHashCheckUsesTheFastFingerprintAboveTheThreshold(t *testing.T) {
	if got := (migration.Config{}).FastFingerprintAbove(); got != migration.DefaultFingerprintThreshold {
		t.Errorf("unset threshold: fast above %d, want the default %d", got, migration.DefaultFingerprintThreshold)
	}
	for _, tc := range []struct {
		threshold int64
		want      string
	}{{0, "sha256"}, {3, "fast"}, {4, "sha256"}} {
		p := ports(t, nil)
		p.Config.FingerprintThreshold = tc.threshold
		out, err := p.HashCheck().Handle(context.Background(), migration.HashCheckInput{
			Source: migration.Source{Bucket: "src", Key: "a.tif"}, Context: migration.Invocation{Execution: "e", State: "HashCheck"}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Job.Fingerprint != tc.want {
			t.Errorf("threshold %d, 4-byte source: fingerprint %q, want %q", tc.threshold, out.Job.Fingerprint, tc.want)
		}
	}
}
