// Package queue is the port to the remediation and dead-letter queues: SQS
// on AWS, append-only JSONL files on one machine.
//
// Both adapters share SQS's consumption semantics, which replay relies on
// (and which internal/queue/queuetest checks): a received message is hidden
// from other receives for a visibility timeout; it is gone for good only once
// its receipt is deleted (acknowledged); a message never deleted becomes
// visible again when its timeout passes, or at once when its visibility is
// changed to zero. A message is delivered at least once.
//
// As the SQS API Reference (DeleteMessage) puts it: every receive has its
// own receipt handle; deleting with one succeeds even when the message is
// gone already; a message may be received again even after it was deleted,
// so consumers must be idempotent (replay is: the state store decides
// whether a job runs). Visibility follows the SQS Developer Guide, "Amazon
// SQS visibility timeout".
package queue

import (
	"context"
	"time"
)

// Message is one queued message as stored or received.
type Message struct {
	ID     string    `json:"id"`
	SentAt time.Time `json:"sent_at"`
	Body   string    `json:"body"`
}

// Sender sends a message body and returns the message ID.
type Sender interface {
	Send(ctx context.Context, body string) (string, error)
}

// Reader reads back what a queue holds without consuming it (for
// `geomigrate status`): the messages not yet deleted.
type Reader interface {
	ReadAll(ctx context.Context, fn func(Message) error) error
}

// Delivery is a received message and the handle that acknowledges it.
type Delivery struct {
	Message
	// Receipt identifies this receipt; Delete and ChangeVisibility take it.
	Receipt string
	// ReceiveCount counts receipts of the message, this one included.
	ReceiveCount int
}

// Depth is how many messages a queue holds (SQS's
// ApproximateNumberOfMessages and ApproximateNumberOfMessagesNotVisible).
type Depth struct {
	Visible  int // waiting to be received
	InFlight int // received, neither deleted nor visible again yet
}

// Consumer receives and acknowledges messages (replay).
type Consumer interface {
	// Receive returns up to max (1 to 10) visible messages and hides each
	// from other receives for visibility. An empty result means none is
	// visible now.
	Receive(ctx context.Context, max int, visibility time.Duration) ([]Delivery, error)
	// Delete acknowledges a received message: it is never delivered again.
	// Deleting a receipt twice is not an error.
	Delete(ctx context.Context, receipt string) error
	// ChangeVisibility hides a received message for d from now; zero
	// makes it visible at once.
	ChangeVisibility(ctx context.Context, receipt string, d time.Duration) error
	// Depth counts the messages not deleted.
	Depth(ctx context.Context) (Depth, error)
}

// Queue is a queue that is sent to and consumed.
type Queue interface {
	Sender
	Consumer
}

// MaxReceive is the most messages one Receive returns (SQS's limit).
const MaxReceive = 10
