package boltstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// RepairReport says what Repair did.
type RepairReport struct {
	Kept    int    // records copied into the new file
	Lost    int    // records found damaged (not JSON jobs) and left out
	Stopped string // why reading stopped before the end ("" when it did not)
	Backup  string // where the damaged file was moved
}

// Repair rebuilds the database at path from what can still be read of it:
// the file is first copied aside (path + ".damaged-<UTC time>"), every
// record of it that is a valid job is copied into a new file, which then
// replaces path. Reading stops at the first damaged page (a truncated file
// loses the records past the cut); damaged records are counted in Lost.
// The jobs lost only cost a re-check: HashCheck recognises an output
// already migrated by its metadata and skips it.
//
// Repair takes the file lock first, so it refuses to run while a
// migration holds the database (ErrLocked).
func Repair(path string) (RepairReport, error) {
	var rep RepairReport
	lock, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return rep, fmt.Errorf("boltstore.Repair: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return rep, fmt.Errorf("boltstore.Repair: %s: %w (%v)", path, ErrLocked, err)
	}
	rep.Backup = fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if err := copyFile(lock, rep.Backup); err != nil {
		return rep, fmt.Errorf("boltstore.Repair: keep a copy: %w", err)
	}

	type record struct{ k, v []byte }
	var kept []record
	err = guardRaw(rep.Backup, func() error {
		// Read-only: bbolt then does not load the freelist, which is the
		// first thing a truncated file breaks.
		db, err := bolt.Open(rep.Backup, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketName)
			if b == nil {
				return errors.New("no jobs bucket")
			}
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				var j statestore.Job
				if json.Unmarshal(v, &j) != nil || j.ID != string(k) {
					rep.Lost++
					continue
				}
				kept = append(kept, record{append([]byte(nil), k...), append([]byte(nil), v...)})
			}
			return nil
		})
	})
	if err != nil {
		rep.Stopped = err.Error()
	}

	tmp := path + ".repair-tmp"
	os.Remove(tmp)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return rep, fmt.Errorf("boltstore.Repair: new file: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName)
		if err != nil {
			return err
		}
		for _, r := range kept {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("boltstore.Repair: write new file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return rep, fmt.Errorf("boltstore.Repair: %w", err)
	}
	rep.Kept = len(kept)
	return rep, nil
}

func copyFile(src *os.File, dst string) error {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
