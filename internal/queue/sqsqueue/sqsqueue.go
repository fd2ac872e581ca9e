// Package sqsqueue implements queue.Sender over Amazon SQS (the remediation
// queue and the dead-letter queue), with the SDK's current JSON protocol.
//
// On AWS the state machine sends most messages itself (the sqs:sendMessage
// integration); this adapter serves the CLI (`geomigrate replay`) and the
// Lambda paths that route a job directly. There is no local SQS server for
// the current SDK, so it is tested at the wire level against httptest.
package sqsqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/queue"
)

// API is the subset of *sqs.Client the sender uses.
type API interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Options configures a Sender.
type Options struct {
	// QueueURL is the queue's URL (required).
	QueueURL string
	// GroupID is the MessageGroupId for FIFO queues (URL ending in
	// ".fifo"); "" means "geomigrate". The deduplication ID is the SHA-256
	// of the body, so a retried send of the same message is dropped by SQS
	// within its five-minute window.
	GroupID string
}

// Sender is a queue.Sender on one SQS queue.
type Sender struct {
	api  API
	opts Options
	fifo bool
}

var _ queue.Sender = (*Sender)(nil)

// New returns a Sender over api (usually awsconfig.NewSQS).
func New(api API, opts Options) *Sender {
	if opts.GroupID == "" {
		opts.GroupID = "geomigrate"
	}
	return &Sender{api: api, opts: opts, fifo: strings.HasSuffix(opts.QueueURL, ".fifo")}
}

// Send sends body and returns the SQS message ID.
func (s *Sender) Send(ctx context.Context, body string) (string, error) {
	if s.opts.QueueURL == "" {
		return "", fault.Systemic("sqs.Send", fmt.Errorf("no queue URL configured"))
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.opts.QueueURL), MessageBody: aws.String(body)}
	if s.fifo {
		sum := sha256.Sum256([]byte(body))
		in.MessageGroupId = aws.String(s.opts.GroupID)
		in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	out, err := s.api.SendMessage(ctx, in)
	if err != nil {
		return "", MapError("sqs.Send "+s.opts.QueueURL, err)
	}
	return aws.ToString(out.MessageId), nil
}

// MapError maps an SQS error onto the taxonomy: throttling (RequestThrottled,
// ThrottlingException, KMS throttling), 5xx, timeouts and resets →
// TransientError; QueueDoesNotExist (AWS.SimpleQueueService.NonExistentQueue),
// AccessDenied, KMS denials, credentials → SystemicError. Other client
// errors (an invalid or oversized body) keep their identity: tier unknown.
func MapError(op string, err error) error {
	switch awsconfig.ErrorCode(err) {
	case "KmsThrottled", "KMS.ThrottlingException", "OverLimit":
		return fault.Transient(op, err)
	case "KmsAccessDenied", "KmsDisabled", "KmsInvalidState", "KmsNotFound", "KmsInvalidKeyUsage",
		"KmsOptInRequired", "QueueDeletedRecently", "UnsupportedOperation":
		return fault.Systemic(op, err)
	}
	return awsconfig.Wrap(op, err)
}
