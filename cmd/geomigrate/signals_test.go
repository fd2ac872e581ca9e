package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/sampledata"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// TestFallbackSignalsInReportAndStatus runs a mix of files through the
// local executor: two good ones, two with data problems (remediation) and
// one whose source store keeps throttling until its retries run out (the
// dead-letter queue). The run report and status give fallback_rate =
// routed / jobs that ended per tier, dataset type and format, the
// dead-letter queue; once the store recovers and the dead-letter queue is
// replayed, the file's recovery latency under the transient tier.
func TestFallbackSignalsInReportAndStatus(t *testing.T) {
	t.Setenv("GEOMIGRATE_RETRY_WAIT_SCALE", "0.01")
	dir := t.TempDir()
	all, src, dest := filepath.Join(dir, "all"), filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if _, err := sampledata.Write(all); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		"dem_utm33.tif": "dem_utm33.tif", "parks.geojson": "parks.geojson", // good
		"no_crs.tif": "no_crs.tif", "truncated.tif": "truncated.tif", // data problems
		"landcover_4326.tif": "flaky.tif", // good, behind a throttling store
	} {
		copyFile(t, filepath.Join(all, from), filepath.Join(src, to))
	}
	var healed atomic.Bool
	wrapObjects = func(s objectstore.Store) objectstore.Store {
		return faultstore.New(s, faultstore.Rule{Kind: faultstore.SlowDown,
			Match: func(_, key string) bool { return key == "flaky.tif" },
			When:  func(int) bool { return !healed.Load() }})
	}
	t.Cleanup(func() { wrapObjects = func(s objectstore.Store) objectstore.Store { return s } })

	out, stderr, err := run(t, "migrate", src, "--dest", dest, "--progress", "plain", "--breaker-threshold", "0")
	if err == nil || !strings.Contains(err.Error(), "1 file(s) in the dead-letter queue") {
		t.Fatalf("migrate: %v, want one file dead-lettered\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	s := r.Signals
	if s == nil {
		t.Fatalf("report without signals:\n%s", out)
	}
	if s.Jobs != 5 || s.Routed != 3 || s.Thresholds != signals.DefaultThresholds {
		t.Fatalf("signals jobs %d routed %d thresholds %+v, want 5, 3, the defaults", s.Jobs, s.Routed, s.Thresholds)
	}
	tiers := map[string]signals.TierRate{}
	for _, tr := range s.Tiers {
		tiers[tr.Tier] = tr
	}
	if ds := tiers["data_specific"]; ds.Routed != 2 || ds.Rate != 0.4 || !ds.Breach || ds.Threshold != 0.05 {
		t.Errorf("data_specific %+v, want 2 routed, rate 0.4 over 0.05", ds)
	}
	if tr := tiers["transient"]; tr.Routed != 1 || tr.Rate != 0.2 || !tr.Breach || tr.Threshold != 0.15 {
		t.Errorf("transient %+v, want 1 routed, rate 0.2 over 0.15", tr)
	}
	if sy := tiers["systemic"]; sy.Routed != 0 || sy.Breach {
		t.Errorf("systemic %+v", sy)
	}
	groups := func(gs []signals.GroupRate) map[string][2]int {
		m := map[string][2]int{}
		for _, g := range gs {
			m[g.Name] = [2]int{g.Jobs, g.Routed}
		}
		return m
	}
	if got := groups(s.DatasetTypes); got["raster"] != [2]int{4, 3} || got["vector"] != [2]int{1, 0} || len(got) != 2 {
		t.Errorf("by dataset type %v, want raster 3 of 4 routed, vector 0 of 1", got)
	}
	if got := groups(s.Formats); got["tif"] != [2]int{4, 3} || got["geojson"] != [2]int{1, 0} || len(got) != 2 {
		t.Errorf("by format %v", got)
	}
	if s.Recovery != nil {
		t.Errorf("recovery %+v before any replay", s.Recovery)
	}
	if q := s.DeadLetter; q == nil || q.Depth != 1 || q.OldestSentAt.IsZero() {
		t.Errorf("dead letter %+v, want one message with its age", q)
	}
	for _, o := range r.Files {
		if o.TraceID == "" || !strings.HasPrefix(o.TraceID, "1-") {
			t.Errorf("%s: trace id %q", o.Key, o.TraceID)
		}
	}
	for _, want := range []string{"Fallback rate (routed / jobs that ended): 3 of 5 (60.0%)", "data_specific  2       40.0%  5.0%", "transient      1       20.0%  15.0%",
		"by dataset type: raster 3/4 (75.0%), vector 0/1 (0.0%)", "Dead-letter queue: 1 message(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run summary lacks %q:\n%s", want, out)
		}
	}
	if st := statusOf(t, dest).text; !strings.Contains(st, "Fallback rate (routed / jobs that ended): 3 of 5 (60.0%)") ||
		!strings.Contains(st, "by format:       geojson 0/1 (0.0%), tif 3/4 (75.0%)") || !strings.Contains(st, "Dead-letter queue: 1 message(s)") {
		t.Errorf("status:\n%s", st)
	}

	// The store recovers; the dead-letter queue is replayed.
	healed.Store(true)
	out, stderr, err = run(t, "replay", "--dest", dest, "--queue", "dlq", "--progress", "plain")
	if err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
	}
	r = lastReport(t, out)
	if r.Signals == nil || r.Signals.Jobs != 1 || r.Signals.Routed != 0 {
		t.Fatalf("replay signals %+v", r.Signals)
	}
	rec := r.Signals.Recovery
	if rec == nil || rec.Count != 1 || len(rec.Tiers) != 1 || rec.Tiers[0].Tier != "transient" || rec.MaxSeconds <= 0 {
		t.Fatalf("replay recovery %+v, want the flaky file under transient", rec)
	}
	st := statusOf(t, dest).text
	for _, want := range []string{"Fallback rate (routed / jobs that ended): 2 of 5 (40.0%)", "transient      0       0.0%",
		"Recovery latency (routed → completed after replay): 1 job(s)", "transient 1 (median", "Dead-letter queue: empty"} {
		if !strings.Contains(st, want) {
			t.Errorf("status after the replay lacks %q:\n%s", want, st)
		}
	}
	for _, o := range r.Files {
		if o.Key == "flaky.tif" && o.Status != localrun.StatusCompleted {
			t.Errorf("flaky.tif after the replay: %+v", o)
		}
	}
}
