// Package steps builds the handlers of the migrate state machine's steps
// (HashCheck, Convert, Promote, Classify) and of the executionfailed
// function over the ports of one backend: the one place they are wired.
// The Lambda mains build them over the AWS adapters (internal/awsapp), the
// CLI over the same adapters or the embedded local ones (internal/localrun);
// engine and output validator are passed in, so only Convert links GDAL.
package steps

import (
	"context"
	"log/slog"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Ports are what the handlers share, built once per process.
type Ports struct {
	Config  migration.Config
	Store   objectstore.Store
	Tracker *statestore.Tracker
	Log     *slog.Logger
	// Metrics receives the handlers' measurements (nil: none).
	Metrics migration.Metrics
	// Quarantine writes the bundle of every routed job (nil: none).
	Quarantine *quarantine.Writer
	// Breaker, when enabled, guards HashCheck's, Convert's and Promote's
	// calls to each bucket: while a bucket's breaker is open they fail fast
	// with a fault.BreakerOpenError, which the state machine waits out.
	Breaker *breaker.Breaker
	// Policy is the run-time policy document (nil: the built-in policy):
	// Classify takes its rules from the document in force at each caught
	// error, HashCheck its job deadline at each call, Promote and Classify
	// their fallback-rate thresholds at each job's end.
	Policy *policy.Source
	// FallbackThresholds returns the fallback-rate thresholds Promote and
	// Classify report with every job's end (nil: the policy's alarms, else
	// signals.DefaultThresholds); the alarms compare the rates with what
	// was reported.
	FallbackThresholds func() signals.Thresholds
	// Sources, where HashCheck and Convert share a process (the CLI), lets
	// Convert take the small sources HashCheck read whole instead of
	// fetching them again (nil: each step reads for itself, as the Lambdas
	// must).
	Sources *objectstore.SourceCache
	// Items, where Promote and the run's STAC tree update share a process
	// (the CLI), keeps the items Promote wrote so the tree links them
	// without reading them back (nil: the tree reads them).
	Items *migration.ItemLog
}

// thresholds is FallbackThresholds, else the alarms of the policy document
// in force (nil without either: the handlers use the defaults).
func (p Ports) thresholds() func() signals.Thresholds {
	if p.FallbackThresholds != nil || p.Policy == nil {
		return p.FallbackThresholds
	}
	return func() signals.Thresholds {
		a := p.Policy.Current(context.Background()).Alarms
		return signals.Thresholds{DataSpecificRate: a.DataSpecificRate, TransientRate: a.TransientRate}
	}
}

// Thresholds are the fallback-rate thresholds in force now.
func (p Ports) Thresholds() signals.Thresholds {
	f := p.thresholds()
	if f == nil {
		return signals.DefaultThresholds
	}
	return f().OrDefault()
}

// objects is Store behind the breaker (Store itself without one).
func (p Ports) objects() objectstore.Store { return breaker.Objects(p.Store, p.Breaker) }

func (p Ports) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// HashCheck returns the HashCheck handler, bounded by the policy's job
// deadline.
func (p Ports) HashCheck() *migration.HashCheck {
	store := p.objects()
	f := migration.StoreFingerprinter{Store: store, Threshold: p.Config.FastFingerprintAbove(), Keep: p.Sources}
	h := migration.NewHashCheck(p.Config, store, p.Tracker, f, p.log()).WithMetrics(p.Metrics)
	if p.Policy != nil {
		h.WithJobDeadline(p.Policy).WithContainerLimits(p.Policy)
	}
	return h
}

// Convert returns the Convert handler over engine (internal/gdal) and the
// output validator (internal/validate.Output).
func (p Ports) Convert(engine recipe.Engine, validate migration.OutputValidator) *migration.Convert {
	return migration.NewConvert(p.Config, p.objects(), p.Tracker, engine, validate, p.log()).WithMetrics(p.Metrics).WithSources(p.Sources)
}

// Promote returns the Promote handler.
func (p Ports) Promote() *migration.Promote {
	return migration.NewPromote(p.Config, p.objects(), p.Tracker, p.log()).WithMetrics(p.Metrics).WithFallbackThresholds(p.thresholds()).WithItemLog(p.Items)
}

// Classify returns the Classify handler: the rules of the policy document
// in force, then the built-in ones; it deletes the staged outputs of the
// jobs it routes and writes their quarantine bundles.
func (p Ports) Classify() *migration.Classify {
	c := migration.NewClassify(p.Tracker, nil, p.log()).WithMetrics(p.Metrics).WithFallbackThresholds(p.thresholds()).
		WithStagingCleanup(p.Store, p.Config).WithQuarantine(p.Quarantine)
	if p.Policy != nil {
		c.WithRuleBook(p.Policy)
	}
	return c
}

// ExecutionFailed returns the handler that closes the jobs of executions
// that ended unfinished, sending to deadLetter; stateMachine, when set,
// limits it to that machine's executions. With a nil Store it leaves
// staged outputs to the bucket's lifecycle rule.
func (p Ports) ExecutionFailed(deadLetter queue.Sender, stateMachine string) *migration.ExecutionFailed {
	return migration.NewExecutionFailed(p.Config, p.Store, p.Tracker, deadLetter, p.log()).ForStateMachine(stateMachine).WithQuarantine(p.Quarantine).
		WithMetrics(p.Metrics).WithFallbackThresholds(p.thresholds())
}
