package migration

import (
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// Metrics receives the handlers' measurements. dims are name, value pairs
// ("State", "Convert", "Tier", "transient"); unit is a CloudWatch unit
// ("Count", "Bytes"). internal/emf implements it with CloudWatch Embedded
// Metric Format lines; the default is a no-op, so the domain package does
// not depend on how (or whether) metrics are shipped.
type Metrics interface {
	Count(name string, value float64, unit string, dims ...string)
}

// Metric names and units.
const (
	MetricRetries       = "Retries"       // an invocation with attempt > 0 {State}
	MetricErrors        = "Errors"        // a handler returned an error {State, Tier}
	MetricClassified    = "Classified"    // a failed job was classified {Tier, Route}
	MetricBytesIn       = "BytesIn"       // source bytes converted {State}
	MetricBytesOut      = "BytesOut"      // output bytes staged {State}
	MetricBytesPromoted = "BytesPromoted" // output bytes made final {State}

	// The fallback-rate signals (internal/signals): every job that ends
	// counts once in JobsEnded, a routed one also in JobsRouted, so that
	// fallback_rate = JobsRouted / JobsEnded per tier, dataset type and
	// format is metric math over their sums.
	MetricJobsEnded  = "JobsEnded"  // a job completed or was routed {}, {DatasetType}, {Format}
	MetricJobsRouted = "JobsRouted" // a job was routed {Tier}, {Tier, DatasetType}, {Tier, Format}
	// MetricFallbackThreshold is the threshold the emitting handler was
	// given for a tier {Tier}, sent with every ended job: the alarms compare
	// the rate with it, so a threshold changed at run time takes effect
	// without a redeploy.
	MetricFallbackThreshold = "FallbackThreshold"
	// MetricRecoveryLatency is the time from a job's first routing to its
	// completion after a replay {}, {Tier} (the tier of that routing).
	MetricRecoveryLatency = "RecoveryLatency"

	UnitCount   = "Count"
	UnitBytes   = "Bytes"
	UnitSeconds = "Seconds"
	UnitNone    = "None"
)

// Dimension names of the fallback-rate metrics.
const (
	DimTier        = "Tier"
	DimDatasetType = "DatasetType"
	DimFormat      = "Format"
)

// NopMetrics discards everything.
type NopMetrics struct{}

// Count implements Metrics.
func (NopMetrics) Count(string, float64, string, ...string) {}

// metered is embedded by each handler: the Metrics it reports to, a field
// set once by WithMetrics while the handler is wired, and where the
// fallback-rate thresholds come from (WithFallbackThresholds).
type metered struct {
	metrics    Metrics
	thresholds func() signals.Thresholds
}

// WithFallbackThresholds makes p report the thresholds th returns at each
// job's end (nil: signals.DefaultThresholds). A function, so that a
// run-time policy read with a TTL can change them between invocations.
func (p *Promote) WithFallbackThresholds(th func() signals.Thresholds) *Promote {
	p.thresholds = th
	return p
}

// WithMetrics makes h report to m (nil: no metrics), returning h for chaining.
func (h *ExecutionFailed) WithMetrics(m Metrics) *ExecutionFailed { h.metrics = m; return h }

// WithFallbackThresholds makes h report the thresholds th returns at each
// job's end (nil: signals.DefaultThresholds).
func (h *ExecutionFailed) WithFallbackThresholds(th func() signals.Thresholds) *ExecutionFailed {
	h.thresholds = th
	return h
}

// WithFallbackThresholds makes c report the thresholds th returns at each
// job's end (nil: signals.DefaultThresholds).
func (c *Classify) WithFallbackThresholds(th func() signals.Thresholds) *Classify {
	c.thresholds = th
	return c
}

func (h metered) fallbackThresholds() signals.Thresholds {
	if h.thresholds == nil {
		return signals.DefaultThresholds
	}
	return h.thresholds().OrDefault()
}

// WithMetrics makes h report to m (nil: no metrics), returning h for chaining.
func (h *HashCheck) WithMetrics(m Metrics) *HashCheck { h.metrics = m; return h }

// WithMetrics makes c report to m (nil: no metrics), returning c for chaining.
func (c *Convert) WithMetrics(m Metrics) *Convert { c.metrics = m; return c }

// WithMetrics makes p report to m (nil: no metrics), returning p for chaining.
func (p *Promote) WithMetrics(m Metrics) *Promote { p.metrics = m; return p }

// WithMetrics makes c report to m (nil: no metrics), returning c for chaining.
func (c *Classify) WithMetrics(m Metrics) *Classify { c.metrics = m; return c }

// meter is the view of a handler's Metrics used inside Handle.
type meter struct{ m Metrics }

func (h metered) meter() meter {
	if h.metrics == nil {
		return meter{NopMetrics{}}
	}
	return meter{h.metrics}
}

func stateName(inv Invocation, def string) string {
	if inv.State != "" {
		return inv.State
	}
	return def
}

// invocation records a retry (attempt > 0) and, on error, its tier.
func (m meter) invocation(inv Invocation, state string, err error) {
	state = stateName(inv, state)
	if inv.Attempt > 0 {
		m.m.Count(MetricRetries, 1, UnitCount, "State", state)
	}
	if err != nil {
		m.m.Count(MetricErrors, 1, UnitCount, "State", state, "Tier", string(fault.TierOf(err)))
	}
}

func (m meter) hashCheck(in HashCheckInput, err error) { m.invocation(in.Context, "HashCheck", err) }

func (m meter) convert(in ConvertInput, out ConvertOutput, err error) {
	m.invocation(in.Context, "Convert", err)
	if err != nil {
		return
	}
	state := stateName(in.Context, "Convert")
	m.m.Count(MetricBytesIn, float64(in.Job.SourceSize), UnitBytes, "State", state)
	m.m.Count(MetricBytesOut, float64(totalSize(out.Outputs)), UnitBytes, "State", state)
}

func (m meter) promote(in PromoteInput, out PromoteOutput, err error) {
	m.invocation(in.Context, "Promote", err)
	if err == nil {
		m.m.Count(MetricBytesPromoted, float64(out.Size), UnitBytes, "State", stateName(in.Context, "Promote"))
	}
}

func (m meter) classify(in ClassifyInput, out ClassifyOutput, err error) {
	m.invocation(in.Context, "Classify", err)
	if out.Tier != "" {
		m.m.Count(MetricClassified, 1, UnitCount, "Tier", out.Tier, "Route", out.Route)
	}
}

// jobEnded counts a job that completed (tier "") or was routed under tier,
// by dataset type and format of its source key, and reports the
// thresholds its rates are judged against.
func (m meter) jobEnded(key, tier string, th signals.Thresholds) {
	dt, f := signals.DatasetType(key), signals.Format(key)
	m.m.Count(MetricJobsEnded, 1, UnitCount)
	m.m.Count(MetricJobsEnded, 1, UnitCount, DimDatasetType, dt)
	m.m.Count(MetricJobsEnded, 1, UnitCount, DimFormat, f)
	if tier != "" {
		tier = signals.TierOf(tier)
		m.m.Count(MetricJobsRouted, 1, UnitCount, DimTier, tier)
		m.m.Count(MetricJobsRouted, 1, UnitCount, DimTier, tier, DimDatasetType, dt)
		m.m.Count(MetricJobsRouted, 1, UnitCount, DimTier, tier, DimFormat, f)
	}
	for _, t := range signals.Tiers {
		if limit, ok := th.For(t); ok {
			m.m.Count(MetricFallbackThreshold, limit, UnitNone, DimTier, t)
		}
	}
}

// recovered reports a job's recovery latency.
func (m meter) recovered(l signals.Latency) {
	m.m.Count(MetricRecoveryLatency, l.Duration.Seconds(), UnitSeconds)
	m.m.Count(MetricRecoveryLatency, l.Duration.Seconds(), UnitSeconds, DimTier, signals.TierOf(l.Tier))
}

func totalSize(as []Artifact) int64 {
	var n int64
	for _, a := range as {
		n += a.Size
	}
	return n
}
