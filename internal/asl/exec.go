package asl

// Size: one interpreter: the executor's options and its run loop over states read top to bottom.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"
)

// Execution statuses reported in Result.Status.
const (
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// History event types.
const (
	EventExecutionStarted      = "ExecutionStarted"
	EventExecutionSucceeded    = "ExecutionSucceeded"
	EventExecutionFailed       = "ExecutionFailed"
	EventExecutionTimedOut     = "ExecutionTimedOut"
	EventExecutionAborted      = "ExecutionAborted"
	EventStateEntered          = "StateEntered"
	EventStateExited           = "StateExited"
	EventStateFailed           = "StateFailed"
	EventTaskScheduled         = "TaskScheduled"
	EventTaskSucceeded         = "TaskSucceeded"
	EventTaskFailed            = "TaskFailed"
	EventTaskTimedOut          = "TaskTimedOut"
	EventRetryScheduled        = "RetryScheduled"
	EventCatchTaken            = "CatchTaken"
	EventWaitStarted           = "WaitStarted"
	EventMapIterationStarted   = "MapIterationStarted"
	EventMapIterationSucceeded = "MapIterationSucceeded"
	EventMapIterationFailed    = "MapIterationFailed"
)

// localAccount and localRegion fill the ARNs the context object exposes.
const (
	localRegion  = "local"
	localAccount = "000000000000"
)

// Event is one entry of an execution history.
type Event struct {
	ID        int
	Timestamp time.Time
	Type      string
	State     string
	Input     json.RawMessage `json:",omitempty"`
	Output    json.RawMessage `json:",omitempty"`
	Error     string          `json:",omitempty"`
	Cause     string          `json:",omitempty"`
	// Attempt is the task attempt's $$.State.RetryCount for Task* events and
	// the 1-based retry number for RetryScheduled.
	Attempt int
	// Wait is the back-off before the retry (RetryScheduled) or the Wait
	// state's duration (WaitStarted).
	Wait time.Duration
	// Index is the item index for MapIteration* events.
	Index int
}

// Result is the outcome of a run. Failed executions are results, not Go
// errors.
type Result struct {
	ExecutionArn, Name  string
	Status              string // SUCCEEDED, FAILED, TIMED_OUT or ABORTED
	Output              json.RawMessage
	Error, Cause        string
	StartTime, StopTime time.Time
	History             []Event
	StateMachineArn     string
	StateMachineName    string
	ExecutionInput      json.RawMessage
}

// LambdaFunc is an in-process stand-in for a Lambda function.
type LambdaFunc func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error)

// ResourceFunc handles any other Task resource (and ItemReader/ResultWriter
// resources): the evaluated parameters in, the task result out.
type ResourceFunc func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// SQSSendFunc stands in for SQS SendMessage.
type SQSSendFunc func(ctx context.Context, queueURL, body string) (messageID string, err error)

// Executor runs one parsed state machine; it is safe to call Run
// concurrently.
type Executor struct {
	sm        *StateMachine
	name      string
	clock     Clock
	randMu    sync.Mutex
	rand      func() float64
	lambdas   map[string]LambdaFunc
	sqs       SQSSendFunc
	resources map[string]ResourceFunc
	// resultWriters stream a distributed Map's results as its iterations
	// end, by ResultWriter resource.
	resultWriters map[string]ResultWriterFunc
	// observers get the execution's name with each event: one executor
	// runs many executions at once.
	observers []func(execution string, ev Event)
	// retryScale multiplies every Retry back-off (1 when unset).
	retryScale float64
}

// Option configures an Executor.
type Option func(*Executor)

// WithClock sets the clock used for waits, retry back-off, timestamps and
// the execution timeout. Default RealClock.
func WithClock(c Clock) Option { return func(e *Executor) { e.clock = c } }

// WithRand sets the source of uniform numbers in [0,1) used for FULL
// jitter and States.MathRandom. Default math/rand/v2.
func WithRand(r func() float64) Option { return func(e *Executor) { e.rand = r } }

// WithLambda registers a function for arn:aws:states:::lambda:invoke
// (dispatched on Parameters.FunctionName, which may be a name, a name with
// qualifier, or an ARN) and for bare Lambda ARNs used as Resource.
func WithLambda(functionName string, fn LambdaFunc) Option {
	return func(e *Executor) { e.lambdas[functionName] = fn }
}

// WithSQS registers the handler for arn:aws:states:::sqs:sendMessage.
func WithSQS(send func(ctx context.Context, queueURL, body string) (messageID string, err error)) Option {
	return func(e *Executor) { e.sqs = send }
}

// WithResource registers a handler for an exact resource ARN, for Task
// states and for Map ItemReader/ResultWriter. It takes precedence over the
// built-in lambda:invoke and sqs:sendMessage integrations.
func WithResource(resourceARN string, fn func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)) Option {
	return func(e *Executor) { e.resources[resourceARN] = fn }
}

// ResultSink receives a distributed Map's results one at a time, as each
// iteration ends (in the order they end), the way Step Functions'
// ResultWriter exports a Map Run's results to S3: the Map keeps none of
// them in memory, so a run over a million items needs no more than one
// over ten.
type ResultSink interface {
	// Add takes one item's result: its output, or its {"Error","Cause"}
	// object when failed. Calls are serialized.
	Add(result json.RawMessage, failed bool) error
	// Finish writes what is left (manifests, the files' ends) and returns
	// the Map's result, as a ResultWriter resource's output.
	Finish(ctx context.Context) (json.RawMessage, error)
	// Discard drops what was written: the Map failed.
	Discard()
}

// ResultWriterFunc opens a ResultSink for one Map Run with the
// ResultWriter's evaluated Parameters.
type ResultWriterFunc func(ctx context.Context, params json.RawMessage) (ResultSink, error)

// WithResultWriter registers a streaming handler for a distributed Map's
// ResultWriter resource. It takes precedence over a WithResource handler
// of the same resource, which gets every result at once at the end.
func WithResultWriter(resourceARN string, open ResultWriterFunc) Option {
	return func(e *Executor) { e.resultWriters[resourceARN] = open }
}

// WithHistory adds a streaming observer called for every event, in order,
// while the execution runs. It must not block for long.
func WithHistory(fn func(Event)) Option {
	return WithExecutionHistory(func(_ string, ev Event) { fn(ev) })
}

// WithExecutionHistory is WithHistory for an observer of concurrent
// executions (a progress display): fn also gets the name of the execution
// the event belongs to.
func WithExecutionHistory(fn func(execution string, ev Event)) Option {
	return func(e *Executor) { e.observers = append(e.observers, fn) }
}

// WithRetryScale multiplies every wait a Retrier schedules (its
// IntervalSeconds, BackoffRate growth and MaxDelaySeconds cap alike) by
// scale, so tests and chaos runs keep the definition's retry policy at a
// fraction of its time. The definition is not changed; the history's
// RetryScheduled events carry the scaled wait. scale must be > 0; 1 is
// Step Functions' timing.
func WithRetryScale(scale float64) Option { return func(e *Executor) { e.retryScale = scale } }

// WithStateMachineName sets the name used in $$.StateMachine and ARNs.
// Default "StateMachine".
func WithStateMachineName(name string) Option { return func(e *Executor) { e.name = name } }

// NewExecutor returns an executor for sm.
func NewExecutor(sm *StateMachine, opts ...Option) *Executor {
	e := &Executor{
		sm:        sm,
		name:      "StateMachine",
		clock:     RealClock(),
		rand:      mrand.Float64,
		lambdas:   map[string]LambdaFunc{},
		resources: map[string]ResourceFunc{},

		resultWriters: map[string]ResultWriterFunc{},
	}
	for _, o := range opts {
		o(e)
	}
	if !(e.retryScale > 0) {
		e.retryScale = 1
	}
	return e
}

func (e *Executor) random() float64 {
	e.randMu.Lock()
	defer e.randMu.Unlock()
	return e.rand()
}

func (e *Executor) stateMachineArn() string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", localRegion, localAccount, e.name)
}

// execution is the state of one Run.
type execution struct {
	e        *Executor
	name     string
	arn      string
	start    time.Time
	input    any
	deadline time.Time // zero without TimeoutSeconds

	mu      sync.Mutex
	history []Event
	seq     int // the last event ID
	// unrecorded executions stream their events to the observers but keep
	// none: the iterations of a distributed Map, child executions with
	// histories of their own on AWS, whose events would otherwise pile up
	// in the parent's history (tens of events per item, for every item of
	// a backfill).
	unrecorded bool
}

// unrecordedTwin is x (same name, input, start and deadline, so the
// context object is the same) with its events kept out of x's history.
func (x *execution) unrecordedTwin() *execution {
	return &execution{e: x.e, name: x.name, arn: x.arn, start: x.start, input: x.input, deadline: x.deadline, unrecorded: true}
}

var errExecutionTimeout = errors.New("asl: execution timed out")

// Run executes the state machine. The error is only for misuse (nil
// machine, invalid input JSON); a failed execution is a Result with Status
// FAILED or TIMED_OUT. If ctx is cancelled the Result has Status ABORTED
// and the error is ctx's.
func (e *Executor) Run(ctx context.Context, executionName string, input json.RawMessage) (*Result, error) {
	if e == nil || e.sm == nil {
		return nil, errors.New("asl.Run: nil state machine")
	}
	in, err := decodeValue(input)
	if err != nil {
		return nil, fmt.Errorf("asl.Run: input is not valid JSON: %w", err)
	}
	if len(input) == 0 {
		in = map[string]any{} // StartExecution's default input is {}
	}
	// Encoded once: the quota check, the history, the result and the
	// first state's input are the same bytes.
	encIn := encodeValue(in)
	if n := len(encIn); n > MaxPayloadBytes {
		// StartExecution refuses such an input; nothing runs.
		return nil, fmt.Errorf("asl.Run: input is %d bytes, over the %d-byte payload quota", n, MaxPayloadBytes)
	}
	if executionName == "" {
		executionName = newUUID()
	}
	x := &execution{
		e:     e,
		name:  executionName,
		arn:   fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", localRegion, localAccount, e.name, executionName),
		start: e.clock.Now(),
		input: in,
	}
	runCtx := ctx
	if t := e.sm.TimeoutSeconds; t > 0 {
		d := time.Duration(t) * time.Second
		x.deadline = x.start.Add(d)
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, d, errExecutionTimeout)
		defer cancel()
	}
	x.emit(Event{Type: EventExecutionStarted, Input: encIn})
	_, encOut, f := x.runMachine(runCtx, e.sm, in, encIn)

	res := &Result{ExecutionArn: x.arn, Name: x.name, StartTime: x.start, StateMachineArn: e.stateMachineArn(), StateMachineName: e.name, ExecutionInput: encIn}
	var runErr error
	switch {
	case f == nil:
		res.Status, res.Output = StatusSucceeded, encOut
		x.emit(Event{Type: EventExecutionSucceeded, Output: res.Output})
	case f.execTimeout:
		res.Status, res.Error, res.Cause = StatusTimedOut, f.Error, f.Cause
		x.emit(Event{Type: EventExecutionTimedOut, Error: f.Error, Cause: f.Cause})
	case f.aborted:
		res.Status, res.Error, res.Cause = StatusAborted, f.Error, f.Cause
		x.emit(Event{Type: EventExecutionAborted, Error: f.Error, Cause: f.Cause})
		runErr = fmt.Errorf("asl.Run: %s: %w", executionName, ctx.Err())
	default:
		res.Status, res.Error, res.Cause = StatusFailed, f.Error, f.Cause
		x.emit(Event{Type: EventExecutionFailed, Error: f.Error, Cause: f.Cause})
	}
	res.StopTime = e.clock.Now()
	x.mu.Lock()
	res.History = x.history
	x.mu.Unlock()
	return res, runErr
}

func (x *execution) emit(ev Event) {
	x.mu.Lock()
	defer x.mu.Unlock() // observers run under the lock so they see events in ID order
	x.seq++
	ev.ID = x.seq
	ev.Timestamp = x.e.clock.Now()
	if !x.unrecorded {
		x.history = append(x.history, ev)
	}
	for _, fn := range x.e.observers {
		fn(x.name, ev)
	}
}

// interrupted reports the execution timeout (by the clock or by the real
// deadline) or an outside cancellation.
func (x *execution) interrupted(ctx context.Context) *failure {
	if !x.deadline.IsZero() && !x.e.clock.Now().Before(x.deadline) {
		return x.timeoutFailure()
	}
	if ctx.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(ctx), errExecutionTimeout) {
		return x.timeoutFailure()
	}
	return &failure{Error: "States.Aborted", Cause: context.Cause(ctx).Error(), aborted: true}
}

func (x *execution) timeoutFailure() *failure {
	return &failure{Error: ErrTimeout, Cause: fmt.Sprintf("execution timed out after %d seconds", x.e.sm.TimeoutSeconds), execTimeout: true}
}

// sleep waits on the clock, stopping at the execution deadline.
func (x *execution) sleep(ctx context.Context, d time.Duration) *failure {
	if !x.deadline.IsZero() {
		if rem := x.deadline.Sub(x.e.clock.Now()); d >= rem {
			_ = x.e.clock.Sleep(ctx, max(rem, 0))
			return x.timeoutFailure()
		}
	}
	if err := x.e.clock.Sleep(ctx, d); err != nil {
		if f := x.interrupted(ctx); f != nil {
			return f
		}
		return &failure{Error: "States.Aborted", Cause: err.Error(), aborted: true}
	}
	return x.interrupted(ctx)
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// contextObject builds $$ for a state. Map.Item is present only while an
// ItemSelector is evaluated, as in Step Functions.
func (x *execution) contextObject(st *State, entered time.Time, retryCount int) map[string]any {
	return map[string]any{
		"Execution": map[string]any{
			"Id":        x.arn,
			"Name":      x.name,
			"StartTime": formatTime(x.start),
			"Input":     x.input,
			"RoleArn":   fmt.Sprintf("arn:aws:iam::%s:role/%s-role", localAccount, x.e.name),
		},
		"StateMachine": map[string]any{"Id": x.e.stateMachineArn(), "Name": x.e.name},
		"State": map[string]any{
			"Name":        st.Name,
			"EnteredTime": formatTime(entered),
			"RetryCount":  intValue(retryCount),
		},
	}
}

// runMachine runs sm from its start state on input, whose encoding is
// encIn (nil: not encoded yet), and returns the output and its encoding.
// Each state's output is the next state's input: the encoding made for
// its exit event is the next one's entry encoding, not made again.
func (x *execution) runMachine(ctx context.Context, sm *StateMachine, input any, encIn json.RawMessage) (any, json.RawMessage, *failure) {
	name := sm.StartAt
	for {
		if f := x.interrupted(ctx); f != nil {
			return nil, nil, f
		}
		st := sm.States[name]
		out, encOut, next, f := x.runState(ctx, st, input, encIn)
		if f != nil {
			return nil, nil, f
		}
		if next == "" {
			return out, encOut, nil
		}
		name, input, encIn = next, out, encOut
	}
}

// runState runs one state on input (encoded as encIn, or nil) and returns
// its output, the output's encoding and the next state name ("" when the
// machine ends).
func (x *execution) runState(ctx context.Context, st *State, input any, encIn json.RawMessage) (any, json.RawMessage, string, *failure) {
	entered := x.e.clock.Now()
	if encIn == nil {
		encIn = encodeValue(input)
	}
	x.emit(Event{Type: EventStateEntered, State: st.Name, Input: encIn})
	env := &evalEnv{input: input, mkCtx: func() any { return x.contextObject(st, entered, 0) }, rand: x.e.random}
	var (
		out  any
		next string
		f    *failure
	)
	// A state input over the quota is refused as it enters (a Map
	// iteration's or a branch's input; any other state's input is the
	// previous state's output, refused as that state exited).
	if f = overDataLimit(encIn, fmt.Sprintf("the input of state '%s'", st.Name)); f != nil {
		x.emit(Event{Type: EventStateFailed, State: st.Name, Error: f.Error, Cause: f.Cause})
		return nil, nil, "", f
	}
	switch st.Type {
	case typePass:
		out, f = x.runPass(st, input, env)
	case typeSucceed:
		out, f = x.passThrough(st, input, env)
	case typeFail:
		f = x.runFail(st, input, env)
	case typeChoice:
		out, next, f = x.runChoice(st, input, env)
	case typeWait:
		out, f = x.runWait(ctx, st, input, env)
	default:
		out, next, f = x.runWithRetry(ctx, st, input, entered)
	}
	if f != nil {
		if !f.aborted && !f.execTimeout {
			x.emit(Event{Type: EventStateFailed, State: st.Name, Error: f.Error, Cause: f.Cause})
		}
		return nil, nil, "", f
	}
	if next == "" {
		next = st.Next
	}
	// The output as the next state gets it: after ResultSelector,
	// ResultPath and OutputPath (or a Catch's ResultPath).
	encOut := encodeValue(out)
	if f := overDataLimit(encOut, fmt.Sprintf("the output of state '%s'", st.Name)); f != nil {
		x.emit(Event{Type: EventStateFailed, State: st.Name, Error: f.Error, Cause: f.Cause})
		return nil, nil, "", f
	}
	x.emit(Event{Type: EventStateExited, State: st.Name, Output: encOut})
	return out, encOut, next, nil
}

func (x *execution) runPass(st *State, input any, env *evalEnv) (any, *failure) {
	eff, f := effectiveInput(st, input, env)
	if f != nil {
		return nil, f
	}
	result := eff
	if st.Result != nil {
		result, _ = decodeValue(st.Result)
	}
	return finishOutput(st, input, result, env)
}

// passThrough is Succeed: InputPath then OutputPath.
func (x *execution) passThrough(st *State, input any, env *evalEnv) (any, *failure) {
	eff, err := inputPath(st.InputPath, input, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	out, err := outputPath(st.OutputPath, eff, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	return out, nil
}

func (x *execution) runFail(st *State, input any, env *evalEnv) *failure {
	f := &failure{Error: st.Error, Cause: st.Cause}
	for _, fld := range []struct {
		name, expr string
		dst        *string
	}{{"ErrorPath", st.ErrorPath, &f.Error}, {"CausePath", st.CausePath, &f.Cause}} {
		if fld.expr == "" {
			continue
		}
		v, err := env.dynamic(fld.expr)
		if err != nil {
			return runtimeFailure("%s: %v", fld.name, err)
		}
		s, ok := v.(string)
		if !ok {
			return runtimeFailure("%s %q must resolve to a string, got %s", fld.name, fld.expr, typeName(v))
		}
		*fld.dst = s
	}
	return f
}

func (x *execution) runChoice(st *State, input any, env *evalEnv) (any, string, *failure) {
	eff, err := inputPath(st.InputPath, input, env)
	if err != nil {
		return nil, "", runtimeFailure("%v", err)
	}
	cenv := env.with(eff)
	next := ""
	for i := range st.Choices {
		ok, err := evalChoice(&st.Choices[i], cenv)
		if err != nil {
			return nil, "", runtimeFailure("%v", err)
		}
		if ok {
			next = st.Choices[i].Next
			break
		}
	}
	if next == "" {
		if st.Default == "" {
			return nil, "", &failure{Error: ErrNoChoiceMatched, Cause: fmt.Sprintf("no choice rule of state %q matched the input and there is no Default", st.Name)}
		}
		next = st.Default
	}
	out, err := outputPath(st.OutputPath, eff, env)
	if err != nil {
		return nil, "", runtimeFailure("%v", err)
	}
	return out, next, nil
}

func (x *execution) runWait(ctx context.Context, st *State, input any, env *evalEnv) (any, *failure) {
	eff, err := inputPath(st.InputPath, input, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	env = env.with(eff)
	var d time.Duration
	switch {
	case st.Seconds != nil:
		d = time.Duration(*st.Seconds) * time.Second
	case st.SecondsPath != "":
		v, err := env.dynamic(st.SecondsPath)
		if err != nil {
			return nil, runtimeFailure("SecondsPath: %v", err)
		}
		n, ok := intOf(v)
		if !ok || n < 0 {
			return nil, runtimeFailure("SecondsPath %q must select a non-negative integer, got %s", st.SecondsPath, encodeValue(v))
		}
		d = time.Duration(n) * time.Second
	default:
		ts := st.Timestamp
		if st.TimestampPath != "" {
			v, err := env.dynamic(st.TimestampPath)
			if err != nil {
				return nil, runtimeFailure("TimestampPath: %v", err)
			}
			s, ok := v.(string)
			if !ok {
				return nil, runtimeFailure("TimestampPath %q must select a timestamp string, got %s", st.TimestampPath, encodeValue(v))
			}
			ts = s
		}
		t, err := parseTimestamp(ts)
		if err != nil {
			return nil, runtimeFailure("%v", err)
		}
		d = max(t.Sub(x.e.clock.Now()), 0)
	}
	x.emit(Event{Type: EventWaitStarted, State: st.Name, Wait: d})
	if f := x.sleep(ctx, d); f != nil {
		return nil, f
	}
	out, err := outputPath(st.OutputPath, eff, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	return out, nil
}

// effectiveInput applies InputPath then Parameters, updating env.input to
// the InputPath result (the input Parameters paths read).
func effectiveInput(st *State, input any, env *evalEnv) (any, *failure) {
	eff, err := inputPath(st.InputPath, input, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	env.input = eff
	if st.Parameters == nil {
		return eff, nil
	}
	params, err := env.expandTemplate(st.Parameters)
	if err != nil {
		return nil, runtimeFailure("Parameters: %v", err)
	}
	return params, nil
}

// finishOutput applies ResultSelector (for task-like states), ResultPath
// against the raw state input, then OutputPath.
func finishOutput(st *State, input, result any, env *evalEnv) (any, *failure) {
	if st.ResultSelector != nil {
		renv := env.with(result)
		v, err := renv.expandTemplate(st.ResultSelector)
		if err != nil {
			return nil, runtimeFailure("ResultSelector: %v", err)
		}
		result = v
	}
	out, err := resultPath(st.ResultPath, input, result)
	if err != nil {
		return nil, &failure{Error: ErrResultPathMatchFailure, Cause: err.Error()}
	}
	out, err = outputPath(st.OutputPath, out, env)
	if err != nil {
		return nil, runtimeFailure("%v", err)
	}
	return out, nil
}
