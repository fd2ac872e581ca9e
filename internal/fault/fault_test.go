package fault

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestTierOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want Tier
	}{
		{nil, ""},
		{Transient("s3.Put", errors.New("SlowDown")), TierTransient},
		{fmt.Errorf("convert: %w", Data(MissingCRS, "no CRS")), TierDataSpecific},
		{fmt.Errorf("promote: %w", Systemic("s3.Copy", errors.New("AccessDenied"))), TierSystemic},
		// A data fault found while retrying stays a data fault.
		{Transient("retry", Data(CorruptSource, "truncated")), TierDataSpecific},
		{errors.New("boom"), TierUnknown},
		// An open breaker wraps the store failure that opened it.
		{fmt.Errorf("hashcheck: %w", &BreakerOpenError{Dependency: "s3:dest", Err: Systemic("s3.Head", errors.New("AccessDenied"))}), TierTransient},
	}
	for _, tt := range tests {
		if got := TierOf(tt.err); got != tt.want {
			t.Errorf("TierOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestBoundaryTypeNames pins what aws-lambda-go reports as errorType: the
// type name with the pointer elided, whatever wrapping happened inside.
func TestBoundaryTypeNames(t *testing.T) {
	t.Parallel()
	name := func(err error) string {
		ty := reflect.TypeOf(err)
		if ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		return ty.Name()
	}
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", Transient("op", errors.New("x")))), "TransientError"},
		{fmt.Errorf("a: %w", Data(EmptyDataset, "empty")), "DataError"},
		{fmt.Errorf("a: %w", Systemic("op", errors.New("x"))), "SystemicError"},
		{errors.New("plain"), "errorString"},
		{fmt.Errorf("a: %w", &BreakerOpenError{Dependency: "s3:dest", Err: Transient("s3.Put", errors.New("SlowDown"))}), "BreakerOpenError"},
	}
	for _, tt := range tests {
		if got := name(ForBoundary(tt.err)); got != tt.want {
			t.Errorf("ForBoundary(%v) reports %q, want %q", tt.err, got, tt.want)
		}
		if got := name(WithAttempt(tt.err, 3)); got != tt.want {
			t.Errorf("WithAttempt(%v) reports %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestAttemptAndCodeSurviveTheMessage(t *testing.T) {
	t.Parallel()
	err := WithAttempt(fmt.Errorf("convert: %w", Data(InvalidCRS, "bad WKT")), 5)
	msg, n := ParseAttempt(err.Error())
	if n != 5 || msg != "InvalidCRS: bad WKT" {
		t.Fatalf("ParseAttempt(%q) = %q, %d", err.Error(), msg, n)
	}
	if ParseCode(msg) != InvalidCRS {
		t.Fatalf("ParseCode(%q) = %q", msg, ParseCode(msg))
	}
	for _, s := range []string{"no attempt here", "x [attempt ]", "x [attempt 2] tail"} {
		if m, n := ParseAttempt(s); n != 0 || m != s {
			t.Errorf("ParseAttempt(%q) = %q, %d", s, m, n)
		}
	}
	if ParseCode("NotACode: x") != "" || ParseCode("no colon") != "" {
		t.Error("ParseCode accepted an unknown code")
	}
}

func TestFromOS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want Tier
	}{
		{&os.PathError{Op: "write", Path: "/tmp/x", Err: syscall.ENOSPC}, TierSystemic},
		{&os.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, TierSystemic},
		{&os.PathError{Op: "open", Path: "/x", Err: syscall.EMFILE}, TierTransient},
		{Data(CorruptSource, "already classified"), TierDataSpecific},
		{errors.New("something else"), TierUnknown},
	}
	for _, tt := range tests {
		got := FromOS("op", tt.err)
		if TierOf(got) != tt.want || !strings.HasPrefix(got.Error(), "op: ") {
			t.Errorf("FromOS(%v) = %v (tier %s), want tier %s", tt.err, got, TierOf(got), tt.want)
		}
	}
}

func TestBreakerOpenMessageRoundTrips(t *testing.T) {
	t.Parallel()
	e := &BreakerOpenError{Dependency: "s3:dest", State: "OPEN", RetryAfterSeconds: 42, Err: Transient("s3.Put", errors.New("SlowDown"))}
	got, ok := ParseBreakerOpen(WithAttempt(fmt.Errorf("x: %w", e), 3).Error())
	if !ok || got.Dependency != "s3:dest" || got.State != "OPEN" || got.RetryAfterSeconds != 42 || got.Err == nil || got.Err.Error() != "s3.Put: SlowDown" {
		t.Fatalf("ParseBreakerOpen = %+v, %v", got, ok)
	}
	if _, ok := ParseBreakerOpen("s3.Put: SlowDown"); ok {
		t.Fatal("a plain message parsed as a breaker error")
	}
}
