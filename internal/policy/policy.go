// Package policy is the run-time policy document: what an operator changes
// while the pipeline runs, with no redeploy and no restart. It holds the
// classification rules (error name and data error code to tier and route,
// with per-dataset overrides), the fallback-rate alarm thresholds, the job
// deadline and the backfill's concurrency and tolerated failure percentage.
//
// A document is JSON, validated against policy-schema.json (embedded, the
// one definition of the format) before anything reads it. A Source re-reads
// it from where it lives (a file locally, an SSM parameter on AWS through
// internal/policy/ssmpolicy) and keeps the last good one when a new one is
// refused. Retry numbers are not here: Step Functions reads them from the
// state machine definition.
package policy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// Schema is the JSON Schema of a policy document.
//
//go:embed policy-schema.json
var Schema []byte

// MaxBytes bounds a document: an SSM parameter holds at most 4 KB
// (standard tier) or 8 KB (advanced),
// https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
const MaxBytes = 8192

// Defaults, the values a document that leaves a member out gets.
const (
	// DefaultJobDeadline is the migrate state machine's TimeoutSeconds, the
	// ceiling AWS enforces whatever the document says.
	DefaultJobDeadline = 7200 * time.Second
	// DefaultMaxConcurrency and DefaultToleratedFailurePercentage are what
	// statemachine/backfill.asl.json uses when its input has neither.
	DefaultMaxConcurrency             = 100
	DefaultToleratedFailurePercentage = 100
)

// Document is one policy document.
type Document struct {
	Version        int            `json:"version"`
	Classification Classification `json:"classification"`
	Alarms         Alarms         `json:"alarms"`
	// JobDeadlineSeconds: an execution older than this is not started again
	// by HashCheck (after a breaker wait, say): it goes to the dead-letter
	// queue.
	JobDeadlineSeconds int      `json:"job_deadline_seconds"`
	Backfill           Backfill `json:"backfill"`
	// LargeObjects, optional, replaces the configured limits above which
	// HashCheck sends a job to the container engine (ChooseEngine).
	LargeObjects *LargeObjects `json:"large_objects,omitempty"`
}

// Classification are rules tried, first match wins, before the built-in
// contract (migration.DefaultRules): a dataset's own, then Rules.
type Classification struct {
	Rules    []Rule            `json:"rules,omitempty"`
	Datasets map[string][]Rule `json:"datasets,omitempty"`
}

// Rule maps an error name (exact, a prefix ending in "*", or "*") and,
// for DataError, a code to a tier and a route.
type Rule struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
	Tier  string `json:"tier"`
	Route string `json:"route"`
}

// Alarms are the fallback-rate alarm thresholds, fractions of the jobs
// finished.
type Alarms struct {
	DataSpecificRate float64 `json:"data_specific_rate"`
	TransientRate    float64 `json:"transient_rate"`
}

// Backfill feeds the backfill's MaxConcurrencyPath and
// ToleratedFailurePercentagePath. A Distributed Map runs at most 10,000
// child executions at once
// (https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html);
// the percentage is 0 to 100
// (https://docs.aws.amazon.com/step-functions/latest/apireference/API_UpdateMapRun.html).
type Backfill struct {
	MaxConcurrency             int `json:"max_concurrency"`
	ToleratedFailurePercentage int `json:"tolerated_failure_percentage"`
}

// LargeObjects are the thresholds above which a source takes the
// large-object route (0: the configured limit stays).
type LargeObjects struct {
	Bytes int64 `json:"bytes,omitempty"`
	// Pixels counts width x height x bands (migration.Work.PixelsBands).
	Pixels   int64 `json:"pixels,omitempty"`
	Features int64 `json:"features,omitempty"`
}

// Default is the document in force when none is given: the built-in rules
// only, and the defaults above.
func Default() *Document {
	return &Document{
		Version:            1,
		Alarms:             Alarms{DataSpecificRate: signals.DefaultThresholds.DataSpecificRate, TransientRate: signals.DefaultThresholds.TransientRate},
		JobDeadlineSeconds: int(DefaultJobDeadline / time.Second),
		Backfill:           Backfill{MaxConcurrency: DefaultMaxConcurrency, ToleratedFailurePercentage: DefaultToleratedFailurePercentage},
	}
}

// JobDeadline is JobDeadlineSeconds as a duration.
func (d *Document) JobDeadline() time.Duration {
	return time.Duration(d.JobDeadlineSeconds) * time.Second
}

// RulesFor returns the document's rules for datasetID, in the order they
// are tried: the dataset's own, then the general ones. migration.Classify
// tries migration.DefaultRules after them.
func (d *Document) RulesFor(datasetID string) []migration.Rule {
	own := d.Classification.Datasets[datasetID]
	out := make([]migration.Rule, 0, len(own)+len(d.Classification.Rules))
	for _, r := range append(append([]Rule(nil), own...), d.Classification.Rules...) {
		out = append(out, migration.Rule{Name: r.Error, Code: fault.Code(r.Code), Tier: fault.Tier(r.Tier), Route: r.Route})
	}
	return out
}

// JSON is the document as it would be stored (the default SSM value).
func (d *Document) JSON() []byte {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil { // cannot happen: strings, numbers, maps of strings
		panic(fmt.Sprintf("policy.Document.JSON: %v", err))
	}
	return b
}

// InvalidError is a document refused by validation; Problems say where
// and why, one per line of Error.
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	return "policy document refused: " + strings.Join(e.Problems, "; ")
}

var (
	compileOnce sync.Once
	compiled    *jsonschema.Schema
	compileErr  error
)

func schema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
		if err != nil {
			compileErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err = c.AddResource("policy-schema.json", doc); err != nil {
			compileErr = err
			return
		}
		compiled, compileErr = c.Compile("policy-schema.json")
	})
	return compiled, compileErr
}

// Parse validates data against the schema and returns the document, with
// the defaults in the members it leaves out. A document the schema refuses
// is an *InvalidError naming each problem by its JSON pointer.
func Parse(data []byte) (*Document, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("policy.Parse: %w", &InvalidError{Problems: []string{fmt.Sprintf("%d bytes, more than the %d a parameter holds", len(data), MaxBytes)}})
	}
	sch, err := schema()
	if err != nil {
		return nil, fmt.Errorf("policy.Parse: the embedded schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("policy.Parse: %w", &InvalidError{Problems: []string{"not JSON: " + err.Error()}})
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, fmt.Errorf("policy.Parse: %w", err)
		}
		return nil, fmt.Errorf("policy.Parse: %w", &InvalidError{Problems: problems(ve)})
	}
	d := Default()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // the schema has refused them already
	if err := dec.Decode(d); err != nil {
		return nil, fmt.Errorf("policy.Parse: %w", &InvalidError{Problems: []string{err.Error()}})
	}
	return d, nil
}

// problems lists the leaves of a validation error as
// "/json/pointer: what is wrong" ("(root)" for the document itself).
func problems(ve *jsonschema.ValidationError) []string {
	var out []string
	// The library's rendering puts one "- at '/pointer': message" line per
	// cause under a header naming the schema; the lines are the leaves.
	for _, line := range strings.Split(ve.Error(), "\n")[1:] {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "- ")
		if at, rest, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(at, "at '") {
			ptr := strings.TrimSuffix(strings.TrimPrefix(at, "at '"), "'")
			if ptr == "" {
				ptr = "(root)"
			}
			line = ptr + ": " + rest
		}
		if line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		out = []string{ve.Error()}
	}
	return out
}
