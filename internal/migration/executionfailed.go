package migration

// Size: one handler: an ended execution's event parsed, its job closed and its message sent, read top to bottom.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Execution statuses that end a migrate execution without its job
// necessarily being finished (Step Functions' DescribeExecution statuses).
const (
	ExecutionFailedStatus   = "FAILED"
	ExecutionTimedOutStatus = "TIMED_OUT"
	ExecutionAbortedStatus  = "ABORTED"
)

// Event envelope values of the status change events.
const (
	ExecutionStatusChangeSource     = "aws.states"
	ExecutionStatusChangeDetailType = "Step Functions Execution Status Change"
)

// Errors the migrate definition ends routed executions with: the job's
// failure is already recorded and queued by Classify.
var routedErrors = []string{"Routed.Remediation", "Routed.DeadLetter"}

// ExecutionStatusChange is the EventBridge event Step Functions sends when
// a Standard workflow execution changes status (AWS Step Functions
// Developer Guide, "EventBridge (CloudWatch Events) for Step Functions
// execution status changes"). detail.input is the execution input as a JSON
// string; it is left out (inputDetails.included false) when input and output
// together exceed 248 KB, which the migrate inputs never approach.
type ExecutionStatusChange struct {
	Version    string                `json:"version"`
	ID         string                `json:"id"`
	DetailType string                `json:"detail-type"`
	Source     string                `json:"source"`
	Account    string                `json:"account"`
	Time       time.Time             `json:"time"`
	Region     string                `json:"region"`
	Resources  []string              `json:"resources"`
	Detail     ExecutionStatusDetail `json:"detail"`
}

// ExecutionStatusDetail is the event's detail: the DescribeExecution
// fields. Dates are epoch milliseconds; fields absent for a status are null.
type ExecutionStatusDetail struct {
	ExecutionArn    string                `json:"executionArn"`
	StateMachineArn string                `json:"stateMachineArn"`
	Name            string                `json:"name"`
	Status          string                `json:"status"`
	StartDate       int64                 `json:"startDate"`
	StopDate        *int64                `json:"stopDate"`
	Input           *string               `json:"input"`
	Output          *string               `json:"output"`
	InputDetails    *ExecutionDataDetails `json:"inputDetails"`
	OutputDetails   *ExecutionDataDetails `json:"outputDetails"`
	Error           *string               `json:"error"`
	Cause           *string               `json:"cause"`
}

// ExecutionDataDetails says whether input or output was included.
type ExecutionDataDetails struct {
	Included bool `json:"included"`
}

// EndedExecution is a migrate execution that ended FAILED, TIMED_OUT or
// ABORTED.
type EndedExecution struct {
	Execution string    // the execution ARN: the lease owner of its job
	Status    string    // FAILED, TIMED_OUT or ABORTED
	Error     string    // the execution's error, if any
	Cause     string    // and its cause
	Source    Source    // from the execution input
	JobID     string    // the job the execution claimed, when the caller knows it (local runs)
	StartedAt time.Time // bounds the search for its job; zero: search every record
	StoppedAt time.Time // zero: now
}

// Outcomes of ExecutionFailed.
const (
	// EndedIgnored: not an unfinished migrate execution (another status or
	// state machine, a routed failure, an input without a source).
	EndedIgnored = "ignored"
	// EndedClosed: the job was still PROCESSING/RETRYING under the
	// execution; it is now QUARANTINED, its lease released, its staging
	// deleted and a dead-letter message sent.
	EndedClosed = "closed"
	// EndedRouted: Classify had recorded the job's failure but the execution
	// ended before a queue took the message; a dead-letter message is sent.
	EndedRouted = "routed"
	// EndedUnclaimed: the execution ended before it claimed a job; a
	// record of the source is quarantined and a dead-letter message sent.
	EndedUnclaimed = "unclaimed"
	// EndedAlreadyHandled: a previous delivery of the same event did the
	// work (EventBridge delivers at least once).
	EndedAlreadyHandled = "already_handled"
	// EndedLeftAlone: the job finished or belongs to another execution now;
	// nothing about it is this execution's to change.
	EndedLeftAlone = "left_alone"
)

// ExecutionFailedOutput says what was done.
type ExecutionFailedOutput struct {
	Outcome        string `json:"outcome"`
	Reason         string `json:"reason,omitempty"`
	JobID          string `json:"job_id,omitempty"`
	MessageID      string `json:"message_id,omitempty"`
	StagingDeleted int    `json:"staging_deleted,omitempty"`
	// Hint is the dead-letter message's hint, for the local run report.
	Hint string `json:"hint,omitempty"`
	// Tier is the dead-letter message's tier, for the local run report.
	Tier string `json:"tier,omitempty"`
	// Bundle is the job's quarantine bundle, when one was written.
	Bundle string `json:"bundle,omitempty"`
	// JobStatus and DestKey are set when the job is still this
	// execution's and was left alone because it had finished: an execution
	// interrupted after Promote recorded COMPLETED converted its file, and
	// a local run reports it so (the report agrees with the state store).
	JobStatus string `json:"job_status,omitempty"`
	DestKey   string `json:"dest_key,omitempty"`
}

// clockSkew is the margin below an execution's start date within which its
// job records are looked for.
const clockSkew = 5 * time.Minute

// notePrefixSent marks, in the job's history, that the dead-letter message
// about an ended execution was sent: a second delivery of the same event
// finds it and sends nothing.
const notePrefixSent = "execution ended: dead-letter message "

// ExecutionFailed closes the job of a migrate execution that ended without
// finishing it — timed out, aborted, or failed outside the tasks' Catch —
// so that no job stays PROCESSING until its lease expires: the job becomes
// QUARANTINED (lease released), what it staged is deleted, and a
// dead-letter message in Classify's shape (replayable) carries the
// execution ARN. A job that completed, or that another execution holds, is
// never touched.
type ExecutionFailed struct {
	cfg          Config
	store        objectstore.Store
	tracker      *statestore.Tracker
	deadLetter   queue.Sender
	stateMachine string
	now          func() time.Time
	log          *slog.Logger
	bundles      *quarantine.Writer
	metered
}

// WithQuarantine makes ExecutionFailed write a quarantine bundle for every
// job it sends to the dead-letter queue, as Classify does for the jobs it
// routes.
func (h *ExecutionFailed) WithQuarantine(w *quarantine.Writer) *ExecutionFailed {
	h.bundles = w
	return h
}

// NewExecutionFailed wires the handler. store may be nil (no staging
// cleanup).
func NewExecutionFailed(cfg Config, store objectstore.Store, tracker *statestore.Tracker, deadLetter queue.Sender, log *slog.Logger) *ExecutionFailed {
	if log == nil {
		log = slog.Default()
	}
	return &ExecutionFailed{cfg: cfg.withDefaults(), store: store, tracker: tracker, deadLetter: deadLetter, now: time.Now, log: log}
}

// ForStateMachine makes Handle ignore events of any other state machine
// (the EventBridge rule already filters; this guards a misrouted target).
func (h *ExecutionFailed) ForStateMachine(arn string) *ExecutionFailed {
	h.stateMachine = arn
	return h
}

// Handle is the Lambda handler for the EventBridge rule.
func (h *ExecutionFailed) Handle(ctx context.Context, ev ExecutionStatusChange) (ExecutionFailedOutput, error) {
	d := ev.Detail
	log := h.log.With(slog.String("execution", d.ExecutionArn), slog.String("status", d.Status))
	ended, why := h.fromEvent(ev)
	if why != "" {
		log.InfoContext(ctx, "migration.ExecutionFailed: ignored", slog.String("reason", why))
		return ExecutionFailedOutput{Outcome: EndedIgnored, Reason: why}, nil
	}
	return h.Close(ctx, ended)
}

func (h *ExecutionFailed) fromEvent(ev ExecutionStatusChange) (EndedExecution, string) {
	d := ev.Detail
	switch {
	case ev.Source != ExecutionStatusChangeSource || ev.DetailType != ExecutionStatusChangeDetailType:
		return EndedExecution{}, fmt.Sprintf("not a Step Functions execution status change (%s / %s)", ev.Source, ev.DetailType)
	case h.stateMachine != "" && d.StateMachineArn != h.stateMachine:
		return EndedExecution{}, "execution of another state machine: " + d.StateMachineArn
	case d.ExecutionArn == "":
		return EndedExecution{}, "no executionArn"
	}
	e := EndedExecution{Execution: d.ExecutionArn, Status: d.Status, Error: deref(d.Error), Cause: deref(d.Cause)}
	if d.StartDate > 0 {
		e.StartedAt = time.UnixMilli(d.StartDate).UTC()
	}
	if d.StopDate != nil {
		e.StoppedAt = time.UnixMilli(*d.StopDate).UTC()
	}
	if d.Input == nil {
		return e, "the event carries no input (over 248 KB?); the execution history has it"
	}
	src, ok := SourceFromExecutionInput([]byte(*d.Input))
	if !ok {
		return e, "the execution input names no source object"
	}
	e.Source = src
	return e, ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SourceFromExecutionInput reads the source object out of a migrate
// execution's input, accepting the three shapes the Normalize state does: an
// EventBridge Object Created event, an S3 notification record, a manual
// {bucket, key[, dataset_id][, key_encoding]}.
func SourceFromExecutionInput(input []byte) (Source, bool) {
	var in struct {
		Detail *struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object struct {
				Key string `json:"key"`
			} `json:"object"`
		} `json:"detail"`
		Records []struct {
			S3 struct {
				Bucket struct {
					Name string `json:"name"`
				} `json:"bucket"`
				Object struct {
					Key string `json:"key"`
				} `json:"object"`
			} `json:"s3"`
		} `json:"Records"`
		Bucket      string `json:"bucket"`
		Key         string `json:"key"`
		DatasetID   string `json:"dataset_id"`
		KeyEncoding string `json:"key_encoding"`
	}
	if json.Unmarshal(input, &in) != nil {
		return Source{}, false
	}
	var src Source
	switch {
	case in.Detail != nil && in.Detail.Bucket.Name != "" && in.Detail.Object.Key != "":
		src = Source{Bucket: in.Detail.Bucket.Name, Key: in.Detail.Object.Key, KeyEncoding: "url"}
	case len(in.Records) > 0 && in.Records[0].S3.Bucket.Name != "" && in.Records[0].S3.Object.Key != "":
		src = Source{Bucket: in.Records[0].S3.Bucket.Name, Key: in.Records[0].S3.Object.Key, KeyEncoding: "url"}
	case in.Bucket != "" && in.Key != "":
		src = Source{Bucket: in.Bucket, Key: in.Key, KeyEncoding: in.KeyEncoding, DatasetID: in.DatasetID}
	default:
		return Source{}, false
	}
	return canonical(src), true
}

// canonical decodes the key and fills in the dataset, as HashCheck and
// Classify do.
func canonical(src Source) Source {
	if key, err := src.DecodedKey(); err == nil {
		src.Key = key
	}
	src.KeyEncoding = "plain"
	if src.DatasetID == "" {
		src.DatasetID = src.Bucket
	}
	return src
}

// Close records the end of an execution that did not finish its job. It is
// idempotent: the same ended execution twice sends one message.
func (h *ExecutionFailed) Close(ctx context.Context, e EndedExecution) (ExecutionFailedOutput, error) {
	log := h.log.With(slog.String("execution", e.Execution), slog.String("status", e.Status), slog.String("key", e.Source.Key))
	out, err := h.close(ctx, e)
	if err != nil {
		log.WarnContext(ctx, "executionfailed failed", slog.String("job", out.JobID), slog.String("error", err.Error()))
		return out, err
	}
	log.InfoContext(ctx, "executionfailed", slog.String("outcome", out.Outcome), slog.String("reason", out.Reason),
		slog.String("job", out.JobID), slog.String("message_id", out.MessageID), slog.Int("staging_deleted", out.StagingDeleted))
	return out, nil
}

func (h *ExecutionFailed) close(ctx context.Context, e EndedExecution) (ExecutionFailedOutput, error) {
	switch e.Status {
	case ExecutionFailedStatus, ExecutionTimedOutStatus, ExecutionAbortedStatus:
	default:
		return ExecutionFailedOutput{Outcome: EndedIgnored, Reason: "status " + e.Status + " needs nothing"}, nil
	}
	for _, r := range routedErrors {
		if e.Status == ExecutionFailedStatus && e.Error == r {
			return ExecutionFailedOutput{Outcome: EndedIgnored, Reason: "routed by Classify (" + r + ")"}, nil
		}
	}
	if e.Execution == "" || e.Source.Bucket == "" || e.Source.Key == "" {
		return ExecutionFailedOutput{Outcome: EndedIgnored, Reason: "no execution or source"}, nil
	}
	e.Source = canonical(e.Source)
	if e.StoppedAt.IsZero() {
		e.StoppedAt = h.now().UTC()
	}

	rec, found, err := h.find(ctx, e)
	if err != nil {
		return ExecutionFailedOutput{}, err
	}
	out := ExecutionFailedOutput{JobID: rec.ID}
	switch {
	case !found:
		return h.unclaimed(ctx, e)
	case rec.LeaseOwner != e.Execution:
		out.Outcome, out.Reason = EndedLeftAlone, "the job is held by "+orUnknown(rec.LeaseOwner)+" now"
		return out, nil
	case sentFor(rec, e.Execution):
		out.Outcome = EndedAlreadyHandled
		return out, nil
	case rec.Status == statestore.Processing || rec.Status == statestore.Retrying:
		return h.closeActive(ctx, e, rec)
	case rec.Status == statestore.Quarantined || rec.Status == statestore.Remedial:
		// Classify recorded the failure (or an earlier delivery closed the
		// job but could not send); the message may never have reached a
		// queue.
		out.Outcome = EndedRouted
		return h.send(ctx, e, rec, out)
	default:
		out.Outcome, out.Reason = EndedLeftAlone, "the job is "+string(rec.Status)
		out.JobStatus, out.DestKey = string(rec.Status), rec.DestKey
		return out, nil
	}
}

// find looks the execution's job up: by ID when the caller knows it, else
// by lease owner, active statuses first.
func (h *ExecutionFailed) find(ctx context.Context, e EndedExecution) (statestore.Job, bool, error) {
	if e.JobID != "" {
		rec, err := h.tracker.Get(ctx, e.JobID)
		switch {
		case errors.Is(err, statestore.ErrNotFound):
			return statestore.Job{}, false, nil
		case err != nil:
			return rec, false, fmt.Errorf("migration.ExecutionFailed: %w", err)
		}
		return rec, true, nil
	}
	// Every record the execution wrote was updated after it started; the
	// margin covers clock skew between Step Functions and the functions.
	var since time.Time
	if !e.StartedAt.IsZero() {
		since = e.StartedAt.Add(-clockSkew)
	}
	rec, found, err := h.tracker.FindLeasedBy(ctx, e.Execution, since,
		statestore.Processing, statestore.Retrying, statestore.Quarantined, statestore.Remedial, statestore.Completed)
	if err != nil {
		return rec, false, fmt.Errorf("migration.ExecutionFailed: %w", err)
	}
	return rec, found, nil
}

func (h *ExecutionFailed) closeActive(ctx context.Context, e EndedExecution, rec statestore.Job) (ExecutionFailedOutput, error) {
	out := ExecutionFailedOutput{Outcome: EndedClosed, JobID: rec.ID}
	name, msg := describeEnd(e)
	closed, err := h.tracker.Transition(ctx, statestore.Update{
		ID: rec.ID, Execution: e.Execution, Attempt: rec.Attempts, To: statestore.Quarantined,
		Note: truncate(fmt.Sprintf("execution %s: %s", e.Status, msg), 300),
		Mutate: func(j *statestore.Job) {
			j.Tier, j.ErrorName, j.ErrorCause = string(Match(DefaultRules, name, "").Tier), name, truncate(msg, 2000)
		},
	})
	switch {
	case errors.Is(err, statestore.ErrLeaseLost):
		out.Outcome, out.Reason = EndedLeftAlone, "another execution took the job over"
		return out, nil
	case err != nil:
		return out, fmt.Errorf("migration.ExecutionFailed: quarantine %s: %w", rec.ID, err)
	}
	switch r, err := rollbackPromoted(ctx, h.store, h.cfg, jobOf(closed, h.cfg)); {
	case err != nil:
		h.log.ErrorContext(ctx, "migration.ExecutionFailed: promoted outputs of the closed job not rolled back", slog.String("job", rec.ID), slog.String("error", err.Error()))
	case r > 0:
		h.log.InfoContext(ctx, "migration.ExecutionFailed: promoted outputs of the closed job rolled back", slog.String("job", rec.ID), slog.Int("objects", r))
	}
	n, err := removeStaged(ctx, h.store, h.cfg, jobOf(closed, h.cfg))
	if err != nil {
		h.log.WarnContext(ctx, "migration.ExecutionFailed: staging not cleaned; the staging lifecycle rule will expire it", slog.String("job", rec.ID), slog.String("error", err.Error()))
	}
	out.StagingDeleted = n
	return h.send(ctx, e, closed, out)
}

// unclaimed records a source whose execution ended before it claimed a job,
// under the key Classify uses for failures before the fingerprint.
func (h *ExecutionFailed) unclaimed(ctx context.Context, e EndedExecution) (ExecutionFailedOutput, error) {
	job := unhashedJob(e.Source)
	out := ExecutionFailedOutput{Outcome: EndedUnclaimed, JobID: job.ID}
	if rec, err := h.tracker.Get(ctx, job.ID); err == nil && sentFor(rec, e.Execution) {
		out.Outcome = EndedAlreadyHandled
		return out, nil
	}
	name, msg := describeEnd(e)
	rec, err := h.tracker.Transition(ctx, statestore.Update{
		ID: job.ID, Execution: e.Execution, To: statestore.Quarantined, Seed: stateRecord(job),
		Note: truncate(fmt.Sprintf("execution %s before a claim: %s", e.Status, msg), 300),
		Mutate: func(j *statestore.Job) {
			j.Tier, j.ErrorName, j.ErrorCause = string(Match(DefaultRules, name, "").Tier), name, truncate(msg, 2000)
		},
	})
	if err != nil {
		// Another execution's record of the same source (routed before):
		// the message is still due, the record stays theirs.
		out.Reason = "state store not updated: " + err.Error()
		rec = *stateRecord(job)
	}
	return h.send(ctx, e, rec, out)
}

// send queues the dead-letter message and notes it in the job's history.
func (h *ExecutionFailed) send(ctx context.Context, e EndedExecution, rec statestore.Job, out ExecutionFailedOutput) (ExecutionFailedOutput, error) {
	if h.deadLetter == nil {
		return out, fault.Systemic("migration.ExecutionFailed", errors.New("no dead-letter queue configured"))
	}
	msg := h.message(e, rec)
	if h.bundles != nil {
		name, text := describeEnd(e)
		writeBundle(ctx, h.bundles, h.log, quarantine.Failure{JobID: msg.JobID, DatasetID: msg.DatasetID, Execution: e.Execution,
			SourceBucket: msg.Bucket, SourceKey: msg.Key, SourceSHA256: msg.SourceSHA256, RecipeHash: msg.RecipeHash,
			Recipe: h.cfg.Recipe, FailedAt: msg.FailedAt,
			Error: quarantine.ErrorChain{Error: name, Cause: e.Cause, Message: text, Tier: msg.Tier, Route: msg.Route,
				Attempts: msg.Attempts, Hint: msg.Hint}}, &msg)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return out, fmt.Errorf("migration.ExecutionFailed: %w", err)
	}
	id, err := h.deadLetter.Send(ctx, string(body))
	if err != nil {
		return out, fmt.Errorf("migration.ExecutionFailed: send to the dead-letter queue: %w", err)
	}
	out.MessageID, out.Hint, out.Bundle, out.Tier = id, msg.Hint, msg.Bundle, msg.Tier
	// The job ended, routed: it counts in the fallback rates as Classify's
	// do, unless Classify counted it already (its message was lost).
	if out.Outcome != EndedRouted {
		h.meter().jobEnded(msg.Key, msg.Tier, h.fallbackThresholds())
	}
	if rec.Version > 0 && rec.LeaseOwner == e.Execution {
		if err := h.tracker.Note(ctx, rec.ID, e.Execution, notePrefixSent+id+" sent"); err != nil {
			// The message is out; a second delivery may send another.
			h.log.WarnContext(ctx, "migration.ExecutionFailed: message sent but not noted", slog.String("job", rec.ID), slog.String("error", err.Error()))
		}
	}
	return out, nil
}

// message is a dead-letter message in Classify's shape, so replay treats
// it like any other.
func (h *ExecutionFailed) message(e EndedExecution, rec statestore.Job) RouteMessage {
	name, msg := describeEnd(e)
	rule := Match(DefaultRules, name, "")
	return RouteMessage{
		Version: 1, JobID: rec.ID, DatasetID: rec.DatasetID, Bucket: rec.SourceBucket, Key: rec.SourceKey,
		SourceSHA256: rec.SourceSHA256, RecipeHash: rec.RecipeHash,
		Tier: string(rule.Tier), Route: RouteDeadLetter, Error: name, Message: msg, Cause: e.Cause,
		Attempts: rec.Attempts, Execution: e.Execution, FailedAt: e.StoppedAt,
		Hint: "The execution " + strings.ToLower(strings.ReplaceAll(e.Status, "_", " ")) + " before its job finished " +
			"(execution timeout, a stopped execution or process, or a failure outside the tasks' Catch); " +
			"the job was quarantined and its lease released. See the execution history, then replay.",
		Replay: Source{Bucket: rec.SourceBucket, Key: rec.SourceKey, KeyEncoding: "plain", DatasetID: rec.DatasetID},
	}
}

// describeEnd names the failure: the execution's error, or one for its
// status, and a message.
func describeEnd(e EndedExecution) (name, msg string) {
	name = e.Error
	switch {
	case name != "":
	case e.Status == ExecutionTimedOutStatus:
		name = "States.Timeout"
	case e.Status == ExecutionAbortedStatus:
		name = "States.Aborted"
	default:
		name = "States.Runtime"
	}
	msg = "execution " + e.Status
	if e.Cause != "" {
		msg += ": " + e.Cause
	}
	return name, msg
}

// sentFor reports whether the dead-letter message about execution's end
// was already sent for this record.
func sentFor(rec statestore.Job, execution string) bool {
	for _, tr := range rec.History {
		if tr.Execution == execution && strings.HasPrefix(tr.Note, notePrefixSent) {
			return true
		}
	}
	return false
}

// unhashedJob is the record of a source that failed before HashCheck could
// fingerprint and claim it.
func unhashedJob(src Source) Job {
	return Job{ID: src.DatasetID + ":unhashed:" + src.Bucket + "/" + src.Key, DatasetID: src.DatasetID, SourceBucket: src.Bucket, SourceKey: src.Key}
}

// jobOf rebuilds the parts of a work order that locate its staged outputs.
func jobOf(rec statestore.Job, cfg Config) Job {
	j := Job{ID: rec.ID, DatasetID: rec.DatasetID, SourceBucket: rec.SourceBucket, SourceKey: rec.SourceKey,
		SourceSHA256: rec.SourceSHA256, RecipeHash: rec.RecipeHash, DestBucket: rec.DestBucket, DestKey: rec.DestKey}
	if rec.SourceSHA256 != "" && rec.RecipeHash != "" {
		j.StagingPrefix = cfg.withDefaults().StagingPrefix + stagingDir(rec.SourceSHA256, rec.RecipeHash)
	}
	return j
}
