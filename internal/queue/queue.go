// Package queue is the port to the remediation and dead-letter queues: SQS
// on AWS, append-only JSONL files on one machine.
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

// Reader reads back what a queue holds (for `geomigrate status` and replay).
type Reader interface {
	ReadAll(ctx context.Context, fn func(Message) error) error
}
