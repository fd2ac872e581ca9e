// Package signals computes the fallback-rate signals operators tune routing
// with: fallback_rate = routed / total jobs, per routing tier and per
// dataset type (raster or vector) and source format; the recovery latency of
// a job from its routing to its completion after a replay; and how deep and
// how old the dead-letter queue is. The local run report and `geomigrate
// status` compute them here from outcomes and job records; on AWS the
// handlers emit the per-job counts as metrics (internal/migration) and
// CloudWatch computes the same ratios (infra/).
//
// A job counts once it ended: completed, or routed (to remediation or the
// dead-letter queue). Skipped and ignored files are not jobs that ran, and an
// execution that failed without reaching either end is neither: they are in
// no denominator.
package signals

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Thresholds are the fallback rates above which a tier's routing needs an
// operator: a sustained data-specific rate above DataSpecificRate points at
// the source data (corruption, schema drift), a transient rate above
// TransientRate at capacity or back-off ceilings. They are a value passed
// in, so that the run-time policy document can supply them without a
// redeploy; a zero field means its default.
type Thresholds struct {
	DataSpecificRate float64 `json:"data_specific_rate"`
	TransientRate    float64 `json:"transient_rate"`
}

// DefaultThresholds (docs/operations.md): data-specific above 5 %, transient
// routing above 15 %.
var DefaultThresholds = Thresholds{DataSpecificRate: 0.05, TransientRate: 0.15}

// OrDefault replaces the zero fields of t with DefaultThresholds'.
func (t Thresholds) OrDefault() Thresholds {
	if t.DataSpecificRate == 0 {
		t.DataSpecificRate = DefaultThresholds.DataSpecificRate
	}
	if t.TransientRate == 0 {
		t.TransientRate = DefaultThresholds.TransientRate
	}
	return t
}

// Validate refuses a rate outside (0, 1].
func (t Thresholds) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"data_specific_rate", t.DataSpecificRate}, {"transient_rate", t.TransientRate}} {
		if math.IsNaN(r.v) || r.v <= 0 || r.v > 1 {
			return fmt.Errorf("signals.Validate: %s %v: want a fraction in (0, 1], e.g. 0.05", r.name, r.v)
		}
	}
	return nil
}

// For is the threshold of a tier, if it has one.
func (t Thresholds) For(tier string) (float64, bool) {
	switch tier {
	case string(fault.TierDataSpecific):
		return t.DataSpecificRate, true
	case string(fault.TierTransient):
		return t.TransientRate, true
	}
	return 0, false
}

// Tiers are the routing tiers in the order reports list them.
var Tiers = []string{string(fault.TierDataSpecific), string(fault.TierTransient), string(fault.TierSystemic), string(fault.TierUnknown)}

// TierOf names the tier a routed job is counted under: its classified
// tier, or unknown when none was recorded (an execution closed after it
// timed out or was aborted).
func TierOf(tier string) string {
	if slices.Contains(Tiers, tier) {
		return tier
	}
	return string(fault.TierUnknown)
}

// DatasetType is "raster" or "vector": what the source key predicts
// (formats.PredictKind), the same judgement that names the output.
func DatasetType(key string) string { return formats.PredictKind(key).String() }

// Format is the source's extension without the dot ("tif", "shp.zip"), or
// "other" for a name the format table does not know, which keeps the
// format dimension to the table's rows.
func Format(key string) string {
	f := formats.Lookup(key)
	if f.Kind == formats.Unknown && f.Output == "" && f.Drivers == nil {
		return "other"
	}
	return strings.TrimPrefix(f.Ext, ".")
}

// End is one job that ended: Tier is "" for a completed job, else the tier
// it was routed under.
type End struct {
	Key  string
	Tier string
}

// Routed reports whether the job was routed rather than completed.
func (e End) Routed() bool { return e.Tier != "" }

// TierRate is one tier's fallback rate: Routed of the run's Jobs.
type TierRate struct {
	Tier   string  `json:"tier"`
	Routed int     `json:"routed"`
	Rate   float64 `json:"rate"`
	// Threshold is the tier's alarm threshold (0: the tier has none);
	// Breach is Rate > Threshold.
	Threshold float64 `json:"threshold,omitempty"`
	Breach    bool    `json:"breach"`
}

// GroupRate is the fallback rate of the jobs of one dataset type or format.
type GroupRate struct {
	Name   string  `json:"name"`
	Jobs   int     `json:"jobs"`
	Routed int     `json:"routed"`
	Rate   float64 `json:"rate"`
	// Tiers counts the routed jobs by tier (tiers with none left out).
	Tiers map[string]int `json:"tiers,omitempty"`
}

// Latency is one job's recovery: from its first routing to its completion
// after a replay.
type Latency struct {
	Tier     string
	Duration time.Duration
}

// Recovery summarizes recovery latencies.
type Recovery struct {
	Count         int            `json:"count"`
	MedianSeconds float64        `json:"median_seconds"`
	MaxSeconds    float64        `json:"max_seconds"`
	Tiers         []TierRecovery `json:"tiers"`
}

// TierRecovery is Recovery for the jobs first routed under one tier.
type TierRecovery struct {
	Tier          string  `json:"tier"`
	Count         int     `json:"count"`
	MedianSeconds float64 `json:"median_seconds"`
	MaxSeconds    float64 `json:"max_seconds"`
}

// QueueAge is how many messages a queue holds and how old its oldest is.
type QueueAge struct {
	Depth int `json:"depth"`
	// OldestSentAt and OldestAgeSeconds are absent when the queue is empty
	// or its adapter cannot tell (SQS reports the age only as a CloudWatch
	// metric, ApproximateAgeOfOldestMessage).
	OldestSentAt     time.Time `json:"oldest_sent_at,omitzero"`
	OldestAgeSeconds float64   `json:"oldest_age_seconds,omitempty"`
}

// Signals are the fallback-rate signals of a set of ended jobs.
type Signals struct {
	Jobs       int        `json:"jobs"`
	Routed     int        `json:"routed"`
	Rate       float64    `json:"rate"`
	Thresholds Thresholds `json:"thresholds"`
	// Tiers has every tier, in Tiers order.
	Tiers        []TierRate  `json:"tiers"`
	DatasetTypes []GroupRate `json:"dataset_types"`
	Formats      []GroupRate `json:"formats"`
	// Recovery is present when a job recovered (routed, then completed).
	Recovery *Recovery `json:"recovery,omitempty"`
	// DeadLetter is the dead-letter queue when it was read.
	DeadLetter *QueueAge `json:"dead_letter,omitempty"`
}

// Compute builds the signals of ends and the recovery latencies, judged
// against th (zero fields: DefaultThresholds).
func Compute(ends []End, recovered []Latency, th Thresholds) Signals {
	th = th.OrDefault()
	s := Signals{Jobs: len(ends), Thresholds: th}
	byTier := map[string]int{}
	types, forms := groups{}, groups{}
	for _, e := range ends {
		tier := ""
		if e.Routed() {
			tier = TierOf(e.Tier)
			s.Routed++
			byTier[tier]++
		}
		types.add(DatasetType(e.Key), tier)
		forms.add(Format(e.Key), tier)
	}
	s.Rate = Ratio(s.Routed, s.Jobs)
	for _, tier := range Tiers {
		tr := TierRate{Tier: tier, Routed: byTier[tier], Rate: Ratio(byTier[tier], s.Jobs)}
		if limit, ok := th.For(tier); ok {
			tr.Threshold = limit
			tr.Breach = s.Jobs > 0 && tr.Rate > limit
		}
		s.Tiers = append(s.Tiers, tr)
	}
	s.DatasetTypes, s.Formats = types.rates(), forms.rates()
	s.Recovery = summarize(recovered)
	return s
}

// Breaches lists the tiers whose rate is above their threshold.
func (s Signals) Breaches() []TierRate {
	var out []TierRate
	for _, t := range s.Tiers {
		if t.Breach {
			out = append(out, t)
		}
	}
	return out
}

// Ratio is part / whole, 0 when whole is 0 (no job ended: no rate).
func Ratio(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

type groups map[string]*GroupRate

func (g groups) add(name, tier string) {
	r := g[name]
	if r == nil {
		r = &GroupRate{Name: name}
		g[name] = r
	}
	r.Jobs++
	if tier != "" {
		r.Routed++
		if r.Tiers == nil {
			r.Tiers = map[string]int{}
		}
		r.Tiers[tier]++
	}
}

// rates lists the groups by name, each with its rate.
func (g groups) rates() []GroupRate {
	out := make([]GroupRate, 0, len(g))
	for _, r := range g {
		r.Rate = Ratio(r.Routed, r.Jobs)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func summarize(ls []Latency) *Recovery {
	if len(ls) == 0 {
		return nil
	}
	all := make([]time.Duration, 0, len(ls))
	byTier := map[string][]time.Duration{}
	for _, l := range ls {
		all = append(all, l.Duration)
		t := TierOf(l.Tier)
		byTier[t] = append(byTier[t], l.Duration)
	}
	r := &Recovery{Count: len(all)}
	r.MedianSeconds, r.MaxSeconds = medianMax(all)
	for _, tier := range Tiers {
		ds := byTier[tier]
		if len(ds) == 0 {
			continue
		}
		tr := TierRecovery{Tier: tier, Count: len(ds)}
		tr.MedianSeconds, tr.MaxSeconds = medianMax(ds)
		r.Tiers = append(r.Tiers, tr)
	}
	return r
}

// medianMax returns the median (the mean of the middle two for an even
// count) and the maximum, in seconds.
func medianMax(ds []time.Duration) (median, maxSeconds float64) {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return m.Seconds(), s[n-1].Seconds()
}

// routed reports whether a transition routed the job: to remediation
// (REMEDIAL) or to the dead-letter queue (QUARANTINED). A note on a routed
// job (From == To) is not a routing.
func routed(t statestore.Transition) bool {
	return (t.To == statestore.Remedial || t.To == statestore.Quarantined) && t.From != t.To
}

// RecoveryOf reads a recovery from transitions in time order (one job's
// history, or the histories of every job of one source merged, since a
// fixed file is a new job): when the last transition completes the job and
// a routing came after the completion before it, the latency runs from
// that first routing to the completion, under the first routing's tier.
func RecoveryOf(history []statestore.Transition) (Latency, bool) {
	n := len(history)
	if n == 0 || history[n-1].To != statestore.Completed {
		return Latency{}, false
	}
	first := -1
	for i := n - 2; i >= 0; i-- {
		if history[i].To == statestore.Completed {
			break
		}
		if routed(history[i]) {
			first = i
		}
	}
	if first < 0 {
		return Latency{}, false
	}
	return Latency{Tier: history[first].Tier, Duration: history[n-1].At.Sub(history[first].At)}, true
}

// Recoveries merges the histories of the jobs of each source (bucket and
// key) in time order and returns the recovery of every source whose latest
// transition completed it after a routing.
func Recoveries(jobs []statestore.Job) []Latency {
	bySource := map[string][]statestore.Transition{}
	var order []string
	for _, j := range jobs {
		src := j.SourceBucket + "/" + j.SourceKey
		if _, ok := bySource[src]; !ok {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], j.History...)
	}
	var out []Latency
	for _, src := range order {
		h := bySource[src]
		sort.SliceStable(h, func(i, j int) bool { return h[i].At.Before(h[j].At) })
		if l, ok := RecoveryOf(h); ok {
			out = append(out, l)
		}
	}
	return out
}
