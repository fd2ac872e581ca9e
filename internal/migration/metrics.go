package migration

import "github.com/geomigrate/geomigrate/internal/fault"

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

	UnitCount = "Count"
	UnitBytes = "Bytes"
)

// NopMetrics discards everything.
type NopMetrics struct{}

// Count implements Metrics.
func (NopMetrics) Count(string, float64, string, ...string) {}

// metered is embedded by each handler: the Metrics it reports to, a field
// set once by WithMetrics while the handler is wired.
type metered struct{ metrics Metrics }

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
		m.m.Count(MetricBytesPromoted, float64(totalSize(out.Outputs)), UnitBytes, "State", stateName(in.Context, "Promote"))
	}
}

func (m meter) classify(in ClassifyInput, out ClassifyOutput, err error) {
	m.invocation(in.Context, "Classify", err)
	if out.Tier != "" {
		m.m.Count(MetricClassified, 1, UnitCount, "Tier", out.Tier, "Route", out.Route)
	}
}

func totalSize(as []Artifact) int64 {
	var n int64
	for _, a := range as {
		n += a.Size
	}
	return n
}
