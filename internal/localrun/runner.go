package localrun

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/tracing"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Outcome statuses: every input ends in exactly one.
const (
	StatusCompleted   = "completed"
	StatusSkipped     = "skipped"
	StatusRemediation = "remediation"
	StatusDeadLetter  = "dlq"
	// StatusFailed: the execution itself failed without routing the job
	// (unrecognized input, routing failure, job deadline). The execution
	// history is the record.
	StatusFailed = "failed"
	// StatusIgnored: not a geospatial file (README.txt, Thumbs.db …):
	// not converted, not routed, no state record.
	StatusIgnored = "ignored"
	// StatusNotStarted: the run stopped before this input's execution
	// began (a Halt: disk full, memory exhausted); Reason says why. Nothing
	// about the input was recorded; the next run takes it.
	StatusNotStarted = "not_started"
)

// Outcome is what became of one input.
type Outcome struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	Execution string `json:"execution"`
	// TraceID is the execution's trace id (internal/tracing): every log
	// line of its handlers and its queue message carry it.
	TraceID string `json:"trace_id,omitempty"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	JobID   string `json:"job_id,omitempty"`
	// RecipeHash is the recipe HashCheck resolved for the file (the
	// run-wide recipe refined by the recipe file's rules for its key): the
	// hash in JobID, and what `geomigrate plan` predicts per file.
	RecipeHash string `json:"recipe_hash,omitempty"`
	// StagingPrefix is the job's staging prefix in the destination bucket
	// (not reported): what the end-of-run sweep of the AWS backend clears
	// for jobs that ended migrated.
	StagingPrefix string `json:"-"`
	Tier          string `json:"tier,omitempty"`
	Error         string `json:"error,omitempty"`
	Code          string `json:"code,omitempty"`
	Message       string `json:"message,omitempty"`
	Attempts      int    `json:"attempts,omitempty"`
	Retries       int    `json:"retries"` // retries the state machine scheduled
	// Engine is where the file was converted: "lambda" (the Convert
	// task) or "container" (ConvertInContainer, the large-object path);
	// empty when no conversion was started.
	Engine   string   `json:"engine,omitempty"`
	BytesIn  int64    `json:"bytes_in"`
	BytesOut int64    `json:"bytes_out"`
	Outputs  []string `json:"outputs,omitempty"`
	// Warnings are the conversion's non-fatal messages ("promoted to
	// multi", "written as text", "M values dropped" …), carried from the
	// engine through Convert's and Promote's outputs.
	Warnings []string `json:"warnings,omitempty"`
	// Hint is what to do about a routed file (remediation, dlq): the hint
	// its queue message carries.
	Hint string `json:"hint,omitempty"`
	// Bundle is where the quarantine bundle of a routed file is (its
	// queue message's bundle): the input, error chain, logs, versions,
	// recipe and reproduction command.
	Bundle string `json:"bundle,omitempty"`
	// Fidelity is, for each of Outputs in order, what Convert proved
	// equal between it and the source before staging it.
	Fidelity []*recipe.Fidelity `json:"fidelity,omitempty"`
	// STACItems are, for each of Outputs in order, the key of its STAC
	// Item (beside it: OUTPUT.stac.json).
	STACItems []string      `json:"stac_items,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	History   []asl.Event   `json:"-"`
}

// Runner runs the migrate state machine over many inputs, Workers at a time.
type Runner struct {
	Executor *asl.Executor
	Workers  int
	// OnDone is called once per input as it finishes (progress display).
	OnDone func(Outcome)
	// Ended, if set, closes the job of an execution that ended without
	// finishing it (timed out, aborted, failed outside Catch), as the
	// executionfailed function does on AWS: the job is quarantined, its
	// lease released and a dead-letter message sent (migration.ExecutionFailed.Close).
	Ended func(ctx context.Context, e migration.EndedExecution) (migration.ExecutionFailedOutput, error)
	// Release, used when Ended is nil, only gives up the lease of such a
	// job, so that the next run takes it over at once.
	Release func(ctx context.Context, jobID, execution string) error
	// Halt, if set, stops the run at the first exhaustion of disk or
	// memory (its Observe must be a history observer of Executor): no
	// further execution starts, running ones end in their own recorded
	// state, inputs not started are reported StatusNotStarted.
	Halt *Halt
	// Grace is how long running executions may go on once Run's context is
	// cancelled (SIGINT/SIGTERM): no new input starts, and those running
	// finish within Grace or are then aborted and closed (rolled back:
	// quarantined, staging deleted, dead-letter message). Zero aborts them
	// at once.
	Grace time.Duration
	// Abort, when closed, aborts the running executions without waiting
	// for the rest of Grace (a second signal).
	Abort <-chan struct{}
	// DropHistory leaves Outcome.History empty once the outcome is read
	// from it: a run of many files then holds a few hundred bytes per
	// file instead of each execution's every event (tens of kilobytes).
	DropHistory bool
}

// Run executes one state machine execution per input and returns the
// outcomes in input order. ctx cancellation stops new executions; running
// ones see a context cancelled Grace later (or when Abort closes).
func (r *Runner) Run(ctx context.Context, inputs []migration.Source) []Outcome {
	out := make([]Outcome, len(inputs))
	r.run(ctx, inputs, func(i int, o Outcome) { out[i] = o })
	return out
}

// Spool is Run with each outcome put into outcomes (an ordered spool of at
// least len(inputs)) at its input's index as it ends, instead of held: a
// run of many files keeps no outcome in memory.
func (r *Runner) Spool(ctx context.Context, inputs []migration.Source, outcomes *Outcomes) {
	r.run(ctx, inputs, outcomes.Put)
}

// run executes the inputs and gives each outcome to put, once per index.
func (r *Runner) run(ctx context.Context, inputs []migration.Source, put func(int, Outcome)) {
	workers := max(r.Workers, 1)
	next := make(chan int)
	execCtx, stop := r.drainContext(ctx)
	defer stop()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var o Outcome
				if reason := r.Halt.Reason(); reason != "" {
					o = notStarted(inputs[i], reason)
				} else {
					o = r.runOne(execCtx, inputs[i])
					if r.DropHistory {
						o.History = nil
					}
				}
				put(i, o)
				if r.OnDone != nil {
					r.OnDone(o)
				}
			}
		}()
	}
	cancelled := func(from int) {
		for j := from; j < len(inputs); j++ {
			if reason := r.Halt.Reason(); reason != "" {
				put(j, notStarted(inputs[j], reason))
				continue
			}
			put(j, Outcome{Bucket: inputs[j].Bucket, Key: inputs[j].Key, Status: StatusFailed, Error: "Cancelled", Message: "not started: " + ctx.Err().Error()})
		}
	}
feed:
	for i := range inputs {
		if ctx.Err() != nil { // a select with both cases ready picks at random
			cancelled(i)
			break
		}
		select {
		case next <- i:
		case <-r.Halt.Done():
			for j := i; j < len(inputs); j++ {
				put(j, notStarted(inputs[j], r.Halt.Reason()))
			}
			break feed
		case <-ctx.Done():
			cancelled(i)
			break feed
		}
	}
	close(next)
	wg.Wait()
}

func notStarted(src migration.Source, reason string) Outcome {
	return Outcome{Bucket: src.Bucket, Key: src.Key, Status: StatusNotStarted, Reason: "run stopped: " + reason}
}

// drainContext is the context the executions run under: ctx's values, but
// cancelled only Grace after ctx is (or when Abort closes), so that a
// signal lets running files finish instead of abandoning them mid-step.
func (r *Runner) drainContext(ctx context.Context) (context.Context, context.CancelFunc) {
	execCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		if r.Grace > 0 {
			t := time.NewTimer(r.Grace)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Abort:
			case <-done:
				return
			}
		}
		cancel(context.Cause(ctx))
	}()
	return execCtx, func() {
		close(done)
		cancel(nil)
	}
}

func (r *Runner) runOne(ctx context.Context, src migration.Source) Outcome {
	start := time.Now()
	o := Outcome{Bucket: src.Bucket, Key: src.Key, Execution: ExecutionName(src.Key), TraceID: tracing.NewID(start)}
	ctx = tracing.WithID(ctx, o.TraceID)
	input, _ := json.Marshal(src)
	res, err := r.Executor.Run(ctx, o.Execution, input)
	o.Duration = time.Since(start)
	if res == nil {
		o.Status, o.Error, o.Message = StatusFailed, "Executor", err.Error()
		return o
	}
	Summarize(res, &o)
	if o.Status == StatusFailed && r.Ended != nil {
		closeEnded(ctx, r.Ended, src, res, &o)
		return o
	}
	if o.Status == StatusFailed && o.JobID != "" && r.Release != nil {
		// The context may be the cancelled one: release regardless.
		if rerr := r.Release(context.WithoutCancel(ctx), o.JobID, res.ExecutionArn); rerr != nil {
			o.Message += " (lease not released: " + rerr.Error() + ")"
		}
	}
	return o
}

// closeEnded records the end of an execution that left its job unfinished;
// once a dead-letter message about it is sent, the input's outcome is dlq.
func closeEnded(ctx context.Context, ended func(context.Context, migration.EndedExecution) (migration.ExecutionFailedOutput, error),
	src migration.Source, res *asl.Result, o *Outcome) {
	// The context may be the cancelled one (Ctrl-C): close regardless.
	out, err := ended(context.WithoutCancel(ctx), migration.EndedExecution{
		Execution: res.ExecutionArn, Status: res.Status, Error: res.Error, Cause: res.Cause,
		Source: src, JobID: o.JobID, StartedAt: res.StartTime, StoppedAt: res.StopTime,
	})
	switch {
	case err != nil:
		o.Message += " (job not closed: " + err.Error() + ")"
	case out.JobStatus == string(statestore.Completed):
		// Interrupted after Promote recorded the job COMPLETED: the file
		// was converted and promoted, and the report says so, as the state
		// store does.
		o.Status, o.Error, o.JobID = StatusCompleted, "", out.JobID
		o.Message = "completed before the execution was " + strings.ToLower(res.Status)
		if out.DestKey != "" && len(o.Outputs) == 0 {
			o.Outputs = []string{out.DestKey}
		}
	case out.MessageID != "":
		o.Status, o.JobID, o.Hint, o.Bundle, o.Tier = StatusDeadLetter, out.JobID, out.Hint, out.Bundle, out.Tier
		o.Message += " (job " + out.Outcome + "; dead-letter message " + out.MessageID + ")"
	}
}

// Summarize reads an execution result into an outcome.
func Summarize(res *asl.Result, o *Outcome) {
	o.History = res.History
	for _, ev := range res.History {
		switch {
		case ev.Type == "RetryScheduled":
			o.Retries++
		case ev.Type == asl.EventStateEntered && ev.State == "Convert":
			o.Engine = migration.EngineLambda
		case ev.Type == asl.EventStateEntered && ev.State == "ConvertInContainer":
			o.Engine = migration.EngineContainer
		}
	}
	if res.Status == "SUCCEEDED" {
		var done struct {
			Status string               `json:"status"`
			Reason string               `json:"reason"`
			Job    migration.Job        `json:"job"`
			Out    []migration.Artifact `json:"outputs"`
			// Size is the outputs' total, also when their list travelled
			// through staging and is not in the output (docs/decisions/0101).
			Size int64 `json:"outputs_size"`
		}
		_ = json.Unmarshal(res.Output, &done)
		o.Status, o.Reason, o.JobID, o.RecipeHash = done.Status, done.Reason, done.Job.ID, done.Job.RecipeHash
		o.StagingPrefix = done.Job.StagingPrefix
		if o.Status == StatusCompleted {
			o.BytesIn = done.Job.SourceSize
		}
		if o.Status == StatusSkipped && (o.Reason == migration.ReasonNotGeospatial || o.Reason == migration.ReasonExcluded) {
			o.Status = StatusIgnored
		}
		for _, a := range done.Out {
			o.BytesOut += a.Size
			o.Outputs = append(o.Outputs, a.DestKey)
			for _, w := range a.Warnings {
				if len(done.Out) > 1 {
					w = a.DestKey + ": " + w
				}
				o.Warnings = append(o.Warnings, w)
			}
			o.Fidelity = append(o.Fidelity, a.Fidelity)
			if a.Item != nil {
				o.STACItems = append(o.STACItems, a.Item.DestKey)
			}
		}
		if len(done.Out) == 0 {
			o.BytesOut = done.Size
		}
		if o.Status != StatusCompleted && o.Status != StatusSkipped && o.Status != StatusIgnored {
			o.Status, o.Message = StatusFailed, "unexpected output: "+string(res.Output)
		}
		return
	}
	switch res.Error {
	case statemachine.ErrorRoutedRemediation:
		o.Status = StatusRemediation
	case statemachine.ErrorRoutedDeadLetter:
		o.Status = StatusDeadLetter
	default:
		o.Status, o.Error, o.Message = StatusFailed, res.Error, res.Cause
		if res.Status == asl.StatusAborted {
			o.Error, o.Message = "Aborted", "the run was interrupted"
		}
		job := claimedJob(res.History)
		o.JobID, o.RecipeHash = job.ID, job.RecipeHash
		return
	}
	// The routed message is Classify's output (or ClassifyFailed's).
	for i := len(res.History) - 1; i >= 0; i-- {
		ev := res.History[i]
		if ev.Type != "StateExited" || (ev.State != "Route" && ev.State != "ClassifyFailed") {
			continue
		}
		var st struct {
			Classified struct {
				Tier    string                 `json:"tier"`
				Message migration.RouteMessage `json:"message"`
			} `json:"classified"`
		}
		if json.Unmarshal(ev.Output, &st) == nil {
			m := st.Classified.Message
			o.Tier, o.JobID, o.Error, o.Code, o.Message, o.Attempts = st.Classified.Tier, m.JobID, m.Error, m.Code, m.Message, m.Attempts
			o.RecipeHash = m.RecipeHash
			o.Hint, o.Bundle = m.Hint, m.Bundle
		}
		break
	}
}

// claimedJob is the job HashCheck claimed in an execution, if it got that
// far.
func claimedJob(history []asl.Event) migration.Job {
	for _, ev := range history {
		if ev.Type != "StateExited" || ev.State != "HashCheck" {
			continue
		}
		var out struct {
			Decision string        `json:"decision"`
			Job      migration.Job `json:"job"`
		}
		if json.Unmarshal(ev.Output, &out) == nil && out.Decision == migration.DecisionConvert {
			return out.Job
		}
	}
	return migration.Job{}
}
