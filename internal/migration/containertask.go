package migration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// ContainerTaskInput is what the state machine's ConvertInContainer branch
// hands the container task (as JSON in GEOMIGRATE_TASK_INPUT): the Convert
// handler's input, and where to write its result.
type ContainerTaskInput struct {
	Job     Job        `json:"job"`
	Context Invocation `json:"context"`
	Result  struct {
		Bucket string `json:"bucket"`
		Key    string `json:"key"`
	} `json:"result"`
	// EphemeralGiB is the disk the task was given (informational: the
	// state machine asked ECS for it).
	EphemeralGiB int `json:"ephemeral_gib"`
}

// ContainerResultPrefix starts the name of a container task's result
// object in its job's staging directory (the state machine names it
// JOB_STAGING_PREFIX + ContainerResultPrefix + a UUID + ".json" and passes
// it to Promote, which deletes it with the staged outputs; a routed job's
// result object is left to the staging expiry, as on AWS its staged
// outputs would be without Classify's cleanup).
const ContainerResultPrefix = "container-result-"

// ContainerResult is the result object the task writes and the state
// machine reads back (ReadConvertResult): Convert's output, or its error
// as the Lambda runtime reports a function error — Error is the Go type
// name (TransientError, DataError …), Cause the runtime's JSON
// {errorMessage, errorType} — so that the Fail state raising it gives
// Retry, Catch and Classify exactly what a Lambda error gives them.
type ContainerResult struct {
	// Outputs and OutputsRef are always written when Error is not: the
	// state machine selects both (ConvertTaskSucceeded).
	Outputs    []Artifact   `json:"outputs"`
	OutputsRef *OutputsRef  `json:"outputs_ref"`
	Error      *CaughtError `json:"error,omitempty"`
}

// RunContainerTask runs Convert for a container task and writes its
// result object. The handler's own error is the result, not an error of
// the task; RunContainerTask fails only when it cannot write the result
// (the state machine then sees the task or the read fail, and classifies
// that).
func RunContainerTask(ctx context.Context, c *Convert, store objectstore.Store, in ContainerTaskInput) error {
	if in.Result.Bucket == "" || in.Result.Key == "" {
		return fmt.Errorf("migration.RunContainerTask: the input names no result object")
	}
	// A task may outlast the lease HashCheck took (20 to 30 minutes):
	// renewed while Convert runs, the job is not taken over by a second
	// event's execution meanwhile.
	renewing, stop := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		c.keepLease(renewing, in.Job.ID, in.Context.Execution)
	}()
	out, err := c.Handle(ctx, ConvertInput{Job: in.Job, Context: in.Context})
	stop()
	<-renewed
	res := ContainerResult{Outputs: out.Outputs, OutputsRef: out.OutputsRef}
	if err != nil {
		res = ContainerResult{Error: LambdaError(err)}
	}
	body, merr := json.Marshal(res)
	if merr != nil {
		return fmt.Errorf("migration.RunContainerTask: %w", merr)
	}
	// Not through the breaker: the result must be written whatever the
	// bucket's recent failures, or the execution learns nothing.
	if _, perr := store.Put(ctx, objectstore.PutRequest{Bucket: in.Result.Bucket, Key: in.Result.Key, Body: bytes.NewReader(body), Size: int64(len(body))}); perr != nil {
		return fmt.Errorf("migration.RunContainerTask: write result s3://%s/%s: %w", in.Result.Bucket, in.Result.Key, perr)
	}
	return nil
}

// keepLease renews the job's lease every third of it until ctx ends. A
// renewal that fails is logged and tried again at the next tick: the lease
// still has two thirds to run, and Convert's own writes check it.
func (c *Convert) keepLease(ctx context.Context, jobID, execution string) {
	every := c.tracker.Lease() / 3
	if every <= 0 || c.log == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.tracker.Renew(ctx, jobID, execution); err != nil && ctx.Err() == nil {
				c.log.WarnContext(ctx, "container task: lease not renewed", slog.String("job", jobID), slog.String("error", err.Error()))
			}
		}
	}
}

// LambdaError is err as Step Functions catches a Lambda function error:
// Error the errorType aws-lambda-go reports (the Go type name, one pointer
// elided), Cause its JSON {errorMessage, errorType}.
func LambdaError(err error) *CaughtError {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	cause, _ := json.Marshal(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}{err.Error(), name})
	return &CaughtError{Error: name, Cause: string(cause)}
}
