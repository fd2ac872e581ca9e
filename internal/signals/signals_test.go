package signals_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

func TestComputeRates(t *testing.T) {
	t.Parallel()
	completed := func(key string) signals.End { return signals.End{Key: key} }
	routed := func(key, tier string) signals.End { return signals.End{Key: key, Tier: tier} }
	many := func(n int, e signals.End) []signals.End {
		out := make([]signals.End, n)
		for i := range out {
			out[i] = e
		}
		return out
	}
	tests := []struct {
		name   string
		ends   []signals.End
		th     signals.Thresholds
		jobs   int
		routed int
		// rates per tier, in signals.Tiers order (data_specific, transient, systemic, unknown)
		rates   []float64
		breach  []string
		types   map[string][2]int // name → jobs, routed
		formats map[string][2]int
	}{
		{name: "no jobs", rates: []float64{0, 0, 0, 0}, types: map[string][2]int{}, formats: map[string][2]int{}},
		{
			name: "all completed", ends: []signals.End{completed("a.tif"), completed("b.shp")},
			jobs: 2, rates: []float64{0, 0, 0, 0},
			types:   map[string][2]int{"raster": {1, 0}, "vector": {1, 0}},
			formats: map[string][2]int{"tif": {1, 0}, "shp": {1, 0}},
		},
		{
			name: "one of four data-specific breaches 5 %",
			ends: []signals.End{completed("a.tif"), completed("b.tif"), completed("c.gpkg"), routed("d.gpkg", "data_specific")},
			jobs: 4, routed: 1, rates: []float64{0.25, 0, 0, 0}, breach: []string{"data_specific"},
			types:   map[string][2]int{"raster": {2, 0}, "vector": {2, 1}},
			formats: map[string][2]int{"tif": {2, 0}, "gpkg": {2, 1}},
		},
		{
			name: "exactly at the threshold is no breach",
			ends: append(many(19, completed("a.tif")), routed("z.tif", "data_specific")),
			jobs: 20, routed: 1, rates: []float64{0.05, 0, 0, 0},
			types: map[string][2]int{"raster": {20, 1}}, formats: map[string][2]int{"tif": {20, 1}},
		},
		{
			name: "transient 2 of 10 breaches 15 %, systemic has no threshold",
			ends: append(many(6, completed("x.fgb")), routed("a.fgb", "transient"), routed("b.fgb", "transient"), routed("c.fgb", "systemic"), routed("d.fgb", "systemic")),
			jobs: 10, routed: 4, rates: []float64{0, 0.2, 0.2, 0}, breach: []string{"transient"},
			types: map[string][2]int{"vector": {10, 4}}, formats: map[string][2]int{"fgb": {10, 4}},
		},
		{
			name: "thresholds passed in replace the defaults",
			ends: append(many(9, completed("a.tif")), routed("b.tif", "transient")),
			th:   signals.Thresholds{DataSpecificRate: 0.5, TransientRate: 0.05},
			jobs: 10, routed: 1, rates: []float64{0, 0.1, 0, 0}, breach: []string{"transient"},
			types: map[string][2]int{"raster": {10, 1}}, formats: map[string][2]int{"tif": {10, 1}},
		},
		{
			name: "a routed job without a tier counts as unknown; unknown names and archives",
			ends: []signals.End{routed("a.xyz", "?"), routed("b", "unknown"), completed("roads.shp.zip"), completed("dem.tif.zip")},
			jobs: 4, routed: 2, rates: []float64{0, 0, 0, 0.5},
			types:   map[string][2]int{"raster": {3, 2}, "vector": {1, 0}},
			formats: map[string][2]int{"other": {2, 2}, "shp.zip": {1, 0}, "zip": {1, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := signals.Compute(tt.ends, nil, tt.th)
			if s.Jobs != tt.jobs || s.Routed != tt.routed {
				t.Errorf("jobs %d routed %d, want %d %d", s.Jobs, s.Routed, tt.jobs, tt.routed)
			}
			if want := signals.Ratio(tt.routed, tt.jobs); s.Rate != want {
				t.Errorf("rate %v, want %v", s.Rate, want)
			}
			if len(s.Tiers) != len(signals.Tiers) {
				t.Fatalf("tiers %+v", s.Tiers)
			}
			var breach []string
			for i, tr := range s.Tiers {
				if tr.Tier != signals.Tiers[i] || math.Abs(tr.Rate-tt.rates[i]) > 1e-12 {
					t.Errorf("tier %d: %s %v, want %s %v", i, tr.Tier, tr.Rate, signals.Tiers[i], tt.rates[i])
				}
				if tr.Breach {
					breach = append(breach, tr.Tier)
				}
			}
			if !reflect.DeepEqual(breach, tt.breach) {
				t.Errorf("breaches %v, want %v", breach, tt.breach)
			}
			if got := len(s.Breaches()); got != len(tt.breach) {
				t.Errorf("Breaches() has %d", got)
			}
			check := func(what string, got []signals.GroupRate, want map[string][2]int) {
				t.Helper()
				m := map[string][2]int{}
				for i, g := range got {
					m[g.Name] = [2]int{g.Jobs, g.Routed}
					if g.Rate != signals.Ratio(g.Routed, g.Jobs) {
						t.Errorf("%s %s: rate %v", what, g.Name, g.Rate)
					}
					if i > 0 && got[i-1].Name >= g.Name {
						t.Errorf("%s not sorted by name: %v", what, got)
					}
				}
				if !reflect.DeepEqual(m, want) {
					t.Errorf("%s %v, want %v", what, m, want)
				}
			}
			check("dataset types", s.DatasetTypes, tt.types)
			check("formats", s.Formats, tt.formats)
		})
	}
}

func TestThresholds(t *testing.T) {
	t.Parallel()
	if got := (signals.Thresholds{}).OrDefault(); got != signals.DefaultThresholds || got.DataSpecificRate != 0.05 || got.TransientRate != 0.15 {
		t.Errorf("defaults %+v", got)
	}
	if got := (signals.Thresholds{TransientRate: 0.3}).OrDefault(); got.DataSpecificRate != 0.05 || got.TransientRate != 0.3 {
		t.Errorf("partial %+v", got)
	}
	for _, tt := range []struct {
		th signals.Thresholds
		ok bool
	}{
		{signals.DefaultThresholds, true},
		{signals.Thresholds{DataSpecificRate: 1, TransientRate: 0.001}, true},
		{signals.Thresholds{DataSpecificRate: 0, TransientRate: 0.1}, false},
		{signals.Thresholds{DataSpecificRate: 5, TransientRate: 0.1}, false},
		{signals.Thresholds{DataSpecificRate: 0.05, TransientRate: math.NaN()}, false},
	} {
		if err := tt.th.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v", tt.th, err)
		}
	}
}

func TestRecoveryOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(min int, from, to statestore.Status, tier string) statestore.Transition {
		return statestore.Transition{At: t0.Add(time.Duration(min) * time.Minute), From: from, To: to, Tier: tier}
	}
	const (
		P = statestore.Processing
		R = statestore.Retrying
		C = statestore.Completed
		M = statestore.Remedial
		Q = statestore.Quarantined
	)
	tests := []struct {
		name string
		h    []statestore.Transition
		want time.Duration
		tier string
		ok   bool
	}{
		{name: "empty"},
		{name: "completed first time", h: []statestore.Transition{at(0, "", P, ""), at(1, P, C, "")}},
		{name: "still routed", h: []statestore.Transition{at(0, "", P, ""), at(1, P, Q, "transient")}},
		{
			name: "dead-lettered then replayed",
			h:    []statestore.Transition{at(0, "", P, ""), at(1, P, R, ""), at(2, R, Q, "transient"), at(30, Q, P, ""), at(32, P, C, "")},
			want: 30 * time.Minute, tier: "transient", ok: true,
		},
		{
			name: "routed twice: from the first routing",
			h:    []statestore.Transition{at(0, "", P, ""), at(1, P, Q, "systemic"), at(10, Q, P, ""), at(11, P, M, "data_specific"), at(61, M, P, ""), at(62, P, C, "")},
			want: 61 * time.Minute, tier: "systemic", ok: true,
		},
		{
			name: "a note on the routed job is not a second routing",
			h:    []statestore.Transition{at(0, "", P, ""), at(5, P, M, "data_specific"), at(6, M, M, ""), at(20, M, P, ""), at(25, P, C, "")},
			want: 20 * time.Minute, tier: "data_specific", ok: true,
		},
		{
			name: "a routing before an earlier completion does not count",
			h:    []statestore.Transition{at(0, "", P, ""), at(1, P, Q, "transient"), at(2, Q, P, ""), at(3, P, C, ""), at(50, C, P, ""), at(51, P, C, "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := signals.RecoveryOf(tt.h)
			if ok != tt.ok || l.Duration != tt.want || l.Tier != tt.tier {
				t.Errorf("RecoveryOf = %+v %v, want %v %s %v", l, ok, tt.want, tt.tier, tt.ok)
			}
		})
	}
}

func TestRecoveriesMergeTheJobsOfOneSource(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tr := func(min int, from, to statestore.Status, tier string) statestore.Transition {
		return statestore.Transition{At: t0.Add(time.Duration(min) * time.Minute), From: from, To: to, Tier: tier}
	}
	jobs := []statestore.Job{
		// roads.gpkg was routed to remediation, fixed (new content: a new
		// job) and completed 90 minutes later.
		{ID: "old", SourceBucket: "src", SourceKey: "roads.gpkg", History: []statestore.Transition{tr(0, "", statestore.Processing, ""), tr(1, statestore.Processing, statestore.Remedial, "data_specific")}},
		{ID: "other", SourceBucket: "src", SourceKey: "dem.tif", History: []statestore.Transition{tr(0, "", statestore.Processing, ""), tr(2, statestore.Processing, statestore.Completed, "")}},
		{ID: "new", SourceBucket: "src", SourceKey: "roads.gpkg", History: []statestore.Transition{tr(90, "", statestore.Processing, ""), tr(91, statestore.Processing, statestore.Completed, "")}},
	}
	got := signals.Recoveries(jobs)
	if len(got) != 1 || got[0].Duration != 90*time.Minute || got[0].Tier != "data_specific" {
		t.Fatalf("Recoveries = %+v", got)
	}
	s := signals.Compute(nil, append(got, signals.Latency{Tier: "transient", Duration: time.Minute}, signals.Latency{Tier: "transient", Duration: 3 * time.Minute}), signals.Thresholds{})
	r := s.Recovery
	if r == nil || r.Count != 3 || r.MedianSeconds != 180 || r.MaxSeconds != 5400 {
		t.Fatalf("recovery %+v", r)
	}
	want := []signals.TierRecovery{{Tier: "data_specific", Count: 1, MedianSeconds: 5400, MaxSeconds: 5400}, {Tier: "transient", Count: 2, MedianSeconds: 120, MaxSeconds: 180}}
	if !reflect.DeepEqual(r.Tiers, want) {
		t.Errorf("per tier %+v, want %+v", r.Tiers, want)
	}
	if signals.Compute(nil, nil, signals.Thresholds{}).Recovery != nil {
		t.Error("recovery reported with no recovered job")
	}
}
