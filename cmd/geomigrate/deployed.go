package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// Environment variables that name the deployed state machines when
// --state-machine-arn is not given: the stack outputs
// MigrateStateMachineArn and BackfillStateMachineArn (docs/operations.md).
const (
	envMigrateStateMachine  = "GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN"
	envBackfillStateMachine = "GEOMIGRATE_BACKFILL_STATE_MACHINE_ARN"
)

// deployed starts and follows executions of a deployed state machine.
type deployed struct {
	client *sfn.Client
	arn    string
	// poll is the first wait between two DescribeExecution calls of one
	// execution; it doubles up to pollMax.
	poll, pollMax time.Duration
}

func (b *backendFlags) deployed(ctx context.Context, arn string) (*deployed, error) {
	o := b.clientOptions()
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		return nil, err
	}
	return &deployed{client: awsconfig.NewSFN(cfg, o), arn: arn, poll: 500 * time.Millisecond, pollMax: 15 * time.Second}, nil
}

// executionName is a new execution's name: the purpose, the time and a
// random part (a name is unique per state machine for 90 days).
func executionName(purpose string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return purpose + "-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// start starts one execution with input and returns its ARN.
func (d *deployed) start(ctx context.Context, name string, input []byte) (string, error) {
	out, err := d.client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(d.arn), Name: aws.String(name), Input: aws.String(string(input)),
	})
	if err != nil {
		return "", fmt.Errorf("states.StartExecution: %s: %w", d.arn, err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// wait follows an execution until it ends or until deadline; a nil
// result with no error means it is still running at the deadline.
func (d *deployed) wait(ctx context.Context, execution string, deadline time.Time) (*sfn.DescribeExecutionOutput, error) {
	wait := d.poll
	for {
		out, err := d.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execution)})
		if err != nil {
			return nil, fmt.Errorf("states.DescribeExecution: %s: %w", execution, err)
		}
		if out.Status != sfntypes.ExecutionStatusRunning && out.Status != sfntypes.ExecutionStatusPendingRedrive {
			return out, nil
		}
		if !time.Now().Add(wait).Before(deadline) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, d.pollMax)
	}
}

// replayDeployed runs each input again as an execution of the deployed
// migrate state machine, waits for them until deadline, and writes their
// outcomes as a run report to report: the replayer settles the messages
// by it as it does after a local run.
func (d *deployed) replayDeployed(ctx context.Context, e *cmdEnv, inputs []migration.Source, deadline time.Time, report string) error {
	started := time.Now()
	outcomes := make([]localrun.Outcome, len(inputs))
	arns := make([]string, len(inputs))
	for i, src := range inputs {
		outcomes[i] = localrun.Outcome{Bucket: src.Bucket, Key: src.Key, Status: localrun.StatusFailed}
		// The manual input shape; FromManual makes it the execution's
		// source unchanged, so HashCheck gets the source the message
		// holds (a URL-encoded key from an S3 event stays so).
		body, err := json.Marshal(src)
		if err != nil {
			return err
		}
		arn, err := d.start(ctx, executionName("replay"), body)
		if err != nil {
			outcomes[i].Error, outcomes[i].Message = "StartExecution", err.Error()
			continue
		}
		arns[i] = arn
		outcomes[i].Execution = arn
		fmt.Fprintf(e.stderr, "geomigrate: started %s for s3://%s/%s\n", arn, src.Bucket, src.Key)
	}
	for i, arn := range arns {
		if arn == "" {
			continue
		}
		out, err := d.wait(ctx, arn, deadline)
		switch {
		case err != nil:
			outcomes[i].Error, outcomes[i].Message = "DescribeExecution", err.Error()
		case out == nil:
			outcomes[i].Error, outcomes[i].Message = "Running", "still running at the end of --visibility-timeout: its message is left for the next replay"
		default:
			o := &outcomes[i]
			localrun.Summarize(&asl.Result{
				ExecutionArn: arn, Status: string(out.Status), Output: json.RawMessage(aws.ToString(out.Output)),
				Error: aws.ToString(out.Error), Cause: aws.ToString(out.Cause),
			}, o)
			if out.StartDate != nil && out.StopDate != nil {
				o.Duration = out.StopDate.Sub(*out.StartDate)
			}
		}
	}
	r := localrun.NewReport(started, outcomes)
	r.Backend = backendAWS
	if err := r.Write(report); err != nil {
		return err
	}
	r.PrintSummary(e.stdout, termtable.Width(e.stdout))
	fmt.Fprintf(e.stdout, "report: %s\n", report)
	return nil
}
