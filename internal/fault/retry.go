package fault

import (
	"context"
	"time"
)

// Retry runs fn until it succeeds, fails with an error retryable refuses,
// or attempts tries are spent, waiting 50 ms (doubling) between tries; a
// context that ends during a wait ends it with fn's last error. It is for
// calls outside the state machine's Retry blocks (start-up checks, the
// clean-up of a routed job), which would otherwise get one try.
func Retry(ctx context.Context, attempts int, retryable func(error) bool, fn func() error) error {
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		err := fn()
		if err == nil || try >= attempts || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// IsTransient reports whether err is of the transient tier (Retry's
// retryable for calls that fail like a handler's).
func IsTransient(err error) bool { return TierOf(err) == TierTransient }
