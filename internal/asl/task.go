package asl

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Service integration resources handled natively.
const (
	ResourceLambdaInvoke   = "arn:aws:states:::lambda:invoke"
	ResourceSQSSendMessage = "arn:aws:states:::sqs:sendMessage"
)

var errTaskTimeout = errors.New("asl: task timed out")

// handlerCall invokes one handler with a context.
type handlerCall func(ctx context.Context) (any, *failure)

// runTask resolves the resource, applies TimeoutSeconds(Path) and records
// the Task* events. params is the effective input after Parameters.
func (x *execution) runTask(ctx context.Context, st *State, params any, env *evalEnv, retryCount int) (any, *failure) {
	timeout := st.TimeoutSeconds
	if st.TimeoutSecondsPath != "" {
		v, err := env.dynamic(st.TimeoutSecondsPath)
		if err != nil {
			return nil, runtimeFailure("TimeoutSecondsPath: %v", err)
		}
		n, ok := intOf(v)
		if !ok || n <= 0 {
			return nil, runtimeFailure("TimeoutSecondsPath %q must select a positive integer, got %s", st.TimeoutSecondsPath, encodeValue(v))
		}
		timeout = n
	}
	encParams := encodeValue(params)
	// The input after Parameters is refused before the task is scheduled.
	if f := overDataLimit(encParams, fmt.Sprintf("the input of state '%s' after Parameters", st.Name)); f != nil {
		return nil, f
	}
	x.emit(Event{Type: EventTaskScheduled, State: st.Name, Input: encParams, Attempt: retryCount})
	call := x.e.resolveTask(st.Resource, params)
	out, f := x.callWithTimeout(ctx, timeout, call)
	var encOut []byte
	if f == nil {
		// The task's whole result (a lambda:invoke result with its
		// Payload and response metadata), before ResultSelector.
		encOut = encodeValue(out)
		f = overDataLimit(encOut, fmt.Sprintf("the result of task '%s'", st.Name))
	}
	switch {
	case f == nil:
		x.emit(Event{Type: EventTaskSucceeded, State: st.Name, Output: encOut, Attempt: retryCount})
	case f.Error == ErrTimeout && !f.terminal():
		x.emit(Event{Type: EventTaskTimedOut, State: st.Name, Error: f.Error, Cause: f.Cause, Attempt: retryCount})
	case !f.terminal():
		x.emit(Event{Type: EventTaskFailed, State: st.Name, Error: f.Error, Cause: f.Cause, Attempt: retryCount})
	}
	return out, f
}

// callWithTimeout runs call in its own goroutine so that a handler that
// ignores its context still times out (it is then abandoned) and so that a
// panic becomes a task failure instead of crashing the executor.
func (x *execution) callWithTimeout(ctx context.Context, timeoutSecs int, call handlerCall) (any, *failure) {
	var (
		cctx   context.Context
		cancel context.CancelFunc
	)
	if timeoutSecs > 0 {
		cctx, cancel = context.WithTimeoutCause(ctx, time.Duration(timeoutSecs)*time.Second, errTaskTimeout)
	} else {
		cctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	type outcome struct {
		out any
		f   *failure
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{f: lambdaFailure(panicError{p})}
			}
		}()
		out, f := call(cctx)
		done <- outcome{out, f}
	}()
	var r outcome
	select {
	case r = <-done:
	case <-cctx.Done():
	}
	if cctx.Err() != nil && (r.f != nil || r.out == nil) {
		if errors.Is(context.Cause(cctx), errTaskTimeout) {
			return nil, &failure{Error: ErrTimeout, Cause: fmt.Sprintf("task timed out after %d seconds", timeoutSecs)}
		}
		if f := x.interrupted(ctx); f != nil {
			return nil, f
		}
	}
	return r.out, r.f
}

// resolveTask picks the handler for a Task resource.
func (e *Executor) resolveTask(resource string, params any) handlerCall {
	if fn, ok := e.resources[resource]; ok {
		return func(ctx context.Context) (any, *failure) { return callResource(ctx, fn, params) }
	}
	switch {
	case resource == ResourceLambdaInvoke:
		return func(ctx context.Context) (any, *failure) { return e.lambdaInvoke(ctx, params) }
	case resource == ResourceSQSSendMessage && e.sqs != nil:
		return func(ctx context.Context) (any, *failure) { return e.sqsSend(ctx, params) }
	case strings.HasPrefix(resource, "arn:aws:lambda:"):
		if fn, ok := e.lookupLambda(resource); ok {
			return func(ctx context.Context) (any, *failure) { return callLambda(ctx, fn, params) }
		}
	}
	return func(context.Context) (any, *failure) {
		return nil, &failure{Error: ErrTaskFailed, Cause: fmt.Sprintf("asl: no handler registered for resource %q", resource)}
	}
}

func callResource(ctx context.Context, fn ResourceFunc, params any) (any, *failure) {
	raw, err := fn(ctx, encodeValue(params))
	if err != nil {
		return nil, serviceFailure(err)
	}
	v, err := decodeValue(raw)
	if err != nil {
		return nil, &failure{Error: ErrTaskFailed, Cause: fmt.Sprintf("handler returned invalid JSON: %v", err)}
	}
	return v, nil
}

func callLambda(ctx context.Context, fn LambdaFunc, payload any) (any, *failure) {
	raw, err := fn(ctx, encodeValue(payload))
	if err != nil {
		return nil, lambdaFailure(err)
	}
	v, err := decodeValue(raw)
	if err != nil {
		return nil, &failure{Error: "Lambda.InvalidPayload", Cause: fmt.Sprintf("function returned invalid JSON: %v", err)}
	}
	return v, nil
}

// lookupLambda finds a registered function by exact name or ARN, then by
// the function name inside an ARN or name:qualifier.
func (e *Executor) lookupLambda(ref string) (LambdaFunc, bool) {
	if fn, ok := e.lambdas[ref]; ok {
		return fn, true
	}
	name := ref
	if _, after, ok := strings.Cut(ref, ":function:"); ok {
		name = after
	}
	name, _, _ = strings.Cut(name, ":")
	fn, ok := e.lambdas[name]
	return fn, ok
}

// lambdaInvoke implements arn:aws:states:::lambda:invoke, returning the
// Invoke response shape Step Functions exposes.
func (e *Executor) lambdaInvoke(ctx context.Context, params any) (any, *failure) {
	p, _ := params.(map[string]any)
	ref, _ := p["FunctionName"].(string)
	if ref == "" {
		return nil, runtimeFailure("lambda:invoke: Parameters must contain a FunctionName string")
	}
	fn, ok := e.lookupLambda(ref)
	if !ok {
		return nil, &failure{Error: ErrTaskFailed, Cause: fmt.Sprintf("asl: no Lambda function registered for %q", ref)}
	}
	payload, ok := p["Payload"]
	if !ok {
		payload = map[string]any{}
	}
	out, f := callLambda(ctx, fn, payload)
	if f != nil {
		return nil, f
	}
	requestID := newUUID()
	size := strconv.Itoa(encodedLen(out))
	date := time.Now().UTC().Format(time.RFC1123)
	headers := map[string]any{
		"Connection":                     "keep-alive",
		"Content-Length":                 size,
		"Content-Type":                   "application/json",
		"Date":                           date,
		"X-Amz-Executed-Version":         "$LATEST",
		"x-amzn-Remapped-Content-Length": "0",
		"x-amzn-RequestId":               requestID,
	}
	all := map[string]any{}
	for k, v := range headers {
		all[k] = []any{v}
	}
	return map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         out,
		"SdkHttpMetadata": map[string]any{
			"AllHttpHeaders": all,
			"HttpHeaders":    headers,
			"HttpStatusCode": intValue(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": requestID},
		"StatusCode":          intValue(200),
	}, nil
}

// sqsSend implements arn:aws:states:::sqs:sendMessage. A MessageBody that
// is not a string is serialized to JSON text, as Step Functions does.
func (e *Executor) sqsSend(ctx context.Context, params any) (any, *failure) {
	p, _ := params.(map[string]any)
	url, _ := p["QueueUrl"].(string)
	if url == "" {
		return nil, runtimeFailure("sqs:sendMessage: Parameters must contain a QueueUrl string")
	}
	bodyV, ok := p["MessageBody"]
	if !ok {
		return nil, runtimeFailure("sqs:sendMessage: Parameters must contain MessageBody")
	}
	body, isStr := bodyV.(string)
	if !isStr {
		body = string(encodeValue(bodyV))
	}
	id, err := e.sqs(ctx, url, body)
	if err != nil {
		return nil, serviceFailure(err)
	}
	sum := md5.Sum([]byte(body))
	requestID := newUUID()
	return map[string]any{
		"MD5OfMessageBody": hex.EncodeToString(sum[:]),
		"MessageId":        id,
		"SdkHttpMetadata": map[string]any{
			"HttpHeaders":    map[string]any{"Content-Type": "text/xml", "x-amzn-RequestId": requestID},
			"HttpStatusCode": intValue(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": requestID},
	}, nil
}
