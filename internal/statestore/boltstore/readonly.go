package boltstore

import (
	"errors"
	"fmt"
	"os"

	"github.com/geomigrate/geomigrate/internal/fault"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// OpenReadOnly opens an existing database for reading only: nothing is
// created or written, and the file lock is shared, so a dry run (geomigrate
// plan) can consult a destination's state store; a run writing to it holds
// the lock exclusively and makes this wait, then fail with ErrLocked. A
// missing file is an error wrapping os.ErrNotExist. Put on the store fails.
func OpenReadOnly(path string, opts ...Option) (*Store, error) {
	o := options{timeout: DefaultTimeout}
	for _, fn := range opts {
		fn(&o)
	}
	if o.timeout <= 0 {
		o.timeout = DefaultTimeout
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("boltstore.OpenReadOnly: %w", err)
	}
	if err := checkDeclaredSize(path); err != nil {
		return nil, fault.Systemic("boltstore.OpenReadOnly", err)
	}
	var db *bolt.DB
	err := guard(path, func() (err error) {
		db, err = bolt.Open(path, 0o400, &bolt.Options{Timeout: o.timeout, ReadOnly: true})
		return err
	})
	switch {
	case err == nil:
		return &Store{db: db, path: path}, nil
	case errors.Is(err, ErrCorrupt):
	case errors.Is(err, bolterrors.ErrTimeout):
		err = fmt.Errorf("%w: gave up after %s: %w", ErrLocked, o.timeout, err)
	case errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch):
		err = fmt.Errorf("%w: %s: %w; %s", ErrCorrupt, path, err, recovery(path))
	}
	return nil, fault.Systemic("boltstore.OpenReadOnly: "+path, err)
}
