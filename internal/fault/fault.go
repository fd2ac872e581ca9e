// Package fault is the error taxonomy that the state machine routes on.
//
// Step Functions matches Retry/Catch ErrorEquals against the errorType that
// aws-lambda-go reports, which is the Go type name of the returned error. The
// three type names below are therefore part of the state machine's contract
// (statemachine/migrate.asl.json) and must not be renamed.
package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Tier is the routing class of a failure: transient failures are retried,
// data-specific ones go to remediation, systemic and unknown ones to the
// dead-letter queue (docs/decisions/0005).
type Tier string

const (
	TierTransient    Tier = "transient"
	TierDataSpecific Tier = "data_specific"
	TierSystemic     Tier = "systemic"
	TierUnknown      Tier = "unknown"
)

// Code says what is wrong with the data, so a person can act on it.
type Code string

const (
	MissingCRS        Code = "MissingCRS"
	InvalidCRS        Code = "InvalidCRS"
	UnsupportedFormat Code = "UnsupportedFormat"
	CorruptSource     Code = "CorruptSource"
	InvalidGeometry   Code = "InvalidGeometry"
	EmptyDataset      Code = "EmptyDataset"
	SchemaMismatch    Code = "SchemaMismatch"
	BudgetExceeded    Code = "BudgetExceeded"
	UnsafeSource      Code = "UnsafeSource"
	SourceNotFound    Code = "SourceNotFound"
	InvalidInput      Code = "InvalidInput"
	DestinationTaken  Code = "DestinationConflict"
	SourceChanged     Code = "SourceChanged"
	CurveGeometry     Code = "CurveGeometry"
	NoGeometry        Code = "NoGeometry"
	DriverUnavailable Code = "DriverUnavailable"
	// InvalidKey: an object key that could climb out of a prefix or break
	// a path (".", ".." or empty segments, a leading "/", control
	// characters), refused by every store and by HashCheck
	// (docs/decisions/0100).
	InvalidKey Code = "InvalidKey"
)

// Codes lists every data error code, for documentation and tests.
var Codes = []Code{MissingCRS, InvalidCRS, UnsupportedFormat, CorruptSource, InvalidGeometry,
	EmptyDataset, SchemaMismatch, BudgetExceeded, UnsafeSource, SourceNotFound, InvalidInput, DestinationTaken, SourceChanged,
	CurveGeometry, NoGeometry, DriverUnavailable, InvalidKey}

// TransientError is a failure that may succeed when tried again later
// (throttling, 5xx, timeouts, lease contention). The state machine retries it.
type TransientError struct {
	Op  string // where it happened, e.g. "objectstore.Put"
	Err error
}

func (e *TransientError) Error() string { return join(e.Op, e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

// DataError is a deterministic problem with the input. Retrying cannot help;
// the job goes to the remediation queue.
type DataError struct {
	Code Code
	Msg  string
	Err  error
}

// Error renders "Code: message" so the code survives the trip through
// Step Functions' Cause, which carries only the message text.
func (e *DataError) Error() string {
	s := string(e.Code) + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}
func (e *DataError) Unwrap() error { return e.Err }

// BreakerOpenError reports that a call was not made (or that its failure
// opened the breaker) because the circuit breaker of a dependency
// ("s3:<bucket>" or "s3:<bucket>/write") is open: the dependency is known to be down. It is not a
// TransientError on purpose: the state machine does not retry it (that
// would burn the retry budget against a dead store) but catches it into a
// Wait loop of RetryAfterSeconds, bounded by the job deadline
// (statemachine/migrate.asl.json, docs/operations.md).
//
// Its message is a small JSON document so the state machine can read the
// wait from the caught Cause with States.StringToJson.
type BreakerOpenError struct {
	Dependency string
	// State is "OPEN", "HALF_OPEN" (a probe is in flight) or "CLOSED" (the
	// call was allowed before an opening the breaker has since closed: its
	// failure belongs to that outage and is not retried, RetryAfterSeconds 1;
	// or a systemic write failure counted towards the opening, held the
	// same way instead of dead-lettered).
	State             string
	RetryAfterSeconds int
	Err               error // the failure that opened it, when this call did
}

// breakerMessage is the JSON shape of BreakerOpenError's message.
type breakerMessage struct {
	Dependency        string `json:"dependency"`
	State             string `json:"state"`
	RetryAfterSeconds int    `json:"retry_after_seconds"`
	Cause             string `json:"cause,omitempty"`
}

func (e *BreakerOpenError) Error() string {
	m := breakerMessage{Dependency: e.Dependency, State: e.State, RetryAfterSeconds: e.RetryAfterSeconds}
	if e.Err != nil {
		m.Cause = e.Err.Error()
	}
	b, err := json.Marshal(m)
	if err != nil { // cannot happen for strings and ints
		return "circuit breaker open: " + e.Dependency
	}
	return string(b)
}
func (e *BreakerOpenError) Unwrap() error { return e.Err }

// ParseBreakerOpen reads the message of a BreakerOpenError that crossed a
// process boundary.
func ParseBreakerOpen(msg string) (BreakerOpenError, bool) {
	var m breakerMessage
	if json.Unmarshal([]byte(msg), &m) != nil || m.Dependency == "" {
		return BreakerOpenError{}, false
	}
	e := BreakerOpenError{Dependency: m.Dependency, State: m.State, RetryAfterSeconds: m.RetryAfterSeconds}
	if m.Cause != "" {
		e.Err = errors.New(m.Cause)
	}
	return e, true
}

// SystemicError is a failure of the worker or its environment (out of memory,
// disk full, access denied, missing bucket, bad configuration). It goes to the
// dead-letter queue and raises an alarm.
type SystemicError struct {
	Op  string
	Err error
}

func (e *SystemicError) Error() string { return join(e.Op, e.Err) }
func (e *SystemicError) Unwrap() error { return e.Err }

func join(op string, err error) string {
	switch {
	case op == "":
		if err == nil {
			return "unspecified"
		}
		return err.Error()
	case err == nil:
		return op
	default:
		return op + ": " + err.Error()
	}
}

// Transient wraps err as a TransientError raised at op.
func Transient(op string, err error) error { return &TransientError{Op: op, Err: err} }

// Systemic wraps err as a SystemicError raised at op.
func Systemic(op string, err error) error { return &SystemicError{Op: op, Err: err} }

// Data builds a DataError with a formatted message.
func Data(code Code, format string, args ...any) error {
	return &DataError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// DataWrap builds a DataError that keeps its root cause.
func DataWrap(code Code, err error, format string, args ...any) error {
	return &DataError{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// TierOf reports the tier of an error by the taxonomy type it wraps.
func TierOf(err error) Tier {
	var (
		t *TransientError
		d *DataError
		s *SystemicError
		b *BreakerOpenError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &d):
		return TierDataSpecific
	case errors.As(err, &b):
		return TierTransient // the dependency is down for a while
	case errors.As(err, &s):
		return TierSystemic
	case errors.As(err, &t):
		return TierTransient
	default:
		return TierUnknown
	}
}

// ForBoundary returns the taxonomy error inside err, unwrapped, so that a
// Lambda handler reports its type name (not "wrapError") as errorType.
// Errors outside the taxonomy are returned unchanged: they classify as
// unknown and go to the DLQ.
func ForBoundary(err error) error {
	var (
		t *TransientError
		d *DataError
		s *SystemicError
		b *BreakerOpenError
	)
	// Data wins over transient: a deterministic fault wrapped by a retry
	// layer must not be retried. An open breaker wins over the store
	// failure it wraps: the job waits instead of retrying.
	switch {
	case err == nil:
		return nil
	case errors.As(err, &d):
		return d
	case errors.As(err, &b):
		return b
	case errors.As(err, &s):
		return s
	case errors.As(err, &t):
		return t
	}
	return err
}

// CodeOf extracts the data error code from an error or from the message of
// a DataError that crossed a process boundary ("Code: message").
func CodeOf(err error) Code {
	var d *DataError
	if errors.As(err, &d) {
		return d.Code
	}
	return ""
}

// ParseCode finds the code prefix of a DataError message.
func ParseCode(msg string) Code {
	head, _, ok := strings.Cut(msg, ":")
	if !ok {
		return ""
	}
	for _, c := range Codes {
		if string(c) == head {
			return c
		}
	}
	return ""
}

// attemptSuffix marks the attempt number in an error message. Step Functions
// passes a caught error on as {Error, Cause} only, so the message is the one
// place where "how many attempts were made" can travel to Classify.
const attemptSuffix = " [attempt "

// WithAttempt returns err with the 1-based attempt number appended to its
// message, keeping its taxonomy type. Errors outside the taxonomy are
// returned unchanged.
func WithAttempt(err error, attempt int) error {
	switch e := ForBoundary(err).(type) {
	case *BreakerOpenError:
		return e // its message is JSON the state machine parses; attempts do not matter to a wait
	case *TransientError:
		return &TransientError{Err: errors.New(e.Error() + attemptSuffix + fmt.Sprint(attempt) + "]")}
	case *SystemicError:
		return &SystemicError{Err: errors.New(e.Error() + attemptSuffix + fmt.Sprint(attempt) + "]")}
	case *DataError:
		return &DataError{Code: e.Code, Msg: strings.TrimPrefix(e.Error(), string(e.Code)+": ") + attemptSuffix + fmt.Sprint(attempt) + "]"}
	}
	return err
}

// ParseAttempt splits a message produced by WithAttempt into the message
// and the attempt number (0 when absent).
func ParseAttempt(msg string) (string, int) {
	i := strings.LastIndex(msg, attemptSuffix)
	if i < 0 || !strings.HasSuffix(msg, "]") {
		return msg, 0
	}
	var n int
	if _, err := fmt.Sscanf(msg[i+len(attemptSuffix):], "%d]", &n); err != nil {
		return msg, 0
	}
	return msg[:i], n
}

// FromOS classifies a failure of local file I/O at where: a full disk,
// missing permissions or a broken device is systemic (waiting does not heal
// it), running out of descriptors or an interrupted call is transient.
// Errors already in the taxonomy keep their class; anything else is
// returned wrapped and unclassified, for the caller to decide.
func FromOS(where string, err error) error {
	if TierOf(err) != TierUnknown {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return Systemic(where, fmt.Errorf("DiskFull: %w", err))
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EROFS):
		return Systemic(where, fmt.Errorf("AccessDenied: %w", err))
	case errors.Is(err, syscall.EIO):
		return Systemic(where, fmt.Errorf("IOError: %w", err))
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.EAGAIN),
		errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.ETIMEDOUT):
		return Transient(where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}
