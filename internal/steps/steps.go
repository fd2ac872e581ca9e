// Package steps builds the handlers of the migrate state machine's steps
// (HashCheck, Convert, Promote, Classify) and of the executionfailed
// function over the ports of one backend: the one place they are wired.
// The Lambda mains build them over the AWS adapters (internal/awsapp), the
// CLI over the same adapters or the embedded local ones (internal/localrun);
// engine and output validator are passed in, so only Convert links GDAL.
package steps

import (
	"log/slog"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/recipe"
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
}

// objects is Store behind the breaker (Store itself without one).
func (p Ports) objects() objectstore.Store { return breaker.Objects(p.Store, p.Breaker) }

func (p Ports) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// HashCheck returns the HashCheck handler.
func (p Ports) HashCheck() *migration.HashCheck {
	store := p.objects()
	f := migration.StoreFingerprinter{Store: store, Threshold: p.Config.FastFingerprintAbove()}
	return migration.NewHashCheck(p.Config, store, p.Tracker, f, p.log()).WithMetrics(p.Metrics)
}

// Convert returns the Convert handler over engine (internal/gdal) and the
// output validator (internal/validate.Output).
func (p Ports) Convert(engine recipe.Engine, validate migration.OutputValidator) *migration.Convert {
	return migration.NewConvert(p.Config, p.objects(), p.Tracker, engine, validate, p.log()).WithMetrics(p.Metrics)
}

// Promote returns the Promote handler.
func (p Ports) Promote() *migration.Promote {
	return migration.NewPromote(p.Config, p.objects(), p.Tracker, p.log()).WithMetrics(p.Metrics)
}

// Classify returns the Classify handler with the default rules; it deletes
// the staged outputs of the jobs it routes and writes their quarantine
// bundles.
func (p Ports) Classify() *migration.Classify {
	return migration.NewClassify(p.Tracker, nil, p.log()).WithMetrics(p.Metrics).WithStagingCleanup(p.Store, p.Config).WithQuarantine(p.Quarantine)
}

// ExecutionFailed returns the handler that closes the jobs of executions
// that ended unfinished, sending to deadLetter; stateMachine, when set,
// limits it to that machine's executions. With a nil Store it leaves
// staged outputs to the bucket's lifecycle rule.
func (p Ports) ExecutionFailed(deadLetter queue.Sender, stateMachine string) *migration.ExecutionFailed {
	return migration.NewExecutionFailed(p.Config, p.Store, p.Tracker, deadLetter, p.log()).ForStateMachine(stateMachine).WithQuarantine(p.Quarantine)
}
