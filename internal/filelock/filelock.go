// Package filelock takes exclusive flock(2) locks that a context can
// abandon, for the stores that share files between processes on one
// machine (directory buckets, JSONL queues).
package filelock

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock on f, polling a non-blocking flock so that a
// cancelled context ends the wait (a blocking flock cannot be interrupted).
// Unlock by closing f or with Unlock.
func Lock(ctx context.Context, f *os.File) error { return lock(ctx, f, unix.LOCK_EX) }

// LockShared takes a shared lock on f (many holders at once, none while
// someone holds the exclusive lock), waiting until ctx is done. On a file
// this description already locks exclusively it converts the lock.
func LockShared(ctx context.Context, f *os.File) error { return lock(ctx, f, unix.LOCK_SH) }

// lock polls flock(how|LOCK_NB) with a growing delay until it succeeds,
// fails for another reason than contention, or ctx is done.
func lock(ctx context.Context, f *os.File, how int) error {
	delay := 100 * time.Microsecond
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 20*time.Millisecond)
	}
}

// Unlock releases a lock taken with Lock.
func Unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// TryLock takes the exclusive lock on f if no one holds any lock on it, and
// reports whether it did, without waiting.
func TryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
			return false, nil
		}
		return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}
