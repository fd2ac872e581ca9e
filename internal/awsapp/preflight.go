package awsapp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
)

// DefaultPreflightTimeout bounds all the preflight checks together, so an
// endpoint that does not answer is reported in seconds rather than after
// the SDK's and the state machine's retries.
const DefaultPreflightTimeout = 8 * time.Second

// Resources are what a run needs to exist before its first file.
type Resources struct {
	// Buckets are checked with HeadBucket (sources, then the destination).
	Buckets []string
	// Table is checked with DescribeTable ("" skips it).
	Table string
	// CreateTable: a missing table is fine, the caller creates it; the
	// endpoint must still answer.
	CreateTable bool
	// Queues are checked with GetQueueAttributes.
	Queues []QueueRef
	// Timeout bounds the checks (0: DefaultPreflightTimeout).
	Timeout time.Duration
}

// QueueRef is a queue URL and the flag or setting that named it.
type QueueRef struct{ Flag, URL string }

// PreflightError is one missing or unreachable resource, with what to do
// about it; its message is one line.
type PreflightError struct {
	Msg string
	Err error
}

func (e *PreflightError) Error() string { return e.Msg }
func (e *PreflightError) Unwrap() error { return e.Err }

// Preflight checks r in order and returns the first problem as a
// *PreflightError. Every call is one SDK attempt, retried on a transient
// answer (StartupRetry), all under one deadline.
func (a *App) Preflight(ctx context.Context, r Resources) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultPreflightTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s3Once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	ddbOnce := func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

	s3At := endpointOf(awsconfig.S3Endpoint(a.S3), "AWS_ENDPOINT_URL_S3")
	seen := map[string]bool{}
	for _, b := range r.Buckets {
		if b == "" || seen[b] {
			continue
		}
		seen[b] = true
		err := StartupRetry(ctx, func() error {
			_, err := a.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)}, s3Once)
			return err
		})
		switch {
		case err == nil:
		case awsconfig.StatusCode(err) == 404:
			return &PreflightError{Err: err, Msg: fmt.Sprintf("bucket %q does not exist at %s: create it (aws s3 mb s3://%s) or correct the s3:// URI", b, s3At, b)}
		case awsconfig.StatusCode(err) == 403:
			return &PreflightError{Err: err, Msg: fmt.Sprintf("bucket %q at %s: access denied (HeadBucket needs s3:ListBucket): check the credentials and the bucket policy", b, s3At)}
		default:
			return unreachable("S3", s3At, timeout, err)
		}
	}
	if r.Table != "" {
		at := endpointOf(awsconfig.DynamoDBEndpoint(a.DynamoDB), "AWS_ENDPOINT_URL_DYNAMODB")
		err := StartupRetry(ctx, func() error {
			_, err := a.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.Table)}, ddbOnce)
			return err
		})
		switch {
		case err == nil:
		case awsconfig.ErrorCode(err) == "ResourceNotFoundException" && r.CreateTable:
		case awsconfig.ErrorCode(err) == "ResourceNotFoundException":
			return &PreflightError{Err: err, Msg: fmt.Sprintf("DynamoDB table %q does not exist at %s: pass --create-table, or deploy the stack (its StateTable output)", r.Table, at)}
		case awsconfig.Classify(err) == awsconfig.Systemic:
			return &PreflightError{Err: err, Msg: fmt.Sprintf("DynamoDB table %q at %s: %s: check the credentials and the table's permissions", r.Table, at, awsconfig.ErrorCode(err))}
		default:
			return unreachable("DynamoDB", at, timeout, err)
		}
	}
	for _, q := range r.Queues {
		if q.URL == "" {
			continue
		}
		at := endpointOf(awsconfig.SQSEndpoint(a.SQS), "AWS_ENDPOINT_URL_SQS")
		err := StartupRetry(ctx, func() error {
			_, err := sqsqueue.New(a.SQS, sqsqueue.Options{QueueURL: q.URL}).Depth(ctx)
			return err
		})
		code := awsconfig.ErrorCode(err)
		switch {
		case err == nil:
		case code == "AWS.SimpleQueueService.NonExistentQueue", code == "QueueDoesNotExist":
			return &PreflightError{Err: err, Msg: fmt.Sprintf("SQS queue %s (%s) does not exist at %s: create it (aws sqs create-queue --queue-name NAME) or correct the URL", q.URL, q.Flag, at)}
		case awsconfig.Classify(err) == awsconfig.Systemic:
			return &PreflightError{Err: err, Msg: fmt.Sprintf("SQS queue %s (%s) at %s: %s: check the credentials and the queue policy", q.URL, q.Flag, at, code)}
		default:
			return unreachable("SQS", at, timeout, err)
		}
	}
	return nil
}

// endpointOf names where a client sends: its custom endpoint, or AWS.
func endpointOf(custom, envName string) string {
	if custom != "" {
		return custom + " (--endpoint-url or " + envName + ")"
	}
	return "AWS"
}

func unreachable(service, at string, timeout time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &PreflightError{Err: err, Msg: fmt.Sprintf("%s at %s did not answer within %s: check the endpoint URL and the network", service, at, timeout)}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return &PreflightError{Err: err, Msg: fmt.Sprintf("cannot reach %s at %s: %v", service, at, op)}
	}
	return &PreflightError{Err: err, Msg: fmt.Sprintf("cannot use %s at %s: %v", service, at, err)}
}
