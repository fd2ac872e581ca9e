// Package statestore keeps one record per migration job
// (docs/decisions/0006): its status, the lease of the worker that holds it,
// and a bounded history of transitions for lineage. The rules live here;
// backends (an embedded database locally, DynamoDB on AWS) only need a
// single-item compare-and-swap, which both offer without transactions.
package statestore

import (
	"context"
	"errors"
	"time"
)

// Status is a job's place in its lifecycle.
type Status string

const (
	Pending     Status = "PENDING"
	Processing  Status = "PROCESSING"
	Retrying    Status = "RETRYING"
	Completed   Status = "COMPLETED"
	Remedial    Status = "REMEDIAL"
	Quarantined Status = "QUARANTINED"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{Pending, Processing, Retrying, Completed, Remedial, Quarantined}

// Terminal reports whether s ends a job's run.
func (s Status) Terminal() bool { return s == Completed || s == Remedial || s == Quarantined }

// HistoryLimit bounds the transitions kept per job, so a job replayed many
// times cannot grow its record past the backend's item size limit.
const HistoryLimit = 25

var (
	ErrNotFound = errors.New("statestore: not found")
	// ErrConflict reports a lost compare-and-swap: someone else wrote the
	// record first. Callers re-read and decide again.
	ErrConflict = errors.New("statestore: conflict")
)

// Job is one source object migrated with one recipe.
type Job struct {
	// ID is the idempotency key: dataset, content hash and recipe hash;
	// never a timestamp, so the same content always maps to the same job.
	ID           string `json:"pk" dynamodbav:"pk"`
	DatasetID    string `json:"dataset_id" dynamodbav:"dataset_id"`
	SourceBucket string `json:"source_bucket" dynamodbav:"source_bucket"`
	SourceKey    string `json:"source_key" dynamodbav:"source_key"`
	SourceSHA256 string `json:"source_sha256,omitempty" dynamodbav:"source_sha256,omitempty"`
	Fingerprint  string `json:"fingerprint,omitempty" dynamodbav:"fingerprint,omitempty"`
	SourceSize   int64  `json:"source_size" dynamodbav:"source_size"`
	RecipeHash   string `json:"recipe_hash,omitempty" dynamodbav:"recipe_hash,omitempty"`
	DestBucket   string `json:"dest_bucket,omitempty" dynamodbav:"dest_bucket,omitempty"`
	DestKey      string `json:"dest_key,omitempty" dynamodbav:"dest_key,omitempty"`

	Status     Status    `json:"status" dynamodbav:"status"`
	LeaseOwner string    `json:"lease_owner,omitempty" dynamodbav:"lease_owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero" dynamodbav:"lease_until,omitempty"`
	Attempts   int       `json:"attempts" dynamodbav:"attempts"`
	// Holder names the run that holds the lease when the lease owner is a
	// process that heartbeats (a local run, docs/decisions/0102): its
	// host, boot, PID namespace, PID and run token. Empty for Step
	// Functions executions, whose leases only expire.
	Holder string `json:"holder,omitempty" dynamodbav:"holder,omitempty"`
	// HeartbeatUntil is how long Holder's last heartbeat vouches for it
	// (the heartbeat's time plus a few intervals): a lease whose
	// HeartbeatUntil has passed belongs to a run that stopped, whatever its
	// PID or host, and any claim takes it over. Zero: no heartbeat (the
	// lease only expires).
	HeartbeatUntil time.Time `json:"heartbeat_until,omitzero" dynamodbav:"heartbeat_until,omitempty"`

	Tier       string `json:"tier,omitempty" dynamodbav:"tier,omitempty"`
	ErrorName  string `json:"error,omitempty" dynamodbav:"error,omitempty"`
	ErrorCause string `json:"cause,omitempty" dynamodbav:"cause,omitempty"`

	OutputSHA256 string `json:"output_sha256,omitempty" dynamodbav:"output_sha256,omitempty"`
	OutputSize   int64  `json:"output_size,omitempty" dynamodbav:"output_size,omitempty"`

	History   []Transition `json:"history,omitempty" dynamodbav:"history,omitempty"`
	CreatedAt time.Time    `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt time.Time    `json:"updated_at" dynamodbav:"updated_at"`
	// ExpiresAt is the TTL (Unix seconds) after which the backend may drop
	// the record; idempotency then still holds through the destination
	// object's metadata.
	ExpiresAt int64 `json:"expires_at,omitempty" dynamodbav:"expires_at,omitempty"`
	// Version increases by one on every write; it is the compare-and-swap
	// token.
	Version int64 `json:"version" dynamodbav:"version"`
}

// Transition is one status change, kept for lineage.
type Transition struct {
	At        time.Time `json:"at" dynamodbav:"at"`
	From      Status    `json:"from,omitempty" dynamodbav:"from,omitempty"`
	To        Status    `json:"to" dynamodbav:"to"`
	Execution string    `json:"execution,omitempty" dynamodbav:"execution,omitempty"`
	Attempt   int       `json:"attempt" dynamodbav:"attempt"`
	Note      string    `json:"note,omitempty" dynamodbav:"note,omitempty"`
	// Tier is the routing tier of a transition to REMEDIAL or QUARANTINED
	// (the job's Tier then), kept because a later claim clears the job's:
	// recovery latency is reported per tier of the first routing.
	Tier string `json:"tier,omitempty" dynamodbav:"tier,omitempty"`
}

// Backend stores job records. Put is a compare-and-swap on Version:
// expect 0 means "must not exist yet"; otherwise the stored Version must
// equal expect. A lost race returns ErrConflict.
type Backend interface {
	Get(ctx context.Context, id string) (Job, error)
	Put(ctx context.Context, job Job, expect int64) error
	// List calls fn for every job with the given status ("" for all).
	List(ctx context.Context, status Status, fn func(Job) error) error
}

// LazyPutter is a Backend that can hold a write back. LazyPut is Put (the
// same compare-and-swap, seen at once by every reader of the Backend) whose
// commit waits for the Backend's next Put, or a short while, so that one
// durable commit carries both: a kill or a machine crash can lose it. The
// Tracker uses it only for bookkeeping that recovery does not need (an
// attempt starting on a job the same execution already holds, its status
// unchanged). expect must be a stored version (not 0).
type LazyPutter interface {
	LazyPut(ctx context.Context, job Job, expect int64) error
}

// RecentLister is a Backend that lists a status's records updated at or
// after a time without reading the older ones.
type RecentLister interface {
	ListUpdatedSince(ctx context.Context, status Status, since time.Time, fn func(Job) error) error
}
