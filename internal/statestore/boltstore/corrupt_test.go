package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// fill writes n jobs with enough history to span many pages.
func fill(t *testing.T, path string, n int) {
	t.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < n; i++ {
		j := statestoretest.FullJob(fmt.Sprintf("job-%04d", i))
		j.ErrorCause = strings.Repeat("x", 2000)
		if err := s.Put(context.Background(), j, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// openAndList opens the store and lists it, turning a panic into a test
// failure (a panic is what migrate and status did on a truncated file).
func openAndList(path string) (jobs int, corrupt []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	s, err := boltstore.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer s.Close()
	if err := s.List(context.Background(), "", func(statestore.Job) error { jobs++; return nil }); err != nil {
		return jobs, nil, err
	}
	corrupt, err = s.CorruptKeys(context.Background())
	return jobs, corrupt, err
}

func TestTruncatedFileIsAClearError(t *testing.T) {
	for _, keep := range []float64{0.5, 0.9, 0.25} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			fill(t, path, 400)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, int64(float64(fi.Size())*keep)); err != nil {
				t.Fatal(err)
			}
			jobs, _, err := openAndList(path)
			if err == nil {
				// Only bbolt's preallocated tail was cut: nothing may be missing.
				if jobs != 400 {
					t.Fatalf("a truncated state store listed %d of 400 jobs without error", jobs)
				}
				return
			}
			if strings.HasPrefix(err.Error(), "panic") {
				t.Fatal(err)
			}
			if !errors.Is(err, boltstore.ErrCorrupt) || !strings.Contains(err.Error(), "geomigrate state repair") {
				t.Errorf("error does not say the file is damaged and how to recover: %v", err)
			}
		})
	}
}

func TestCorruptRecordIsSkippedAndNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	fill(t, path, 10)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("jobs")).Put([]byte("job-0003"), []byte(`{"pk":"job-0003","status":`))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	jobs, corrupt, err := openAndList(path)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != 9 || len(corrupt) != 1 || corrupt[0] != "job-0003" {
		t.Errorf("listed %d jobs, corrupt %v; want 9 and [job-0003]", jobs, corrupt)
	}
	s := openT(t, path)
	if _, err := s.Get(context.Background(), "job-0003"); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Errorf("Get of the corrupt record: %v, want ErrCorrupt", err)
	}
	if _, err := s.Get(context.Background(), "job-0004"); err != nil {
		t.Errorf("Get of a sound record: %v", err)
	}
}

func openT(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Repair keeps every sound record of a damaged file and moves the file aside.
func TestRepair(t *testing.T) {
	for _, c := range []struct {
		name    string
		damage  func(t *testing.T, path string)
		minKept int
	}{
		{"corrupt record", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("jobs")).Put([]byte("job-0003"), []byte("{")) })
			db.Close()
		}, 399},
		{"truncated", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			os.Truncate(path, fi.Size()/2)
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			fill(t, path, 400)
			c.damage(t, path)
			rep, err := boltstore.Repair(path)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kept < c.minKept || rep.Kept+rep.Lost > 400 || rep.Backup == "" {
				t.Errorf("report %+v", rep)
			}
			if _, err := os.Stat(rep.Backup); err != nil {
				t.Errorf("damaged file not kept aside: %v", err)
			}
			jobs, corrupt, err := openAndList(path)
			if err != nil || len(corrupt) != 0 || jobs != rep.Kept {
				t.Errorf("after repair: %d jobs, corrupt %v, %v; report %+v", jobs, corrupt, err, rep)
			}
			t.Logf("%+v", rep)
		})
	}
}

// Garbage over pages in the middle of the file: an error, never a panic.
func TestOverwrittenPagesAreAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	fill(t, path, 400)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	garbage := make([]byte, 16<<10)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if _, err := f.WriteAt(garbage, fi.Size()*2/5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	jobs, corrupt, err := openAndList(path)
	if err != nil && strings.HasPrefix(err.Error(), "panic") {
		t.Fatal(err)
	}
	if err == nil && jobs+len(corrupt) != 400 {
		t.Errorf("no error, but %d jobs and %d damaged records of 400", jobs, len(corrupt))
	}
	if err != nil && !errors.Is(err, boltstore.ErrCorrupt) {
		t.Errorf("%v does not wrap ErrCorrupt", err)
	}
	t.Log(jobs, len(corrupt), err)
}
