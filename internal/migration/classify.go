package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/tracing"
)

// Routes.
const (
	RouteRemediation = "remediation"
	RouteDeadLetter  = "dlq"
)

// Rule maps a Step Functions error name to a tier and a route. Name is an
// exact name, a prefix ending in "*", or "*" alone; Code, when set, limits
// the rule to DataErrors of that code.
type Rule struct {
	Name  string
	Code  fault.Code
	Tier  fault.Tier
	Route string
}

// RuleBook gives the rules in force for a dataset when an error is caught,
// tried before the handler's own (DefaultRules): internal/policy reads them
// from a document an operator changes while the pipeline runs.
type RuleBook interface {
	RulesFor(ctx context.Context, datasetID string) []Rule
}

// DefaultRules is the error contract (docs/decisions/0005). Only data faults
// go to remediation: a person can fix the file. Everything else goes to the
// DLQ, from where it is replayed once the system is healthy again.
var DefaultRules = []Rule{
	{Name: "DataError", Tier: fault.TierDataSpecific, Route: RouteRemediation},
	{Name: "TransientError", Tier: fault.TierTransient, Route: RouteDeadLetter}, // retries exhausted
	{Name: "SystemicError", Tier: fault.TierSystemic, Route: RouteDeadLetter},
	{Name: "Lambda.*", Tier: fault.TierTransient, Route: RouteDeadLetter}, // service errors, retries exhausted
	{Name: "States.Timeout", Tier: fault.TierSystemic, Route: RouteDeadLetter},
	{Name: "*", Tier: fault.TierUnknown, Route: RouteDeadLetter},
}

// Match returns the first of rules that matches the error name and data
// error code, or the unknown tier's dead-letter rule when none does.
func Match(rules []Rule, name string, code fault.Code) Rule {
	for _, r := range rules {
		if r.Code != "" && r.Code != code {
			continue
		}
		if r.Name == name || r.Name == "*" || (strings.HasSuffix(r.Name, "*") && strings.HasPrefix(name, strings.TrimSuffix(r.Name, "*"))) {
			return r
		}
	}
	return Rule{Name: "*", Tier: fault.TierUnknown, Route: RouteDeadLetter}
}

// RouteMessage is the queue message: everything needed to understand and
// replay the job without reading logs.
type RouteMessage struct {
	Version      int       `json:"version"`
	JobID        string    `json:"job_id"`
	DatasetID    string    `json:"dataset_id"`
	Bucket       string    `json:"bucket"`
	Key          string    `json:"key"`
	SourceSHA256 string    `json:"source_sha256,omitempty"`
	RecipeHash   string    `json:"recipe_hash,omitempty"`
	Tier         string    `json:"tier"`
	Route        string    `json:"route"`
	Error        string    `json:"error"`
	Code         string    `json:"code,omitempty"`
	Message      string    `json:"message"`
	Cause        string    `json:"cause,omitempty"`
	Attempts     int       `json:"attempts"`
	Execution    string    `json:"execution"`
	FailedAt     time.Time `json:"failed_at"`
	Hint         string    `json:"hint"`
	// Replay is the input that starts the job again once fixed.
	Replay Source `json:"replay"`
	// Bundle is the job's quarantine bundle (internal/quarantine): an
	// s3:// URI, or a directory locally. BundleError says why there is
	// none when writing it failed (the job is routed regardless).
	Bundle      string `json:"bundle,omitempty"`
	BundleError string `json:"bundle_error,omitempty"`
	// TraceID is the execution's trace (X-Ray on AWS, generated per
	// execution locally): its log lines carry the same trace_id.
	TraceID string `json:"trace_id,omitempty"`
}

// Classify turns a caught error into a tier, a route and a message, and
// records the terminal status.
type Classify struct {
	tracker *statestore.Tracker
	rules   []Rule
	now     func() time.Time
	log     *slog.Logger
	// store and cfg, when set, let Classify delete what the routed job
	// staged (WithStagingCleanup).
	store objectstore.Store
	cfg   Config
	metered
	// bundles, when set, writes a quarantine bundle for every routed job
	// (WithQuarantine).
	bundles *quarantine.Writer
	// book, when set, gives rules tried before rules (WithRuleBook).
	book RuleBook
}

// WithRuleBook makes Classify ask b, at every caught error, for the rules
// of the job's dataset, tried before its own: routing then follows b's
// current document with no redeploy.
func (c *Classify) WithRuleBook(b RuleBook) *Classify {
	c.book = b
	return c
}

// WithQuarantine makes Classify write a quarantine bundle for every job it
// routes, and point the queue message at it. A bundle that cannot be
// written is logged and named in the message (bundle_error); the job is
// routed regardless. A job that failed before HashCheck resolved its
// recipe gets the recipe of WithStagingCleanup's Config.
func (c *Classify) WithQuarantine(w *quarantine.Writer) *Classify {
	c.bundles = w
	return c
}

// WithStagingCleanup makes Classify delete the staged outputs of a job it
// routes, once the job's failure is recorded: they will never be promoted.
// A failed delete is logged and changes nothing else (the staging lifecycle
// rule expires what is left).
func (c *Classify) WithStagingCleanup(store objectstore.Store, cfg Config) *Classify {
	c.store, c.cfg = store, cfg
	return c
}

// NewClassify wires the handler; rules nil means DefaultRules.
func NewClassify(tracker *statestore.Tracker, rules []Rule, log *slog.Logger) *Classify {
	if rules == nil {
		rules = DefaultRules
	}
	return &Classify{tracker: tracker, rules: rules, now: time.Now, log: log}
}

// Handle is the Lambda handler.
func (c *Classify) Handle(ctx context.Context, in ClassifyInput) (ClassifyOutput, error) {
	log := logFor(c.log, in.Context, in.Source.Key)
	out, err := c.classify(ctx, in)
	c.meter().classify(in, out, err)
	if err == nil && out.Tier != "" {
		c.meter().jobEnded(out.Message.Key, out.Tier, c.fallbackThresholds())
	}
	logOutcome(ctx, log, "classify", err, slog.String("job", out.Message.JobID), slog.String("tier", out.Tier),
		slog.String("route", out.Route), slog.String("caught", in.Error.Error), slog.String("code", out.Message.Code))
	return out, boundary(err, in.Context)
}

// lambdaCause is the Cause Step Functions records for a function error.
type lambdaCause struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType"`
}

// Describe reads a caught error: its message (from the Lambda error JSON in
// Cause, or Cause itself), the data error code and the attempts made.
func Describe(e CaughtError) (message string, code fault.Code, attempts int) {
	message = e.Cause
	var lc lambdaCause
	if json.Unmarshal([]byte(e.Cause), &lc) == nil && lc.ErrorMessage != "" {
		message = lc.ErrorMessage
	}
	message, attempts = fault.ParseAttempt(message)
	if e.Error == "DataError" {
		if code = fault.ParseCode(message); code != "" {
			message = strings.TrimPrefix(message, string(code)+": ")
		}
	}
	return message, code, attempts
}

func (c *Classify) classify(ctx context.Context, in ClassifyInput) (ClassifyOutput, error) {
	msg, code, attempts := Describe(in.Error)
	src := in.Source
	if key, err := src.DecodedKey(); err == nil {
		src.Key = key
	}
	src.KeyEncoding = "plain"
	job := in.Job
	if job.ID == "" { // failed before HashCheck could fingerprint and claim
		if src.DatasetID == "" {
			src.DatasetID = src.Bucket
		}
		job = unhashedJob(src)
	}
	rules := c.rules
	if c.book != nil {
		rules = append(slices.Clip(c.book.RulesFor(ctx, job.DatasetID)), c.rules...) // never into the book's array
	}
	rule := Match(rules, in.Error.Error, code)
	out := ClassifyOutput{Tier: string(rule.Tier), Route: rule.Route, Message: RouteMessage{
		Version: 1, JobID: job.ID, DatasetID: job.DatasetID, Bucket: job.SourceBucket, Key: job.SourceKey,
		SourceSHA256: job.SourceSHA256, RecipeHash: job.RecipeHash,
		Tier: string(rule.Tier), Route: rule.Route, Error: in.Error.Error, Code: string(code), Message: msg,
		Cause: in.Error.Cause, Attempts: attempts, Execution: in.Context.Execution, FailedAt: c.now().UTC(),
		Hint:    hint(rule.Tier, code, in.Error.Error),
		Replay:  Source{Bucket: job.SourceBucket, Key: job.SourceKey, KeyEncoding: "plain", DatasetID: job.DatasetID},
		TraceID: tracing.ID(ctx),
	}}
	to := statestore.Quarantined
	if rule.Route == RouteRemediation {
		to = statestore.Remedial
	}
	_, err := c.tracker.Transition(ctx, statestore.Update{
		ID: job.ID, Execution: in.Context.Execution, Attempt: attempts, To: to,
		Note: fmt.Sprintf("%s: %s", in.Error.Error, truncate(msg, 300)),
		Seed: stateRecord(job),
		Mutate: func(j *statestore.Job) {
			cause := msg
			if code != "" {
				cause = string(code) + ": " + msg
			}
			j.Tier, j.ErrorName, j.ErrorCause = string(rule.Tier), in.Error.Error, truncate(cause, 2000)
		},
	})
	if err != nil && (errors.Is(err, statestore.ErrLeaseLost) || strings.Contains(err.Error(), "is not allowed")) {
		// Another execution owns the job now (or finished it); routing this
		// execution's failure is still right, overwriting theirs is not.
		out.Message.Hint += " (state store not updated: " + err.Error() + ")"
		c.quarantine(ctx, job, in, &out.Message)
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("migration.Classify: record %s: %w", to, err)
	}
	c.quarantine(ctx, job, in, &out.Message)
	// Only the job's holder gets here (the returns above): another
	// execution that owns the job now may be staging the same keys.
	c.cleanStaging(ctx, job)
	return out, nil
}

// quarantine writes the routed job's bundle and points m at it.
func (c *Classify) quarantine(ctx context.Context, job Job, in ClassifyInput, m *RouteMessage) {
	if c.bundles == nil {
		return
	}
	rec := job.Recipe
	if reflect.ValueOf(rec).IsZero() {
		rec = c.cfg.Recipe // failed before HashCheck resolved the job's
	}
	var lc lambdaCause
	_ = json.Unmarshal([]byte(in.Error.Cause), &lc)
	// Logged before the bundle is written, so that its logs end with the
	// routing.
	logFor(c.log, in.Context, m.Key).InfoContext(ctx, "classify: routing", slog.String("job", m.JobID),
		slog.String("tier", m.Tier), slog.String("route", m.Route), slog.String("caught", m.Error), slog.String("code", m.Code))
	f := quarantine.Failure{JobID: m.JobID, DatasetID: m.DatasetID, Execution: in.Context.Execution,
		SourceBucket: m.Bucket, SourceKey: m.Key, SourceSHA256: m.SourceSHA256, RecipeHash: m.RecipeHash,
		Recipe: rec, FailedAt: m.FailedAt,
		Error: quarantine.ErrorChain{Error: m.Error, Cause: m.Cause, Type: lc.ErrorType, Code: m.Code, Message: m.Message,
			Tier: m.Tier, Route: m.Route, Attempts: m.Attempts, Hint: m.Hint}}
	writeBundle(ctx, c.bundles, c.log, f, m)
}

// writeBundle writes f's bundle and records where it is, or why it is not,
// in m.
func writeBundle(ctx context.Context, w *quarantine.Writer, log *slog.Logger, f quarantine.Failure, m *RouteMessage) {
	ref, err := w.Write(ctx, f)
	if err != nil {
		if log == nil {
			log = slog.Default()
		}
		m.BundleError = truncate(err.Error(), 500)
		log.WarnContext(ctx, "quarantine bundle not written; the job is routed without it", slog.String("job", f.JobID),
			slog.String("execution", f.Execution), slog.String("error", err.Error()))
		return
	}
	m.Bundle = ref.Location
}

func (c *Classify) cleanStaging(ctx context.Context, job Job) {
	log := c.log
	if log == nil {
		log = slog.Default()
	}
	// What Promote published goes first: the job leaves for a queue with
	// none of its outputs at final keys.
	switch r, err := rollbackPromoted(ctx, c.store, c.cfg, job); {
	case err != nil:
		log.ErrorContext(ctx, "classify: promoted outputs of the routed job not rolled back", slog.String("job", job.ID), slog.String("error", err.Error()))
	case r > 0:
		log.InfoContext(ctx, "classify: promoted outputs of the routed job rolled back", slog.String("job", job.ID), slog.Int("objects", r))
	}
	n, err := removeStaged(ctx, c.store, c.cfg, job)
	switch {
	case err != nil:
		log.WarnContext(ctx, "classify: staging not cleaned; the staging lifecycle rule will expire it", slog.String("job", job.ID), slog.String("error", err.Error()))
	case n > 0:
		log.InfoContext(ctx, "classify: staged outputs of the routed job deleted", slog.String("job", job.ID), slog.Int("objects", n))
	}
}

// hint tells the person reading the queue what to do next.
func hint(tier fault.Tier, code fault.Code, name string) string {
	switch code {
	case fault.MissingCRS:
		return "The source has no coordinate reference system. Give it one without editing it: a recipe rule matching it with assign_crs: \"EPSG:4326\", or a sidecar (FILE.aux.xml with <PAMDataset><SRS>EPSG:4326</SRS></PAMDataset> beside a raster, a .prj beside a Shapefile); then run again or replay. Or set it in the file (gdal_edit.py -a_srs EPSG:4326 FILE) and replace it."
	case fault.InvalidCRS:
		return "The CRS cannot be interpreted by PROJ. Replace it with a known EPSG code and re-upload."
	case fault.UnsupportedFormat:
		return "The format is not on the allow-list. Convert it to a supported format (GeoTIFF, GeoPackage, Shapefile, …) first."
	case fault.CorruptSource:
		return "The file cannot be read (truncated or damaged). Re-export or re-upload it from the original."
	case fault.InvalidGeometry:
		return "Geometries are invalid under the strict policy. Repair them (ST_MakeValid / ogr2ogr -makevalid) or use the repair policy."
	case fault.EmptyDataset:
		return "The source holds no features or pixels. Check the export."
	case fault.BudgetExceeded:
		return "The source exceeds the size, pixel or feature budget. Split it or raise the budget in the recipe."
	case fault.UnsafeSource:
		return "The file references other files or URLs (VRT, remote paths), which are refused for safety. Materialize it first (gdal_translate)."
	case fault.SourceNotFound:
		return "The source object no longer exists; nothing to do unless it was deleted by mistake."
	case fault.SourceChanged:
		return "The source was overwritten during migration; its new version is migrated on its own."
	case fault.DestinationTaken:
		return "Two or more sources map to the same destination key (the message names them all). Rename all but one, or leave all but one out with the recipe file's exclude (for two vector sources a recipe rule may give one another vector format), then replay."
	case fault.CurveGeometry:
		return "The layer holds curve geometries (CircularString, CurvePolygon, …), which GeoParquet does not allow. Choose vector_format: FlatGeobuf in the recipe (it keeps curves), or curves: linearize to approximate them by line segments, and replay."
	case fault.NoGeometry:
		return "The table has no geometry column. Set attribute_tables: parquet in the recipe to write it as plain Parquet, or add a geometry and re-upload."
	case fault.DriverUnavailable:
		return "GDAL here lacks the driver or format version this file needs. Convert it with a GDAL that has it, or re-export it in a supported format."
	case fault.InvalidKey:
		return "The object key has \".\", \"..\" or empty path segments, a leading \"/\" or control characters, which could place an output outside the destination prefix. Rename the object (copy it to a plain key and delete the old one); the new key is migrated by its own event."
	}
	switch tier {
	case fault.TierTransient:
		return "Transient failures outlasted the retries (throttling or an outage). Replay from the DLQ once the service is healthy."
	case fault.TierSystemic:
		return "The worker or its environment failed (" + name + "): check permissions, buckets, memory and disk, then replay."
	}
	return "Unclassified failure: inspect the cause and the execution history, then replay."
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
