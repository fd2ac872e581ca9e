package localrun_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// TestSampleRunQuarantinesEveryRoutedFile: a local run over the samples
// routes each bad one with a bundle: its report entry and queue message
// name the same directory, whose manifest is the job's, with the input
// copied byte for byte, the error code the sample must give, and log lines
// of that execution only.
func TestSampleRunQuarantinesEveryRoutedFile(t *testing.T) {
	dir, ss, keys := samples(t)
	p := newPipeline(t, dir)
	qdir := t.TempDir()
	store, err := dirstore.New("", dirstore.WithBucketDir("src", dir), dirstore.WithBucketDir("dest", p.destDir), dirstore.WithBucketDir("quarantine", qdir))
	if err != nil {
		t.Fatal(err)
	}
	book := quarantine.NewLogBook(slog.LevelInfo)
	log := slog.New(book.Handler(slog.DiscardHandler))
	bundles, err := quarantine.NewWriter(quarantine.Config{Store: store, Bucket: "quarantine", StagingPrefix: "_staging/", Logs: book, CopyInput: true,
		Versions: quarantine.Versions{Geomigrate: "test", GDAL: p.engine.Version()}})
	if err != nil {
		t.Fatal(err)
	}
	finger := migration.StoreFingerprinter{Store: store, Threshold: 1 << 30}
	h := localrun.Handlers{
		HashCheck: migration.NewHashCheck(p.cfg, store, p.tracker, finger, log),
		Convert:   migration.NewConvert(p.cfg, store, p.tracker, p.engine, validate.Output, log),
		Promote:   migration.NewPromote(p.cfg, store, p.tracker, log),
		Classify:  migration.NewClassify(p.tracker, nil, log).WithStagingCleanup(store, p.cfg).WithQuarantine(bundles),
	}
	exec, err := localrun.NewExecutor(h, localrun.Queues{Remediation: p.remediation, DeadLetter: p.deadLetter}, asl.WithClock(p.clock))
	if err != nil {
		t.Fatal(err)
	}
	var inputs []migration.Source
	for _, k := range keys {
		inputs = append(inputs, migration.Source{Bucket: "src", Key: k, KeyEncoding: "plain", DatasetID: "samples"})
	}
	outcomes := (&localrun.Runner{Executor: exec, Workers: 2}).Run(context.Background(), inputs)
	byKey := map[string]localrun.Outcome{}
	for _, o := range outcomes {
		byKey[o.Key] = o
	}
	messages := map[string]migration.RouteMessage{}
	for _, m := range append(p.remediation.messages(t), p.deadLetter.messages(t)...) {
		messages[m.Key] = m
	}
	bad := 0
	for _, s := range ss {
		key := relKey(t, dir, s.Path)
		o := byKey[key]
		if !s.Bad {
			if o.Bundle != "" {
				t.Errorf("%s (%s) has a bundle", key, o.Status)
			}
			continue
		}
		bad++
		t.Run(key, func(t *testing.T) {
			if o.Status != localrun.StatusRemediation || o.Bundle == "" {
				t.Fatalf("%s: status %s, bundle %q", key, o.Status, o.Bundle)
			}
			if m := messages[key]; m.Bundle != o.Bundle || m.Replay.Key != key || m.BundleError != "" {
				t.Errorf("queue message: bundle %q (%s), replay %+v; report says %q", m.Bundle, m.BundleError, m.Replay, o.Bundle)
			}
			if !strings.HasPrefix(o.Bundle, qdir+string(filepath.Separator)) {
				t.Errorf("bundle %s is not under %s", o.Bundle, qdir)
			}
			b, err := os.ReadFile(filepath.Join(o.Bundle, quarantine.ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			var m quarantine.Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("manifest: %v", err)
			}
			if m.JobID != o.JobID || m.Error.Code != s.Expect || m.Error.Route != migration.RouteRemediation || m.Reproduce.Expect.Code != s.Expect {
				t.Errorf("manifest: job %s (want %s), error %+v, expect %+v; sample expects %s", m.JobID, o.JobID, m.Error, m.Reproduce.Expect, s.Expect)
			}
			copied, err := os.ReadFile(filepath.Join(o.Bundle, filepath.FromSlash(m.Reproduce.Input)))
			if err != nil || !m.Copied || m.Input.SHA256 != sha(t, s.Path) || sha(t, filepath.Join(o.Bundle, filepath.FromSlash(m.Reproduce.Input))) != m.Input.SHA256 {
				t.Errorf("input copy %s: %v (%d bytes), manifest %+v", m.Reproduce.Input, err, len(copied), m.Input)
			}
			logs, err := os.ReadFile(filepath.Join(o.Bundle, quarantine.LogsFile))
			if err != nil {
				t.Fatal(err)
			}
			states := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(string(logs)), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if rec["execution"] != m.Execution {
					t.Errorf("log line of another execution: %s", l)
				}
				states[rec["state"].(string)] = true
			}
			if !states["HashCheck"] || !states["Classify"] || m.Logs.Lines < 2 {
				t.Errorf("logs cover %v (%d lines), want HashCheck … Classify", states, m.Logs.Lines)
			}
		})
	}
	if bad < 4 {
		t.Fatalf("only %d bad samples", bad)
	}
	if staged, _ := filepath.Glob(filepath.Join(qdir, "_staging", "*")); len(staged) != 0 {
		t.Errorf("bundle staging left behind: %v", staged)
	}
}
