package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

func TestClassify(t *testing.T) {
	pe := func(errno syscall.Errno) error { return &fs.PathError{Op: "open", Path: "/x", Err: errno} }
	for _, tc := range []struct {
		err  error
		tier fault.Tier
		text string
	}{
		{pe(syscall.ENOSPC), fault.TierSystemic, "DiskFull"},
		{pe(syscall.EDQUOT), fault.TierSystemic, "DiskFull"},
		{pe(syscall.EACCES), fault.TierSystemic, "AccessDenied"},
		{pe(syscall.EPERM), fault.TierSystemic, "AccessDenied"},
		{pe(syscall.EROFS), fault.TierSystemic, "AccessDenied"},
		{pe(syscall.EIO), fault.TierSystemic, "IOError"},
		{pe(syscall.EMFILE), fault.TierTransient, "too many open files"},
		{pe(syscall.ENAMETOOLONG), fault.TierDataSpecific, "InvalidInput"},
		{pe(syscall.ENOTDIR), fault.TierDataSpecific, "DestinationConflict"},
		{fault.Transient("body", errors.New("reset")), fault.TierTransient, "reset"},
		{errors.New("strange"), fault.TierUnknown, "strange"},
	} {
		err := classify("dirstore.Put: b/k", tc.err)
		if got := fault.TierOf(err); got != tc.tier {
			t.Errorf("classify(%v) tier = %q, want %q", tc.err, got, tc.tier)
		}
		if !strings.Contains(err.Error(), tc.text) || !strings.HasPrefix(err.Error(), "dirstore.Put: b/k: ") {
			t.Errorf("classify(%v) = %q, want it to start with the place and mention %q", tc.err, err, tc.text)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("classify(%v) lost the cause", tc.err)
		}
	}
}

// TestCrashBetweenRenames stops a commit after the sidecar rename and
// before the data rename: the old object must keep its metadata. (Sidecars
// are written where the file system takes no extended attributes; an
// entry on the file itself is renamed with the data, nothing in between.)
func TestCrashBetweenRenames(t *testing.T) {
	xattrEntries = false
	t.Cleanup(func() { xattrEntries = true })
	s, bdir := newBucketStore(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("v1"), Size: 2, Metadata: map[string]string{"v": "1"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(bdir, "k")
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	tmp.WriteString("v2 longer")
	e, err := finishTemp(tmp, "etag2", map[string]string{"v": "2"}, true)
	if err != nil {
		t.Fatal(err)
	}
	fi, cur, _, _ := s.describe(path)
	if cur == nil {
		t.Fatal("no entry for v1")
	}
	if err := (&sidecar{V: 1, Cur: e, Prev: cur}).write(path, true); err != nil {
		t.Fatal(err)
	}
	// "Crash": the data rename never happens.
	h, err := s.Head(ctx, "b", "k")
	if err != nil || h.Metadata["v"] != "1" || h.Size != fi.Size() {
		t.Errorf("after a crash between renames Head = %+v, %v; want v1 with its metadata", h, err)
	}
	// Recovery: the stale temporary is swept, a new write works.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(tmp.Name(), old, old)
	if n, err := s.SweepTemps(ctx, "b", time.Minute); err != nil || n != 1 {
		t.Errorf("SweepTemps = %d, %v", n, err)
	}
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("v3"), Size: 2, Metadata: map[string]string{"v": "3"}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(ctx, "b", "k"); h.Metadata["v"] != "3" {
		t.Errorf("after recovery Head = %+v", h)
	}
}

// TestLockWaitHonoursContext holds a key's lock through another Store (as
// another process would) and checks that a writer gives up when its context
// ends, then succeeds once the lock is released.
func TestLockWaitHonoursContext(t *testing.T) {
	root := t.TempDir()
	a, _ := New(root)
	b, _ := New(root)
	if err := a.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(root, "b")
	unlock, err := a.lock(context.Background(), bdir, "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = b.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("x"), Size: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put while another store holds the lock = %v, want DeadlineExceeded", err)
	}
	unlock()
	if _, err := b.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("x"), Size: 1}); err != nil {
		t.Errorf("Put after release: %v", err)
	}
}

func TestSidecarPathForLongNames(t *testing.T) {
	long := strings.Repeat("n", 254)
	p := sidecarPath(filepath.Join("/r/b", long))
	if len(filepath.Base(p)) > 255 || filepath.Dir(p) != filepath.Join("/r/b", metaDirName) {
		t.Errorf("sidecarPath = %s", p)
	}
	if got := sidecarPath("/r/b/x.tif"); got != "/r/b/.geomigrate-meta/x.tif.json" {
		t.Errorf("sidecarPath = %s", got)
	}
}

// TestPutsAndDeletesInSharedDirectoriesRace: Deletes prune empty parent
// directories while Puts create new children under them; no Put or Delete
// may fail. A lost race over a directory is not a conflict between keys
// (which would be routed as a data error).
func TestPutsAndDeletesInSharedDirectoriesRace(t *testing.T) {
	cases := []struct {
		name            string
		workers, rounds int
		key             func(w, i int) string
	}{
		{"a directory per key under a shared parent", 16, 200, func(w, i int) string { return fmt.Sprintf("a/b/c/d/e/w%d-%d/k", w, i) }},
		{"keys sharing staging job directories", 8, 150, func(w, i int) string { return fmt.Sprintf("_staging/job%d/sub/out-%d-%d.tif", i%3, w, i) }},
	}
	for _, c := range cases {
		if testing.Short() {
			c.rounds /= 5 // a fifth of the races; make test and make test-race run them all
		}
		t.Run(c.name, func(t *testing.T) {
			s, err := New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateBucket("b"); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, c.workers)
			for w := range c.workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range c.rounds {
						key := c.key(w, i)
						if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Body: strings.NewReader("x"), Size: 1}); err != nil {
							errs <- err
							return
						}
						if err := s.Delete(ctx, "b", key); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
