package dirstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/geomigrate/geomigrate/internal/filelock"
)

// lockStripes is the number of lock files per bucket. Keys hash onto
// stripes, so the files stay few however many keys are written; two keys
// sharing a stripe only serialise their (short) commits.
const lockStripes = 64

// stripeLock is one lock stripe of a bucket directory in this process: a
// semaphore and, opened at its first use and kept, its lock file.
type stripeLock struct {
	sem chan struct{}
	f   *os.File // used only by the semaphore's holder
}

// stripe returns the in-process state of one stripe. flock(2) alone would
// exclude goroutines too (each lock opening its own file description), but
// waiting on a channel costs no thread and honours the context; the file
// is kept open (the semaphore gives it one user at a time) so that a lock
// costs no open and close. The files close with the Store (os.File's
// cleanup) or the process.
func (s *Store) stripe(id string) *stripeLock {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sems[id]
	if !ok {
		c = &stripeLock{sem: make(chan struct{}, 1)}
		s.sems[id] = c
	}
	return c
}

// lock takes the exclusive lock of key's stripe in bucket directory bdir,
// in this process and across processes, and returns its release.
func (s *Store) lock(ctx context.Context, bdir, key string) (func(), error) {
	return s.lockStripe(ctx, bdir, stripeOf(key))
}

func stripeOf(key string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return h.Sum32() % lockStripes
}

// lockPair takes the stripes of two keys of one bucket directory (once
// when they share one), always in stripe order so that two movers cannot
// deadlock.
func (s *Store) lockPair(ctx context.Context, bdir, a, b string) (func(), error) {
	sa, sb := stripeOf(a), stripeOf(b)
	if sa == sb {
		return s.lockStripe(ctx, bdir, sa)
	}
	if sb < sa {
		sa, sb = sb, sa
	}
	first, err := s.lockStripe(ctx, bdir, sa)
	if err != nil {
		return nil, err
	}
	second, err := s.lockStripe(ctx, bdir, sb)
	if err != nil {
		first()
		return nil, err
	}
	return func() { second(); first() }, nil
}

func (s *Store) lockStripe(ctx context.Context, bdir string, stripe uint32) (func(), error) {
	st := s.stripe(fmt.Sprintf("%s\x00%d", bdir, stripe))
	select {
	case st.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if st.f == nil {
		f, err := openLockFile(bdir, stripe)
		if err != nil {
			<-st.sem
			return nil, err
		}
		st.f = f
	}
	if err := filelock.Lock(ctx, st.f); err != nil {
		<-st.sem
		return nil, err
	}
	return func() {
		_ = filelock.Unlock(st.f)
		<-st.sem
	}, nil
}

func openLockFile(bdir string, stripe uint32) (*os.File, error) {
	dir := filepath.Join(bdir, lockDirName)
	name := filepath.Join(dir, fmt.Sprintf("%02x.lock", stripe))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	}
	return f, err
}

// writersLockName is the lock file a process holds shared for as long as it
// writes to a bucket (see Attach).
const writersLockName = "writers.lock"

// Attach registers this process as a writer of bucket until release is
// called (or the process ends: the kernel drops flock(2) locks with the
// process, so kill -9 leaves nothing held). When no other process is
// attached, it first removes every temporary file in the bucket (swept):
// they can only be the remains of writers that crashed or were killed, in
// the data directories, staging and sidecar directories alike. Otherwise
// (alone false) nothing is removed, as the temporaries may be another
// process's writes in progress. Only names with the store's own temporary
// prefix are removed.
func (s *Store) Attach(ctx context.Context, bucket string) (swept int, alone bool, release func(), err error) {
	w := where("Attach", bucket, "")
	bdir, err := s.bucketDir("Attach", bucket, "")
	if err != nil {
		return 0, false, nil, err
	}
	dir := filepath.Join(bdir, lockDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, false, nil, classify(w, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, writersLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, false, nil, classify(w, err)
	}
	alone, err = filelock.TryLock(f)
	if err != nil {
		f.Close()
		return 0, false, nil, classify(w, err)
	}
	if alone {
		// Exclusive: no other process writes here until we downgrade.
		if swept, err = s.SweepTemps(ctx, bucket, 0); err != nil {
			f.Close()
			return swept, alone, nil, err
		}
	}
	if err := filelock.LockShared(ctx, f); err != nil {
		f.Close()
		return swept, alone, nil, classify(w, err)
	}
	return swept, alone, func() { _ = f.Close() }, nil
}
