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
package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// DefaultTimeout is how long Open waits for another process to release the
// database.
const DefaultTimeout = 5 * time.Second

var bucketName = []byte("jobs")

// ErrLocked is wrapped when another process holds the database.
var ErrLocked = errors.New("state database is in use by another process (one process owns it at a time)")

// listPage is how many jobs List reads per read transaction. The callback
// runs outside transactions, so it may write.
const listPage = 256

// Store is a statestore.Backend on bbolt.
type Store struct {
	db   *bolt.DB
	path string
}

var _ statestore.Backend = (*Store)(nil)

type options struct {
	timeout time.Duration
	noSync  bool
}

// Option configures Open.
type Option func(*options)

// WithTimeout sets how long Open waits for the file lock (0: DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithNoSync skips fsync on commit: faster, and a machine crash can lose the
// last writes. For tests and throwaway runs only.
func WithNoSync() Option { return func(o *options) { o.noSync = true } }

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
			return nil, fault.Systemic("boltstore.Open "+path, err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.timeout, NoSync: o.noSync})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fault.Systemic("boltstore.Open "+path,
				fmt.Errorf("%w: gave up after %s: %w", ErrLocked, o.timeout, err))
		}
		return nil, fault.Systemic("boltstore.Open "+path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	}); err != nil {
		db.Close()
		return nil, fault.Systemic("boltstore.Open "+path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close releases the database (and its file lock).
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore.Close %s: %w", s.path, err)
	}
	return nil
}

// dbErr classifies a bbolt failure: a closed database or a full disk is
// the system's fault.
func dbErr(where string, err error) error {
	return fault.Systemic(where, err)
}

// Get returns a job or statestore.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (statestore.Job, error) {
	where := "boltstore.Get " + id
	if err := ctx.Err(); err != nil {
		return statestore.Job{}, fmt.Errorf("%s: %w", where, err)
	}
	var (
		job   statestore.Job
		found bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketName).Get([]byte(id))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &job)
	})
	switch {
	case err != nil:
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) {
			return statestore.Job{}, fmt.Errorf("%s: corrupt record: %w", where, err)
		}
		return statestore.Job{}, dbErr(where, err)
	case !found:
		return statestore.Job{}, fmt.Errorf("%s: %w", where, statestore.ErrNotFound)
	}
	return job, nil
}

// Put stores job with Version expect+1 if the stored Version equals expect
// (expect 0: the job must not exist); otherwise statestore.ErrConflict.
func (s *Store) Put(ctx context.Context, job statestore.Job, expect int64) error {
	where := "boltstore.Put " + job.ID
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch {
	case job.ID == "":
		return fmt.Errorf("%s: %w", where, fault.Data(fault.InvalidInput, "job has no ID"))
	case expect < 0:
		return fmt.Errorf("%s: %w", where, fault.Data(fault.InvalidInput, "negative expected version %d", expect))
	}
	job.Version = expect + 1
	val, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var conflict error
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName)
		var have int64
		if cur := b.Get([]byte(job.ID)); cur != nil {
			var v struct {
				Version int64 `json:"version"`
			}
			if err := json.Unmarshal(cur, &v); err != nil {
				return fmt.Errorf("corrupt record: %w", err)
			}
			have = v.Version
			if have == 0 {
				have = -1 // a stored record never matches "must not exist"
			}
		}
		if have != expect {
			conflict = fmt.Errorf("%s: version is %d, expected %d: %w", where, max(have, 0), expect, statestore.ErrConflict)
			return nil
		}
		return b.Put([]byte(job.ID), val)
	})
	switch {
	case err != nil:
		return dbErr(where, err)
	case conflict != nil:
		return conflict
	}
	return nil
}

// List calls fn for every job with the given status ("" for all), in ID
// order. It reads in pages and calls fn outside any transaction, so fn may
// write; a job written during the listing may be seen in its old or new
// state, or (if its status changed) not at all.
func (s *Store) List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	where := "boltstore.List " + string(status)
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		var page []statestore.Job
		more := false
		err := s.db.View(func(tx *bolt.Tx) error {
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
				if status != "" && !statusIs(v, status) {
					continue
				}
				var j statestore.Job
				if err := json.Unmarshal(v, &j); err != nil {
					return fmt.Errorf("corrupt record %q: %w", k, err)
				}
				page = append(page, j)
			}
			return nil
		})
		if err != nil {
			return dbErr(where, err)
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

// statusIs decodes only the status of a record.
func statusIs(v []byte, status statestore.Status) bool {
	var s struct {
		Status statestore.Status `json:"status"`
	}
	return json.Unmarshal(v, &s) == nil && s.Status == status
}
