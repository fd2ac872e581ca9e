package migration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

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
	Outputs []Artifact   `json:"outputs,omitempty"`
	Error   *CaughtError `json:"error,omitempty"`
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
	out, err := c.Handle(ctx, ConvertInput{Job: in.Job, Context: in.Context})
	res := ContainerResult{Outputs: out.Outputs}
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
