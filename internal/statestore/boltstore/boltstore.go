// Package boltstore is a statestore.Backend in one bbolt file, for running
// the pipeline on one machine.
//
// One process owns the database at a time: bbolt holds an exclusive flock on
// the file while it is open. A second process (say, `geomigrate status`
// while a `geomigrate migrate` runs) waits up to the open timeout and then
// gets an error wrapping ErrLocked, instead of hanging. Within the owning
// process the Store is safe for concurrent use.
//
// Jobs are JSON values in the bucket "jobs", keyed by Job.ID. Put's
// compare-and-swap reads and writes inside one bbolt Update transaction,
// and bbolt serialises those, so exactly one of several racing writers wins.
//
// A damaged file (truncated by a full disk or a bad copy, overwritten) is
// an error wrapping ErrCorrupt, never a panic: bbolt panics on pages it
// cannot read, and reading an mmap past the end of a truncated file faults,
// so every access runs under guard. The error names the recovery command
// (Repair, `geomigrate state repair`). A single record that is not valid
// JSON is skipped by List (and logged) and reported by Get as ErrCorrupt.
package boltstore

// Size: one backend: the bbolt state store's open and guard, get, put and list, and its lazy flush.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// DefaultTimeout is how long Open waits for another process to release the
// database.
const DefaultTimeout = 5 * time.Second

var bucketName = []byte("jobs")

// breakerBucket holds the circuit breakers' records (breaker.Store), one
// JSON value per dependency.
var breakerBucket = []byte("breakers")

// ErrLocked is wrapped when another process holds the database.
var ErrLocked = errors.New("boltstore: the state database is in use by another process (one process owns it at a time)")

// ErrCorrupt is wrapped when the file or a record in it is damaged.
var ErrCorrupt = errors.New("boltstore: the state database is damaged")

// recovery is what a person does about a damaged file at path.
func recovery(path string) string {
	return fmt.Sprintf("run `geomigrate state repair --state-dir %s` (keeps every readable record, moves the damaged file aside), or move %s aside to start an empty store; outputs already migrated are still recognised by their metadata and skipped",
		filepath.Dir(path), filepath.Base(path))
}

// guard runs fn, turning a panic of bbolt or a memory fault on the mmap
// (a truncated file) into an error wrapping ErrCorrupt.
func guard(path string, fn func() error) error {
	err := guardRaw(path, fn)
	if errors.Is(err, errPanicked) {
		return fmt.Errorf("%w; %s", err, recovery(path))
	}
	return err
}

// errPanicked marks a panic or fault that guardRaw recovered.
var errPanicked = errors.New("boltstore: unreadable page")

// guardRaw is guard without the recovery advice (for Repair itself).
func guardRaw(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %w: %v", ErrCorrupt, path, errPanicked, p)
		}
	}()
	return fn()
}

// listPage is how many jobs List reads per read transaction. The callback
// runs outside transactions, so it may write.
const listPage = 256

// Store is a statestore.Backend on bbolt.
type Store struct {
	db   *bolt.DB
	path string

	// wmu serialises the job writes (Put, LazyPut, flush), so a write's
	// compare-and-swap sees the lazy writes before it.
	wmu sync.Mutex
	// omu guards pending: records written by LazyPut and not yet
	// committed, by ID, JSON as stored. Readers see them first.
	omu     sync.Mutex
	pending map[string][]byte
	flusher *time.Timer
	// flushAfter is lazyFlushAfter unless WithLazyFlushAfter says.
	flushAfter time.Duration
	// commits counts job-bucket commits (the tests pin how many a job's
	// life costs).
	commits atomic.Int64
}

// lazyFlushAfter bounds how long a lazy write waits for a durable one to
// carry it.
const lazyFlushAfter = time.Second

var (
	_ statestore.Backend    = (*Store)(nil)
	_ statestore.LazyPutter = (*Store)(nil)
	_ breaker.Store         = (*Store)(nil)
)

type options struct {
	timeout    time.Duration
	noSync     bool
	flushAfter time.Duration
}

// Option configures Open.
type Option func(*options)

// WithTimeout sets how long Open waits for the file lock (0: DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithNoSync skips fsync on commit: faster, and a machine crash can lose the
// last writes. For tests and throwaway runs only.
func WithNoSync() Option { return func(o *options) { o.noSync = true } }

// WithLazyFlushAfter sets how long a lazy write waits for a durable one
// before it is committed on its own (0: a second). Tests that look at
// what is on disk before the next commit set it long.
func WithLazyFlushAfter(d time.Duration) Option { return func(o *options) { o.flushAfter = d } }

// Open opens (creating when needed) the database at path.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{timeout: DefaultTimeout}
	for _, fn := range opts {
		fn(&o)
	}
	if o.timeout <= 0 {
		o.timeout = DefaultTimeout
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fault.Systemic("boltstore.Open: "+path, err)
		}
	}
	if err := checkDeclaredSize(path); err != nil {
		return nil, fault.Systemic("boltstore.Open", err)
	}
	var db *bolt.DB
	err := guard(path, func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: o.timeout, NoSync: o.noSync})
		return err
	})
	if errors.Is(err, ErrCorrupt) {
		return nil, fault.Systemic("boltstore.Open", err)
	}
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fault.Systemic("boltstore.Open: "+path,
				fmt.Errorf("%w: gave up after %s: %w", ErrLocked, o.timeout, err))
		}
		if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
			err = fmt.Errorf("%w: %s: %w; %s", ErrCorrupt, path, err, recovery(path))
		}
		return nil, fault.Systemic("boltstore.Open: "+path, err)
	}
	s := &Store{db: db, path: path, pending: map[string][]byte{}, flushAfter: o.flushAfter}
	if s.flushAfter <= 0 {
		s.flushAfter = lazyFlushAfter
	}
	if err := s.guard(func() error {
		return db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(bucketName); err != nil {
				return err
			}
			_, err := tx.CreateBucketIfNotExists(breakerBucket)
			return err
		})
	}); err != nil {
		db.Close()
		return nil, fault.Systemic("boltstore.Open: "+path, err)
	}
	return s, nil
}

// checkDeclaredSize refuses, before bbolt opens it, a file shorter than
// the pages its newest valid meta page counts: it was truncated, and bbolt
// would panic (with the file lock held) or fault reading those pages. The
// meta layout is bbolt's (internal/common/meta.go, little-endian hosts):
// a 16-byte page header, then magic, version, page size, flags, root
// bucket (16), freelist, high-water page id, txid, FNV-64a checksum.
func checkDeclaredSize(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a new store
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	const header, metaLen = 16, 64
	readMeta := func(off int64) (pageSize uint32, pgid, txid uint64, ok bool) {
		b := make([]byte, metaLen)
		if _, err := f.ReadAt(b, off+header); err != nil {
			return 0, 0, 0, false
		}
		le := binary.LittleEndian
		if le.Uint32(b[0:4]) != 0xED0CDAED {
			return 0, 0, 0, false
		}
		h := fnv.New64a()
		h.Write(b[:56])
		if h.Sum64() != le.Uint64(b[56:64]) {
			return 0, 0, 0, false
		}
		return le.Uint32(b[8:12]), le.Uint64(b[40:48]), le.Uint64(b[48:56]), true
	}
	ps0, pg0, tx0, ok0 := readMeta(0)
	second := int64(os.Getpagesize())
	if ok0 {
		second = int64(ps0)
	}
	ps1, pg1, tx1, ok1 := readMeta(second)
	ps, pg := ps0, pg0
	switch {
	case !ok0 && !ok1:
		return nil // not a bbolt file we understand: bbolt's own checks answer
	case ok1 && (!ok0 || tx1 > tx0):
		ps, pg = ps1, pg1
	}
	if need := int64(pg) * int64(ps); fi.Size() < need {
		return fmt.Errorf("%w: %s is %d bytes but its pages need %d (truncated); %s", ErrCorrupt, path, fi.Size(), need, recovery(path))
	}
	return nil
}

func (s *Store) guard(fn func() error) error { return guard(s.path, fn) }

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close commits the lazy writes and releases the database (and its file
// lock).
func (s *Store) Close() error {
	ferr := s.flush()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore.Close: %s: %w", s.path, err)
	}
	if ferr != nil {
		return fmt.Errorf("boltstore.Close: %w", ferr)
	}
	return nil
}

// Commit commits the lazy writes now: a run calls it once its executions
// have ended, before it reports them, so that a record it reports is on
// disk (and a commit that fails is an error of the run, not a warning).
func (s *Store) Commit() error {
	if err := s.flush(); err != nil {
		return fmt.Errorf("boltstore.Commit: %w", err)
	}
	return nil
}

// lazy returns the pending record of id, if any.
func (s *Store) lazy(id string) ([]byte, bool) {
	s.omu.Lock()
	defer s.omu.Unlock()
	v, ok := s.pending[id]
	return v, ok
}

// flush commits the pending lazy writes (the timer's, and Close's).
func (s *Store) flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.omu.Lock()
	if s.flusher != nil {
		s.flusher.Stop()
		s.flusher = nil
	}
	n := len(s.pending)
	s.omu.Unlock()
	if n == 0 {
		return nil
	}
	err := s.guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error { return s.writePending(tx, "") })
	})
	if err != nil {
		return dbErr("boltstore.flush", err)
	}
	s.commits.Add(1)
	s.clearPending()
	return nil
}

// writePending puts every pending record but skip into tx. Callers hold
// wmu, so pending does not change until clearPending.
func (s *Store) writePending(tx *bolt.Tx, skip string) error {
	s.omu.Lock()
	defer s.omu.Unlock()
	b := tx.Bucket(bucketName)
	for id, v := range s.pending {
		if id == skip {
			continue
		}
		if err := b.Put([]byte(id), v); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) clearPending() {
	s.omu.Lock()
	defer s.omu.Unlock()
	clear(s.pending)
	if s.flusher != nil {
		s.flusher.Stop()
		s.flusher = nil
	}
}

// dbErr classifies a bbolt failure: a closed database or a full disk is
// the system's fault.
func dbErr(where string, err error) error {
	return fault.Systemic(where, err)
}

// Get returns a job or statestore.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (statestore.Job, error) {
	where := "boltstore.Get: " + id
	if err := ctx.Err(); err != nil {
		return statestore.Job{}, fmt.Errorf("%s: %w", where, err)
	}
	var (
		job   statestore.Job
		found bool
	)
	if v, ok := s.lazy(id); ok {
		if err := json.Unmarshal(v, &job); err != nil {
			return statestore.Job{}, fmt.Errorf("%s: %w", where, err)
		}
		return job, nil
	}
	var bad error
	err := s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketName).Get([]byte(id))
			if v == nil {
				return nil
			}
			found = true
			if err := json.Unmarshal(v, &job); err != nil {
				bad = fmt.Errorf("%s: %w: record %q is not a job (%v); %s", where, ErrCorrupt, id, err, recovery(s.path))
			}
			return nil
		})
	})
	switch {
	case bad != nil:
		return statestore.Job{}, bad
	case err != nil:
		return statestore.Job{}, dbErr(where, err)
	case !found:
		return statestore.Job{}, fmt.Errorf("%s: %w", where, statestore.ErrNotFound)
	}
	return job, nil
}

// versioned is job as Put and LazyPut store it, with Version expect+1;
// badExpect refuses expect with refusal (a format taking expect).
func versioned(ctx context.Context, where string, job statestore.Job, expect int64, badExpect bool, refusal string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	switch {
	case job.ID == "":
		return nil, fmt.Errorf("%s: %w", where, fault.Data(fault.InvalidInput, "job has no ID"))
	case badExpect:
		return nil, fmt.Errorf("%s: %w", where, fault.Data(fault.InvalidInput, refusal, expect))
	}
	job.Version = expect + 1
	val, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return val, nil
}

// Put stores job with Version expect+1 if the stored Version equals expect
// (expect 0: the job must not exist); otherwise statestore.ErrConflict.
func (s *Store) Put(ctx context.Context, job statestore.Job, expect int64) error {
	where := "boltstore.Put: " + job.ID
	val, err := versioned(ctx, where, job, expect, expect < 0, "negative expected version %d")
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var conflict error
	err = s.guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketName)
			var err error
			if conflict, err = s.check(tx, where, job.ID, expect); err != nil || conflict != nil {
				return err
			}
			// The lazy writes before this one ride in its commit.
			if err := s.writePending(tx, job.ID); err != nil {
				return err
			}
			return b.Put([]byte(job.ID), val)
		})
	})
	switch {
	case err != nil:
		return dbErr(where, err)
	case conflict != nil:
		return conflict
	}
	s.commits.Add(1)
	s.clearPending()
	return nil
}

// LazyPut is Put whose commit waits for the next Put (of any job), Close,
// or lazyFlushAfter, whichever comes first (statestore.LazyPutter). Get
// and List see it at once.
func (s *Store) LazyPut(ctx context.Context, job statestore.Job, expect int64) error {
	where := "boltstore.LazyPut: " + job.ID
	val, err := versioned(ctx, where, job, expect, expect <= 0, "a lazy write needs a stored version, got %d")
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var conflict error
	err = s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) (err error) {
			conflict, err = s.check(tx, where, job.ID, expect)
			return err
		})
	})
	switch {
	case err != nil:
		return dbErr(where, err)
	case conflict != nil:
		return conflict
	}
	s.omu.Lock()
	defer s.omu.Unlock()
	s.pending[job.ID] = val
	if s.flusher == nil {
		s.flusher = time.AfterFunc(s.flushAfter, func() {
			if err := s.flush(); err != nil {
				slog.Warn("state store: committing lazy writes failed; the next write retries", "db", s.path, "error", err)
			}
		})
	}
	return nil
}

// check is the compare-and-swap of a write of id expecting version expect,
// against the pending record if there is one, else the stored one: a
// statestore.ErrConflict, or err for a damaged record. Callers hold wmu.
func (s *Store) check(tx *bolt.Tx, where, id string, expect int64) (conflict, err error) {
	cur, ok := s.lazy(id)
	if !ok {
		cur = tx.Bucket(bucketName).Get([]byte(id))
	}
	var have int64
	if cur != nil {
		var v struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal(cur, &v); err != nil {
			return nil, fmt.Errorf("%w: record %q is not a job (%v); %s", ErrCorrupt, id, err, recovery(s.path))
		}
		have = v.Version
		if have == 0 {
			have = -1 // a stored record never matches "must not exist"
		}
	}
	if have != expect {
		return fmt.Errorf("%s: version is %d, expected %d: %w", where, max(have, 0), expect, statestore.ErrConflict), nil
	}
	return nil, nil
}

// List calls fn for every job with the given status ("" for all), in ID
// order. It reads in pages and calls fn outside any transaction, so fn may
// write; a job written during the listing may be seen in its old or new
// state, or (if its status changed) not at all. A record that is not a
// job is skipped with a warning (CorruptKeys lists them): one damaged
// record must not hide all the others.
func (s *Store) List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	where := "boltstore.List: " + string(status)
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		var page []statestore.Job
		more := false
		var corrupt []string
		err := s.guard(func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(bucketName).Cursor()
				k, v := c.First()
				if after != nil {
					k, v = c.Seek(after)
					if k != nil && bytes.Equal(k, after) {
						k, v = c.Next()
					}
				}
				for ; k != nil; k, v = c.Next() {
					if len(page) == listPage {
						more = true
						return nil
					}
					after = append(after[:0], k...)
					if lv, ok := s.lazy(string(k)); ok {
						v = lv // written lazily: newer than the stored record
					}
					if status != "" && !statusIs(v, status) {
						continue
					}
					var j statestore.Job
					if err := json.Unmarshal(v, &j); err != nil {
						corrupt = append(corrupt, string(k))
						continue
					}
					page = append(page, j)
				}
				return nil
			})
		})
		if err != nil {
			return dbErr(where, err)
		}
		for _, k := range corrupt {
			slog.Warn("state store: damaged record skipped", "key", k, "db", s.path, "fix", recovery(s.path))
		}
		for _, j := range page {
			if err := fn(j); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// CorruptKeys lists the keys of records that are not jobs.
func (s *Store) CorruptKeys(ctx context.Context) ([]string, error) {
	var keys []string
	err := s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketName).ForEach(func(k, v []byte) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				var j statestore.Job
				if json.Unmarshal(v, &j) != nil {
					keys = append(keys, string(k))
				}
				return nil
			})
		})
	})
	if err != nil {
		return keys, fmt.Errorf("boltstore.CorruptKeys: %w", err)
	}
	return keys, nil
}

// statusIs decodes only the status of a record.
func statusIs(v []byte, status statestore.Status) bool {
	var s struct {
		Status statestore.Status `json:"status"`
	}
	return json.Unmarshal(v, &s) == nil && s.Status == status
}
