package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/geomigrate/geomigrate/internal/breaker"
)

// GetBreaker returns a dependency's breaker record or breaker.ErrNotFound.
func (s *Store) GetBreaker(ctx context.Context, dependency string) (breaker.Record, error) {
	where := "boltstore.GetBreaker: " + dependency
	if err := ctx.Err(); err != nil {
		return breaker.Record{}, fmt.Errorf("%s: %w", where, err)
	}
	var (
		rec   breaker.Record
		found bool
		bad   error
	)
	err := s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(breakerBucket).Get([]byte(dependency))
			if v == nil {
				return nil
			}
			found = true
			bad = json.Unmarshal(v, &rec)
			return nil
		})
	})
	switch {
	case err != nil:
		return breaker.Record{}, dbErr(where, err)
	case !found:
		return breaker.Record{}, fmt.Errorf("%s: %w", where, breaker.ErrNotFound)
	case bad != nil:
		return breaker.Record{}, fmt.Errorf("%s: %w: record is not a breaker (%v)", where, ErrCorrupt, bad)
	}
	return rec, nil
}

// PutBreaker stores rec with Version expect+1 if the stored Version equals
// expect (0: the record must not exist); otherwise breaker.ErrConflict.
// The read and the write share one bbolt Update transaction, which bbolt
// serialises.
func (s *Store) PutBreaker(ctx context.Context, rec breaker.Record, expect int64) error {
	where := "boltstore.PutBreaker: " + rec.Dependency
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if rec.Dependency == "" || expect < 0 {
		return fmt.Errorf("%s: record without dependency or negative expected version %d", where, expect)
	}
	rec.Version = expect + 1
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var conflict error
	err = s.guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(breakerBucket)
			var have int64 = -1
			if cur := b.Get([]byte(rec.Dependency)); cur != nil {
				var v struct {
					Version int64 `json:"version"`
				}
				if json.Unmarshal(cur, &v) == nil {
					have = v.Version
				}
			} else {
				have = 0
			}
			if have != expect {
				conflict = fmt.Errorf("%s: version is %d, expected %d: %w", where, max(have, 0), expect, breaker.ErrConflict)
				return nil
			}
			return b.Put([]byte(rec.Dependency), val)
		})
	})
	switch {
	case err != nil:
		return dbErr(where, err)
	case conflict != nil:
		return conflict
	}
	return nil
}

// ListBreakers calls fn for every breaker record, in dependency order;
// an unreadable record is skipped (status must not fail on one).
func (s *Store) ListBreakers(ctx context.Context, fn func(breaker.Record) error) error {
	var recs []breaker.Record
	err := s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(breakerBucket)
			if b == nil { // a database opened read-only before breakers existed
				return nil
			}
			return b.ForEach(func(_, v []byte) error {
				var r breaker.Record
				if json.Unmarshal(v, &r) == nil {
					recs = append(recs, r)
				}
				return ctx.Err()
			})
		})
	})
	if err != nil {
		return dbErr("boltstore.ListBreakers", err)
	}
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
