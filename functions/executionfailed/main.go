// Command executionfailed is the ExecutionFailed Lambda function (provided.al2023): an
// EventBridge "Step Functions Execution Status Change" event (FAILED, TIMED_OUT, ABORTED) of
// the migrate state machine → its job quarantined, lease released, staging deleted, a
// dead-letter message with the execution ARN. Config and clients are built once, at cold
// start; see internal/awsapp.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/geomigrate/geomigrate/internal/awsapp"
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "executionfailed:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	app, err := awsapp.Load(ctx, os.Getenv)
	if err != nil {
		return err
	}
	h, err := app.ExecutionFailed(os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}
