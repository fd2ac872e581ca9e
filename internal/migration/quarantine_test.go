package migration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

func bundleWriter(t *testing.T, store objectstore.Store) *quarantine.Writer {
	t.Helper()
	w, err := quarantine.NewWriter(quarantine.Config{Store: store, Bucket: "dest", Prefix: quarantine.DefaultPrefix, StagingPrefix: DefaultStagingPrefix + "quarantine/", CopyInput: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// readManifest reads the manifest of the bundle at location (s3://dest/…).
func readManifest(t *testing.T, store objectstore.Store, location string) quarantine.Manifest {
	t.Helper()
	prefix, ok := strings.CutPrefix(location, "s3://dest/")
	if !ok {
		t.Fatalf("bundle location %q", location)
	}
	rc, err := store.Open(context.Background(), "dest", prefix+quarantine.ManifestFile)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	var m quarantine.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// failingPuts refuses every write under a prefix.
type failingPuts struct {
	objectstore.Store
	prefix string
}

func (s failingPuts) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	if strings.HasPrefix(req.Key, s.prefix) {
		return objectstore.Object{}, errors.New("AccessDenied")
	}
	return s.Store.Put(ctx, req)
}

// TestClassifyQuarantines: a routed job's message points to its bundle,
// whose manifest carries the caught error, the job's recipe and the
// reproduction; a bundle that cannot be written does not stop the routing.
func TestClassifyQuarantines(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		failPuts  bool
		caught    CaughtError
		wantRoute string
	}{
		{"data error", false, CaughtError{"DataError", `{"errorType":"DataError","errorMessage":"MissingCRS: none [attempt 1]"}`}, RouteRemediation},
		{"systemic", false, CaughtError{"SystemicError", `{"errorType":"SystemicError","errorMessage":"disk full [attempt 2]"}`}, RouteDeadLetter},
		{"bundle not writable: routed regardless", true, CaughtError{"DataError", `{"errorType":"DataError","errorMessage":"MissingCRS: none [attempt 1]"}`}, RouteRemediation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.put(t, "a/dem.img", "raster-bytes")
			var store objectstore.Store = f.store
			if tt.failPuts {
				store = failingPuts{f.store, DefaultStagingPrefix + "quarantine/"}
			}
			f.classify.WithStagingCleanup(f.store, f.cfg).WithQuarantine(bundleWriter(t, store))
			hc := f.check(t, execArn, "a/dem.img")
			out, err := f.classify.Handle(ctx, ClassifyInput{Source: hc.Source, Job: hc.Job, Context: inv(execArn, 0), Error: tt.caught})
			if err != nil {
				t.Fatal(err)
			}
			m := out.Message
			if out.Route != tt.wantRoute || m.Replay.Key != "a/dem.img" {
				t.Fatalf("routed %s, message %+v", out.Route, m)
			}
			if rec, _ := f.tracker.Get(ctx, hc.Job.ID); rec.Status != statestore.Remedial && rec.Status != statestore.Quarantined {
				t.Errorf("record %s", rec.Status)
			}
			if tt.failPuts {
				if m.Bundle != "" || !strings.Contains(m.BundleError, "AccessDenied") {
					t.Errorf("bundle %q, error %q", m.Bundle, m.BundleError)
				}
				return
			}
			man := readManifest(t, f.store, m.Bundle)
			if man.JobID != hc.Job.ID || man.Error.Error != tt.caught.Error || man.Error.Cause != tt.caught.Cause || man.Error.Type != tt.caught.Error ||
				man.Error.Route != tt.wantRoute || man.Error.Attempts != m.Attempts || man.RecipeHash != hc.Job.RecipeHash ||
				man.Versions.GDAL != "fake-1" || !man.Copied || man.Reproduce.Expect.Route != tt.wantRoute {
				t.Errorf("manifest %+v", man)
			}
		})
	}
}
