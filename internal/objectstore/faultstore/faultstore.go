// Package faultstore wraps an objectstore.Store and injects the failures S3
// produces, so tests can drive retries, routing and idempotency:
// throttling (SlowDown 503), InternalError 500, RequestTimeout, connection
// resets (all fault.TransientError), AccessDenied (fault.SystemicError), and
// reads that break after k bytes.
//
// Rules are checked in order on every call; the first one that fires
// decides. Injection is deterministic (rules count their own matching
// calls) and the store is safe for concurrent use.
//
// The wrapper does not implement objectstore.LocalPather, so code under test
// takes its streaming path; wrap only what you mean to break.
package faultstore

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Operation names, as matched by Rule.Op and counted by Injected.
const (
	OpHead      = "Head"
	OpOpen      = "Open"
	OpOpenRange = "OpenRange"
	OpPut       = "Put"
	OpCopy      = "Copy"
	OpDelete    = "Delete"
	OpList      = "List"
)

// Ops lists every operation name.
var Ops = []string{OpHead, OpOpen, OpOpenRange, OpPut, OpCopy, OpDelete, OpList}

// Kind is a failure to inject.
type Kind int

const (
	// Default is SlowDown for a failed call and ConnReset for a stream
	// broken mid-way.
	Default        Kind = iota
	SlowDown            // 503 SlowDown: throttling (transient)
	InternalError       // 500 InternalError (transient)
	RequestTimeout      // 400 RequestTimeout: the socket idled (transient)
	ConnReset           // connection reset by peer (transient)
	AccessDenied        // 403 AccessDenied (systemic)
)

func (k Kind) String() string {
	switch k {
	case Default:
		return "Default"
	case SlowDown:
		return "SlowDown"
	case InternalError:
		return "InternalError"
	case RequestTimeout:
		return "RequestTimeout"
	case ConnReset:
		return "ConnReset"
	case AccessDenied:
		return "AccessDenied"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// APIError is an S3 error response: the cause inside the injected
// TransientError or SystemicError.
type APIError struct {
	Code       string
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("api error %s (%d): %s", e.Code, e.StatusCode, e.Message)
}

// ErrorFor builds the error a real store adapter would return for kind,
// raised at where (e.g. "s3.Put: bucket/key").
func ErrorFor(kind Kind, where string) error {
	switch kind {
	case Default, SlowDown:
		return fault.Transient(where, &APIError{"SlowDown", 503, "Please reduce your request rate."})
	case InternalError:
		return fault.Transient(where, &APIError{"InternalError", 500, "We encountered an internal error. Please try again."})
	case RequestTimeout:
		return fault.Transient(where, &APIError{"RequestTimeout", 400, "Your socket connection to the server was not read from or written to within the timeout period."})
	case ConnReset:
		return fault.Transient(where, fmt.Errorf("read tcp 127.0.0.1:41234->127.0.0.1:9000: %w", syscall.ECONNRESET))
	case AccessDenied:
		return fault.Systemic(where, &APIError{"AccessDenied", 403, "Access Denied"})
	}
	return fault.Transient(where, fmt.Errorf("injected %v", kind))
}

// Rule says which calls fail and how.
type Rule struct {
	// Op is the operation name ("Head", "Put", …); "" matches every one.
	Op string
	// Key matches the call's key exactly (the destination key for Copy, the
	// prefix for List); "" matches every key.
	Key string
	// Match, when set, must also accept the call's bucket and key. Match
	// and When run under the store's lock: they must not call the store.
	Match func(bucket, key string) bool

	// Which matching calls fire: the first Times (when > 0), or those for
	// which When returns true (n counts this rule's matching calls from 1).
	// With neither set, every matching call fires.
	Times int
	When  func(n int) bool

	// Kind is the error to return (Default: SlowDown, or ConnReset for a
	// mid-stream failure).
	Kind Kind
	// Err, when set, is returned instead of Kind's error.
	Err error

	// AfterBytes > 0 makes Open and OpenRange succeed but return a reader
	// that fails with the rule's error after that many bytes (a connection
	// dropped mid-stream). Other operations ignore it.
	AfterBytes int64
	// Applied makes Put, Copy and Delete take effect before the error is
	// returned: the ambiguous failure where the request succeeded but the
	// response was lost.
	Applied bool
}

type rule struct {
	Rule
	seen int
}

// Store is the fault-injecting wrapper.
type Store struct {
	inner objectstore.Store

	mu       sync.Mutex
	rules    []*rule
	calls    map[string]int
	injected map[string]int
}

var _ objectstore.Store = (*Store)(nil)

// New wraps inner with the given rules.
func New(inner objectstore.Store, rules ...Rule) *Store {
	s := &Store{inner: inner, calls: map[string]int{}, injected: map[string]int{}}
	for _, r := range rules {
		s.AddRule(r)
	}
	return s
}

// AddRule appends a rule.
func (s *Store) AddRule(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{Rule: r})
}

// ClearRules removes every rule; counters are kept.
func (s *Store) ClearRules() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Calls reports how many calls of op were made (injected or not).
func (s *Store) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Injected reports how many failures were injected into op (mid-stream
// failures count when the reader is handed out).
func (s *Store) Injected(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.injected[op]
}

// InjectedTotal reports all injected failures.
func (s *Store) InjectedTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.injected {
		n += v
	}
	return n
}

// decide counts the call and returns the rule that fires, if any.
func (s *Store) decide(op, bucket, key string) *Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for _, r := range s.rules {
		if (r.Op != "" && r.Op != op) || (r.Key != "" && r.Key != key) || (r.Match != nil && !r.Match(bucket, key)) {
			continue
		}
		r.seen++
		fire := true
		switch {
		case r.Times > 0:
			fire = r.seen <= r.Times
		case r.When != nil:
			fire = r.When(r.seen)
		}
		if fire {
			s.injected[op]++
			rc := r.Rule
			return &rc
		}
	}
	return nil
}

func (r *Rule) err(op, bucket, key string) error {
	if r.Err != nil {
		return r.Err
	}
	kind := r.Kind
	if kind == Default && r.AfterBytes > 0 && (op == OpOpen || op == OpOpenRange) {
		kind = ConnReset
	}
	return ErrorFor(kind, "faultstore."+op+": "+bucket+"/"+key)
}

// Head implements objectstore.Store.
func (s *Store) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	if r := s.decide(OpHead, bucket, key); r != nil {
		return objectstore.Object{}, r.err(OpHead, bucket, key)
	}
	return s.inner.Head(ctx, bucket, key)
}

// Open implements objectstore.Store.
func (s *Store) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	r := s.decide(OpOpen, bucket, key)
	if r != nil && r.AfterBytes <= 0 {
		return nil, r.err(OpOpen, bucket, key)
	}
	rc, err := s.inner.Open(ctx, bucket, key)
	if err != nil || r == nil {
		return rc, err
	}
	return &breakingReader{rc: rc, left: r.AfterBytes, err: r.err(OpOpen, bucket, key)}, nil
}

// OpenRange implements objectstore.Store.
func (s *Store) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return s.OpenRangeIfMatch(ctx, bucket, key, "", offset, length)
}

// OpenRangeIfMatch implements objectstore.Store; its rules are
// OpenRange's.
func (s *Store) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error) {
	r := s.decide(OpOpenRange, bucket, key)
	if r != nil && r.AfterBytes <= 0 {
		return nil, r.err(OpOpenRange, bucket, key)
	}
	rc, err := s.inner.OpenRangeIfMatch(ctx, bucket, key, etag, offset, length)
	if err != nil || r == nil {
		return rc, err
	}
	return &breakingReader{rc: rc, left: r.AfterBytes, err: r.err(OpOpenRange, bucket, key)}, nil
}

// Put implements objectstore.Store.
func (s *Store) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	r := s.decide(OpPut, req.Bucket, req.Key)
	if r == nil {
		return s.inner.Put(ctx, req)
	}
	if r.Applied {
		if _, err := s.inner.Put(ctx, req); err != nil {
			return objectstore.Object{}, err
		}
	}
	return objectstore.Object{}, r.err(OpPut, req.Bucket, req.Key)
}

// Copy implements objectstore.Store.
func (s *Store) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	r := s.decide(OpCopy, req.DstBucket, req.DstKey)
	if r == nil {
		return s.inner.Copy(ctx, req)
	}
	if r.Applied {
		if _, err := s.inner.Copy(ctx, req); err != nil {
			return objectstore.Object{}, err
		}
	}
	return objectstore.Object{}, r.err(OpCopy, req.DstBucket, req.DstKey)
}

// Delete implements objectstore.Store.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	r := s.decide(OpDelete, bucket, key)
	if r == nil {
		return s.inner.Delete(ctx, bucket, key)
	}
	if r.Applied {
		if err := s.inner.Delete(ctx, bucket, key); err != nil {
			return err
		}
	}
	return r.err(OpDelete, bucket, key)
}

// List implements objectstore.Store; Key matches the prefix.
func (s *Store) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	if r := s.decide(OpList, bucket, prefix); r != nil {
		return r.err(OpList, bucket, prefix)
	}
	return s.inner.List(ctx, bucket, prefix, fn)
}

// breakingReader returns err once left bytes have been read.
type breakingReader struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *breakingReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	// An object shorter than the break point ends normally.
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *breakingReader) Close() error { return b.rc.Close() }

// NewBreakingReader returns a reader that yields r's first k bytes and then
// fails with err (a TransientError ConnReset when err is nil), for testing
// code that consumes streams outside a store.
func NewBreakingReader(r io.Reader, k int64, err error) io.ReadCloser {
	if err == nil {
		err = ErrorFor(ConnReset, "stream")
	}
	return &breakingReader{rc: io.NopCloser(r), left: k, err: err}
}

// KeyPrefix is a Match helper for keys with a prefix.
func KeyPrefix(prefix string) func(bucket, key string) bool {
	return func(_, key string) bool { return strings.HasPrefix(key, prefix) }
}
