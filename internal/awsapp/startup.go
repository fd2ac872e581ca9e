package awsapp

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// StartupAttempts bounds the tries of one start-up check (a HeadBucket,
// the conditional-copy probe, a page of the source listing): a transient
// answer there is retried like any other call, so one 503 or reset does
// not stop a run before its first file.
const StartupAttempts = 5

// ProbeAttempts bounds the tries of the conditional-copy probe: one try is
// up to six requests (put, copy, a multipart copy, delete), any of which a
// passing fault fails, so it gets the tries a single call would need
// several times over (waits of 6.35 s in all when every try fails).
const ProbeAttempts = 8

// StartupRetry runs fn until it succeeds, fails with what a retry cannot
// change, or StartupAttempts tries are spent, waiting 50 ms (doubling)
// between tries. Only answers a later try may not meet are retried: 5xx,
// throttling, a connection reset or cut short. An endpoint that refuses
// connections, cannot be resolved or does not answer before the
// deadline is a misconfiguration, reported at once.
func StartupRetry(ctx context.Context, fn func() error) error {
	return fault.Retry(ctx, StartupAttempts, startupRetryable, fn)
}

func startupRetryable(err error) bool {
	var dns *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.As(err, &dns):
		return false
	}
	return awsconfig.Classify(err) == awsconfig.Transient || fault.TierOf(err) == fault.TierTransient
}
