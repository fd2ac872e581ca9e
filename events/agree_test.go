package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/events"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// expectedJob is the job HashCheck produces for hashcheck-input.json over
// the source in testdata/sources, with the environment the emulator tests
// give the functions (only the destination bucket set).
func expectedJob(t *testing.T) migration.Job {
	t.Helper()
	ctx := context.Background()
	t.Setenv("GEOMIGRATE_DEST_BUCKET", "geo-archive-cog")
	t.Setenv("GEOMIGRATE_STATE_TABLE", "jobs")
	l, err := config.LoadLambda()
	if err != nil {
		t.Fatal(err)
	}
	cfg := l.Migration()
	store := memstore.New("geo-archive-src", "geo-archive-cog")
	for _, f := range []string{"elevation.asc", "elevation.prj"} {
		b, err := os.ReadFile(filepath.Join("testdata", "sources", f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "geo-archive-src", Key: "dem/" + f, Body: bytes.NewReader(b), Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
	}
	var in migration.HashCheckInput
	raw, _ := events.Files.ReadFile("hashcheck-input.json")
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	hc := migration.NewHashCheck(cfg, store, statestore.NewTracker(statestoretest.NewMemory()),
		migration.StoreFingerprinter{Store: store, Threshold: cfg.FastFingerprintAbove()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	out, err := hc.Handle(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	// The store's Last-Modified is the upload's time, now; the samples
	// carry a fixed one so that they stay the same from run to run.
	out.Job.SourceModified = sampleModified
	return out.Job
}

// sampleModified is the samples' source Last-Modified.
var sampleModified = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestFunctionInputsAgree: the convert, promote and classify samples carry
// the job HashCheck really produces for hashcheck-input.json (the recipe
// hash moves with the recipe defaults and the tool version), so the
// emulator tests can post them in pipeline order. -update rewrites them.
func TestFunctionInputsAgree(t *testing.T) {
	job := expectedJob(t)
	stagingKey := job.StagingPrefix + "dem/elevation.tif"
	for _, name := range []string{"convert-input.json", "promote-input.json", "classify-data-error.json", "classify-transient-exhausted.json"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var old migration.Job
		jb, _ := json.Marshal(doc["job"])
		if err := json.Unmarshal(jb, &old); err != nil {
			t.Fatal(err)
		}
		same := reflect.DeepEqual(old, job)
		if conv, ok := doc["converted"].(map[string]any); ok {
			outs := conv["outputs"].([]any)
			o := outs[0].(map[string]any)
			same = same && o["staging_key"] == stagingKey
			o["staging_key"] = stagingKey
		}
		if e, ok := doc["error"].(map[string]any); ok && old.StagingPrefix != "" {
			cause := e["Cause"].(string)
			e["Cause"] = strings.ReplaceAll(cause, old.StagingPrefix, job.StagingPrefix)
		}
		if same {
			continue
		}
		if !*update {
			t.Errorf("%s carries job %s; HashCheck now produces %s (go test ./events -update)", name, old.ID, job.ID)
			continue
		}
		doc["job"] = job
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", name)
	}
}
