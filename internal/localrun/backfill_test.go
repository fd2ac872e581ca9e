package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// TestBackfillOverAThousandObjects runs backfill.asl.json in the local
// executor over a prefix of 1,000 small files, good and bad, and checks
// that every item ends where it belongs.
func TestBackfillOverAThousandObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 conversions; skipped with -short")
	}
	_, ss, _ := samples(t)
	tiny := filepath.Join(t.TempDir(), "tiny.tif")
	var dem, noCRS, notRaster string
	for _, s := range ss {
		switch filepath.Base(s.Path) {
		case "dem_utm33.tif":
			dem = s.Path
		case "no_crs.tif":
			noCRS = s.Path
		case "not_a_raster.tif":
			notRaster = s.Path
		}
	}
	if dem == "" || noCRS == "" || notRaster == "" {
		t.Fatalf("samples lack dem_utm33.tif, no_crs.tif or not_a_raster.tif")
	}
	if out, err := exec.Command("gdal_translate", "-q", "-outsize", "16", "16", dem, tiny).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v\n%s", err, out)
	}
	src := t.TempDir()
	want := map[string]string{}
	put := func(key, from, status string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(src, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[key] = status
	}
	for i := range 1000 {
		key := fmt.Sprintf("incoming/batch%02d/tile_%04d.tif", i/100, i)
		switch {
		case i%50 == 7:
			put(key, noCRS, localrun.StatusRemediation)
		case i%50 == 23:
			put(key, notRaster, localrun.StatusRemediation)
		default:
			put(key, tiny, localrun.StatusCompleted)
		}
	}
	put("elsewhere/ignored.tif", tiny, "") // outside the prefix: never listed

	p := newPipeline(t, src)
	results := t.TempDir()
	store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("dest", p.destDir), dirstore.WithBucketDir("ops", results))
	if err != nil {
		t.Fatal(err)
	}
	p.store = store
	bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: p.executor(t, store)})
	if err != nil {
		t.Fatal(err)
	}
	res, spool, err := bf.Run(context.Background(), "backfill-1", json.RawMessage(`{"prefix":"incoming/","max_concurrency":8,"dataset_id":"tiles"}`))
	if err != nil {
		t.Fatal(err)
	}
	outcomes := allOutcomes(t, spool)
	if res.Status != "SUCCEEDED" {
		t.Fatalf("backfill %s: %s %s", res.Status, res.Error, res.Cause)
	}
	got, msgs := map[string]string{}, map[string]string{}
	for _, o := range outcomes {
		msgs[o.Key] = o.Error + ": " + o.Message
		if _, dup := got[o.Key]; dup {
			t.Errorf("%s ran twice", o.Key)
		}
		got[o.Key] = o.Status
	}
	for key, status := range want {
		if status == "" {
			if _, ran := got[key]; ran {
				t.Errorf("%s is outside the prefix but ran", key)
			}
			continue
		}
		if got[key] != status {
			t.Errorf("%s ended %q, want %q: %s", key, got[key], status, msgs[key])
		}
	}
	if len(got) != 1000 {
		t.Errorf("%d items ran, want 1000", len(got))
	}
	if n := len(p.remediation.messages(t)); n != 40 {
		t.Errorf("%d remediation messages, want 40", n)
	}

	// The result writer's files account for every item.
	var manifest, succeeded, failed string
	err = store.List(context.Background(), "ops", "backfill-results/", func(o objectstore.Object) error {
		switch {
		case strings.HasSuffix(o.Key, "manifest.json"):
			manifest = o.Key
		case strings.HasSuffix(o.Key, "SUCCEEDED_0.json"):
			succeeded = o.Key
		case strings.HasSuffix(o.Key, "FAILED_0.json"):
			failed = o.Key
		}
		return nil
	})
	if err != nil || manifest == "" {
		t.Fatalf("no result manifest written (%v)", err)
	}
	count := func(key string) int {
		b, err := os.ReadFile(filepath.Join(results, filepath.FromSlash(key)))
		if err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatal(err)
		}
		return len(items)
	}
	if s, f := count(succeeded), count(failed); s != 960 || f != 40 {
		t.Errorf("result files: %d succeeded, %d failed; want 960 and 40", s, f)
	}
}

// allOutcomes reads a backfill's spooled outcomes back and removes the
// spool when the test ends.
func allOutcomes(tb testing.TB, s *localrun.Outcomes) []localrun.Outcome {
	tb.Helper()
	tb.Cleanup(func() { s.Close() })
	out, err := s.All()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
