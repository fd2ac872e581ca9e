// Package sqsqueue implements the queue port over Amazon SQS (the
// remediation queue and the dead-letter queue), with the SDK's current JSON
// protocol: SendMessage, ReceiveMessage, DeleteMessage,
// ChangeMessageVisibility and GetQueueAttributes.
//
// On AWS the state machine sends most messages itself (the sqs:sendMessage
// integration); this adapter serves the CLI (`geomigrate migrate --backend
// aws` with queue URLs, `replay` and `status`). It is tested at the wire
// level against httptest and with the queue conformance suite against moto's
// SQS (integration tag).
package sqsqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/queue"
)

// API is the subset of *sqs.Client the queue uses.
type API interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
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

// Queue is the queue port on one SQS queue.
type Queue struct {
	api  API
	opts Options
	fifo bool
}

var _ queue.Queue = (*Queue)(nil)

// New returns a Queue over api (usually awsconfig.NewSQS).
func New(api API, opts Options) *Queue {
	if opts.GroupID == "" {
		opts.GroupID = "geomigrate"
	}
	return &Queue{api: api, opts: opts, fifo: strings.HasSuffix(opts.QueueURL, ".fifo")}
}

// URL returns the queue URL.
func (s *Queue) URL() string { return s.opts.QueueURL }

// Send sends body and returns the SQS message ID.
func (s *Queue) Send(ctx context.Context, body string) (string, error) {
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
		return "", MapError("sqs.Send: "+s.opts.QueueURL, err)
	}
	return aws.ToString(out.MessageId), nil
}

// emptyPollRetries bounds the extra long polls Receive makes when a poll
// ends empty while the queue reports visible messages.
const emptyPollRetries = 2

// Receive receives up to max messages with a long poll of one second
// (WaitTimeSeconds=1: a long poll queries all of the SQS servers, where a
// short poll samples some of them, per the SQS Developer Guide, "Amazon SQS
// short and long polling"; so none means none is visible) and hides them
// for visibility.
//
// A poll can still end empty while messages wait: a long poll is cut short
// when the server is slow to start it (moto ends one before its first scan
// when its thread stalls past WaitTimeSeconds). So an empty poll is
// believed only when ApproximateNumberOfMessages agrees; otherwise Receive
// polls again, at most emptyPollRetries times. The attribute is approximate
// on SQS, which costs at most those extra polls, never a lost message.
func (s *Queue) Receive(ctx context.Context, max int, visibility time.Duration) ([]queue.Delivery, error) {
	where := "sqs.Receive: " + s.opts.QueueURL
	if max < 1 || max > queue.MaxReceive {
		return nil, fmt.Errorf("%s: max %d: want 1 to %d", where, max, queue.MaxReceive)
	}
	for try := 0; ; try++ {
		ds, err := s.receive(ctx, where, max, visibility)
		if err != nil || len(ds) > 0 || try == emptyPollRetries {
			return ds, err
		}
		d, err := s.Depth(ctx)
		if err != nil || d.Visible == 0 {
			return ds, err
		}
	}
}

// receive makes one ReceiveMessage call.
func (s *Queue) receive(ctx context.Context, where string, max int, visibility time.Duration) ([]queue.Delivery, error) {
	out, err := s.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.opts.QueueURL),
		MaxNumberOfMessages:         int32(max),
		VisibilityTimeout:           seconds(visibility),
		WaitTimeSeconds:             1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSentTimestamp, types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, MapError(where, err)
	}
	ds := make([]queue.Delivery, 0, len(out.Messages))
	for _, m := range out.Messages {
		d := queue.Delivery{
			Message: queue.Message{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)},
			Receipt: aws.ToString(m.ReceiptHandle),
		}
		if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			d.SentAt = time.UnixMilli(ms).UTC()
		}
		d.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		ds = append(ds, d)
	}
	return ds, nil
}

// seconds rounds d up to whole seconds, SQS's unit.
func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// Delete deletes a received message by its receipt handle.
func (s *Queue) Delete(ctx context.Context, receipt string) error {
	_, err := s.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.opts.QueueURL), ReceiptHandle: aws.String(receipt)})
	if err != nil {
		return MapError("sqs.Delete: "+s.opts.QueueURL, err)
	}
	return nil
}

// ChangeVisibility sets a received message's visibility timeout to d from
// now.
func (s *Queue) ChangeVisibility(ctx context.Context, receipt string, d time.Duration) error {
	_, err := s.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(s.opts.QueueURL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: seconds(d),
	})
	if err != nil {
		return MapError("sqs.ChangeVisibility: "+s.opts.QueueURL, err)
	}
	return nil
}

// Depth reads ApproximateNumberOfMessages and
// ApproximateNumberOfMessagesNotVisible. It is also the check that the
// queue exists and may be read (GetQueueAttributes).
func (s *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	where := "sqs.Depth: " + s.opts.QueueURL
	out, err := s.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.opts.QueueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return queue.Depth{}, MapError(where, err)
	}
	var d queue.Depth
	var perr error
	num := func(name types.QueueAttributeName) int {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil && perr == nil {
			perr = fmt.Errorf("%s: attribute %s=%q: %w", where, name, out.Attributes[string(name)], err)
		}
		return n
	}
	d.Visible = num(types.QueueAttributeNameApproximateNumberOfMessages)
	d.InFlight = num(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	return d, perr
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
