//go:build integration

package sqsqueue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/queuetest"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
)

// motoSQS returns an SQS client for moto_server (GEOMIGRATE_MOTO_ENDPOINT,
// started by scripts/integration-up.sh), or skips.
func motoSQS(t *testing.T) *sqs.Client {
	t.Helper()
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if ep == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT not set; run make -f test/integration.mk test-integration")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	o := awsconfig.Options{SQSEndpointURL: ep, Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"}
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return awsconfig.NewSQS(cfg, o)
}

var queueSeq atomic.Int64

func newQueue(t *testing.T, c *sqs.Client) *sqsqueue.Queue {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("gm-%d-%d", time.Now().UnixNano()%1e9, queueSeq.Add(1))
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
	return sqsqueue.New(c, sqsqueue.Options{QueueURL: aws.ToString(out.QueueUrl)})
}

func TestConformanceMoto(t *testing.T) {
	c := motoSQS(t)
	queuetest.RunQueueTests(t, queuetest.Harness{
		New: func(t *testing.T) queue.Queue { return newQueue(t, c) },
		Reopen: func(t *testing.T, q queue.Queue) queue.Queue {
			return sqsqueue.New(motoSQS(t), sqsqueue.Options{QueueURL: q.(*sqsqueue.Queue).URL()})
		},
	})
}

// TestMissingQueueMoto: a queue URL that names no queue is a SystemicError
// (AWS.SimpleQueueService.NonExistentQueue / QueueDoesNotExist) on every call.
func TestMissingQueueMoto(t *testing.T) {
	c := motoSQS(t)
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	q := sqsqueue.New(c, sqsqueue.Options{QueueURL: ep + "/123456789012/no-such-queue"})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Send":    func() error { _, err := q.Send(ctx, "m"); return err },
		"Receive": func() error { _, err := q.Receive(ctx, 1, time.Second); return err },
		"Depth":   func() error { _, err := q.Depth(ctx); return err },
	} {
		err := call()
		var se *fault.SystemicError
		if !errors.As(err, &se) {
			t.Errorf("%s on a missing queue = %v (code %q), want a SystemicError", name, err, awsconfig.ErrorCode(err))
		}
	}
}
