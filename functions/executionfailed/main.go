// Command executionfailed is the ExecutionFailed Lambda function (provided.al2023): an
// EventBridge "Step Functions Execution Status Change" event (FAILED, TIMED_OUT, ABORTED) of
// the migrate state machine → its job quarantined, lease released, staging deleted, a
// dead-letter message with the execution ARN. The EXPRESS backfill invokes it too, after each
// Distributed Map, with the Map Run's ResultWriterDetails: Express children send no such
// events, so their timed-out jobs are closed from the result files. Config (internal/config, from the
// environment) and clients are built once, at cold start; the handler by internal/steps.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/config"
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "executionfailed:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	cfg, err := config.LoadLambda()
	if err != nil {
		return err
	}
	if cfg.DeadLetterQueueURL == "" {
		return errors.New("GEOMIGRATE_DEAD_LETTER_QUEUE_URL is required")
	}
	app, err := awsapp.New(ctx, cfg.Migration(), cfg.AWS, awsapp.WithLogger(awsapp.NewLambdaLogger(cfg.LogLevel)),
		awsapp.WithQuarantineCopyLimit(cfg.QuarantineCopyLimit), awsapp.WithQuarantineCopyInput(cfg.QuarantineCopyInput))
	if err != nil {
		return err
	}
	lambda.Start(app.Ports().ExecutionFailed(app.Queue(cfg.DeadLetterQueueURL), cfg.MigrateStateMachineArn).HandleInvocation)
	return nil
}
