package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
)

// redriveCmd resumes failed executions of the deployed state machines
// (Step Functions RedriveExecution): each continues from the state that
// failed, with the same execution ARN, so the job it claimed is still its
// own (docs/decisions/0102).
type redriveCmd struct {
	Executions []string     `arg:"" name:"execution-arn" help:"ARNs of FAILED, TIMED_OUT or ABORTED executions of the migrate or backfill state machine (at most 14 days old)."`
	Where      backendFlags `embed:""`
}

// routedPrefix starts the error of a migrate execution whose failure
// Classify routed to a queue: it ended at a Fail state after the message
// was sent, and a redrive would only fail there again.
const routedPrefix = "Routed."

func (c *redriveCmd) Run(e *cmdEnv) error {
	if !c.Where.aws() {
		return usagef("redrive resumes executions of the deployed state machines (--backend aws); a local execution that ended unfinished has closed its job already (quarantined, dead-letter message, lease released): run `geomigrate replay` for the dead-letter queue, or migrate the files again")
	}
	o := c.Where.clientOptions()
	cfg, err := awsconfig.Load(e.ctx, o)
	if err != nil {
		return err
	}
	client := awsconfig.NewSFN(cfg, o)
	var refused []string
	for _, arn := range c.Executions {
		d, err := client.DescribeExecution(e.ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			return fmt.Errorf("redrive: %s: %w", arn, err)
		}
		why := ""
		switch {
		case strings.HasPrefix(aws.ToString(d.Error), routedPrefix):
			why = fmt.Sprintf("its failure was routed (%s): the queue message is the record; use `geomigrate replay`", aws.ToString(d.Error))
		case d.RedriveStatus == types.ExecutionRedriveStatusNotRedrivable:
			why = fmt.Sprintf("%s, not redrivable: %s; use `geomigrate replay` or migrate the file again", d.Status, aws.ToString(d.RedriveStatusReason))
		}
		if why != "" {
			fmt.Fprintf(e.stdout, "not redriven %s: %s\n", arn, why)
			refused = append(refused, arn)
			continue
		}
		out, err := client.RedriveExecution(e.ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(arn)})
		var nr *types.ExecutionNotRedrivable
		if errors.As(err, &nr) {
			fmt.Fprintf(e.stdout, "not redriven %s: %s\n", arn, nr.ErrorMessage())
			refused = append(refused, arn)
			continue
		}
		if err != nil {
			return fmt.Errorf("redrive: %s: %w", arn, err)
		}
		fmt.Fprintf(e.stdout, "redriven %s at %s (redrive %d)\n", arn, aws.ToTime(out.RedriveDate).UTC().Format(time.RFC3339), aws.ToInt32(d.RedriveCount)+1)
	}
	if len(refused) > 0 {
		return fmt.Errorf("%d of %d execution(s) not redriven (listed above)", len(refused), len(c.Executions))
	}
	return nil
}
