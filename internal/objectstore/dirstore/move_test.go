package dirstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// newBucketStore is a store with one bucket, "b", and that bucket's
// directory.
func newBucketStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	return s, filepath.Join(root, "b")
}

func readObject(t *testing.T, s *Store, key string) (objectstore.Object, string) {
	t.Helper()
	h, err := s.Head(context.Background(), "b", key)
	if err != nil {
		t.Fatalf("Head %s: %v", key, err)
	}
	rc, err := s.Open(context.Background(), "b", key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return h, string(b)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestPutFileAndMove: a file put in by rename and then moved to its final
// key is the same object as Put and Copy would make (bytes, MD5 ETag,
// replaced metadata), its inode is never copied, the source key is gone,
// and the conditions hold.
func TestPutFileAndMove(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, md5 string
		scratch   bool
	}{
		{"store hashes", "", false},
		{"caller hashes", md5Hex("cog bytes"), false},
		{"scratch", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bdir := newBucketStore(t)
			src := filepath.Join(t.TempDir(), "out.tif")
			if err := os.WriteFile(src, []byte("cog bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(src)
			obj, err := s.PutFile(ctx, objectstore.PutFileRequest{Bucket: "b", Key: "_staging/j/out.tif", Path: src,
				Metadata: map[string]string{"Stage": "1"}, MD5: tc.md5, Scratch: tc.scratch})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the put file is still at %s (%v)", src, err)
			}
			staged, err := os.Stat(writePath(bdir, "_staging/j/out.tif", filepath.Join(bdir, "_staging/j/out.tif"), tc.scratch))
			if err != nil || !os.SameFile(before, staged) {
				t.Errorf("staged file is not the put file renamed (%v)", err)
			}
			if obj.ETag != md5Hex("cog bytes") || obj.Size != 9 || obj.Metadata["stage"] != "1" {
				t.Errorf("PutFile = %+v", obj)
			}
			moved, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "_staging/j/out.tif", DstBucket: "b", DstKey: "final/out.tif",
				Metadata: map[string]string{"src-sha256": "abc"}, IfNoneMatch: true})
			if err != nil {
				t.Fatal(err)
			}
			h, body := readObject(t, s, "final/out.tif")
			if body != "cog bytes" || h.ETag != md5Hex("cog bytes") || h.Metadata["src-sha256"] != "abc" || h.Metadata["stage"] != "" || moved.ETag != h.ETag {
				t.Errorf("moved object = %+v %q (Move said %+v)", h, body, moved)
			}
			final, _ := os.Stat(filepath.Join(bdir, "final/out.tif"))
			if !os.SameFile(before, final) {
				t.Error("Move copied the bytes instead of renaming them")
			}
			if _, err := s.Head(ctx, "b", "_staging/j/out.tif"); !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("source after Move: %v, want not found", err)
			}
			if _, err := os.Stat(filepath.Join(bdir, "_staging")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the emptied staging directories are left (%v)", err)
			}
			// Conditions: the destination exists now, and the source is gone.
			other := filepath.Join(t.TempDir(), "other")
			os.WriteFile(other, []byte("other"), 0o644)
			if _, err := s.PutFile(ctx, objectstore.PutFileRequest{Bucket: "b", Key: "s2", Path: other}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s2", DstBucket: "b", DstKey: "final/out.tif", IfNoneMatch: true}); !errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Errorf("Move onto an existing key with IfNoneMatch: %v", err)
			}
			if _, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s2", DstBucket: "b", DstKey: "final/out.tif", IfMatch: "nope"}); !errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Errorf("Move with a wrong IfMatch: %v", err)
			}
			if _, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s2", DstBucket: "b", DstKey: "final/out.tif", IfMatch: h.ETag}); err != nil {
				t.Errorf("Move with the right IfMatch: %v", err)
			}
			if h, body := readObject(t, s, "final/out.tif"); body != "other" || h.ETag != md5Hex("other") {
				t.Errorf("overwritten object = %+v %q", h, body)
			}
			if _, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s2", DstBucket: "b", DstKey: "x"}); !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("Move of a moved key: %v, want not found", err)
			}
		})
	}
}

// TestMoveOfAFileTheStoreDidNotWrite copies it (computing its MD5) and
// deletes it, as Copy and Delete would.
func TestMoveOfAFileTheStoreDidNotWrite(t *testing.T) {
	s, bdir := newBucketStore(t)
	if err := os.WriteFile(filepath.Join(bdir, "plain"), []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(context.Background(), objectstore.CopyRequest{SrcBucket: "b", SrcKey: "plain", DstBucket: "b", DstKey: "dst", Metadata: map[string]string{"m": "1"}}); err != nil {
		t.Fatal(err)
	}
	if h, body := readObject(t, s, "dst"); body != "plain" || h.ETag != md5Hex("plain") || h.Metadata["m"] != "1" {
		t.Errorf("moved = %+v %q", h, body)
	}
	if _, err := os.Stat(filepath.Join(bdir, "plain")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("source left: %v", err)
	}
}

// TestFsyncsPerWrite pins what each write costs in fsync(2) calls. With
// the entry on the file (an extended attribute): a durable Put, PutFile
// or Copy 2 (data with its entry, data directory), a scratch one none, a
// Move 2 (the data it did not sync as scratch, with its entry; the
// destination directory). With sidecars (file systems without user
// attributes) 4 each: the sidecar file and its directory besides. A
// staged-then-promoted output is so 2 (4) instead of the 4 (8) of Put and
// Copy. Deleting a scratch object syncs nothing, a durable one its
// directory.
func TestFsyncsPerWrite(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		xattrs bool
	}{{"entry attribute", true}, {"sidecar", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s, bdir := newBucketStore(t)
			xattrEntries = tc.xattrs
			t.Cleanup(func() { xattrEntries = true })
			durable := int64(4)
			if tc.xattrs {
				if !xattrsWork(t, bdir) {
					t.Skip("the file system takes no user extended attributes")
				}
				durable = 2
			}
			file := func(body string) string {
				p := filepath.Join(t.TempDir(), "f")
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}
			count := func(name string, want int64, fn func() error) {
				t.Helper()
				n := syncs.Load()
				if err := fn(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := syncs.Load() - n; got != want {
					t.Errorf("%s: %d fsyncs, want %d", name, got, want)
				}
			}
			put := func(key string, scratch bool) func() error {
				return func() error {
					_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Body: strings.NewReader("x"), Size: 1, Scratch: scratch})
					return err
				}
			}
			count("Put", durable, put("p", false))
			count("Put scratch", 0, put("_staging/p", true))
			count("PutFile", durable, func() error {
				_, err := s.PutFile(ctx, objectstore.PutFileRequest{Bucket: "b", Key: "f", Path: file("y")})
				return err
			})
			count("PutFile scratch", 0, func() error {
				_, err := s.PutFile(ctx, objectstore.PutFileRequest{Bucket: "b", Key: "_staging/f", Path: file("y"), Scratch: true})
				return err
			})
			count("Move", durable, func() error {
				_, err := s.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "_staging/f", DstBucket: "b", DstKey: "out/f", IfNoneMatch: true,
					Metadata: map[string]string{"m": "1"}})
				return err
			})
			count("Copy", durable, func() error {
				_, err := s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "_staging/p", DstBucket: "b", DstKey: "out/p", IfNoneMatch: true})
				return err
			})
			count("Delete scratch", 0, func() error { return s.Delete(ctx, "b", "_staging/p") })
			count("Delete", 1, func() error { return s.Delete(ctx, "b", "p") })
			count("Delete of a moved key", 0, func() error { return s.Delete(ctx, "b", "_staging/f") })
			// Either way a fresh Store (another process) reads the entries.
			fresh, err := New(filepath.Dir(bdir))
			if err != nil {
				t.Fatal(err)
			}
			if h, err := fresh.Head(ctx, "b", "out/f"); err != nil || h.ETag != md5Hex("y") || h.Metadata["m"] != "1" {
				t.Errorf("moved object from a fresh Store = %+v, %v", h, err)
			}
			_, serr := os.Stat(filepath.Join(bdir, "out", metaDirName))
			if got := serr == nil; got != !tc.xattrs {
				t.Errorf("sidecar directory present: %v, want %v", got, !tc.xattrs)
			}
		})
	}
}

// xattrsWork reports whether the file system under dir takes user
// extended attributes.
func xattrsWork(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return setXattrEntry(f, &entry{})
}

// A scratch object's entry lives in the writing Store, not in a sidecar: the
// writer sees its ETag and metadata and moves it by rename; another Store
// on the same root (a later process taking the job over) sees a file the
// store did not write, and Move copies it with an MD5 ETag.
func TestScratchEntryInMemory(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		sameStore  bool
		wantRename bool
	}{
		{"writer moves by rename", true, true},
		{"another process copies", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, bdir := newBucketStore(t)
			body := "scratch body"
			sum := md5.Sum([]byte(body))
			etag := hex.EncodeToString(sum[:])
			if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "_staging/j/x", Body: strings.NewReader(body),
				Size: int64(len(body)), Metadata: map[string]string{"Stage": "1"}, Scratch: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(bdir, "_staging", "j", metaDirName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("scratch Put made a sidecar directory (stat: %v)", err)
			}
			reader := s
			if !tc.sameStore {
				var err error
				if reader, err = New(filepath.Dir(bdir)); err != nil {
					t.Fatal(err)
				}
			}
			h, err := reader.Head(ctx, "b", "_staging/j/x")
			if err != nil {
				t.Fatal(err)
			}
			if got := h.ETag == etag && h.Metadata["stage"] == "1"; got != tc.sameStore {
				t.Errorf("Head = %+v; described by the writer's entry: %v, want %v", h, got, tc.sameStore)
			}
			before, err := os.Stat(filepath.Join(bdir, scratchDirName, "_staging%2Fj%2Fx"))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := reader.Move(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "_staging/j/x", DstBucket: "b", DstKey: "out/x",
				Metadata: map[string]string{"Final": "1"}, IfNoneMatch: true})
			if err != nil {
				t.Fatal(err)
			}
			if obj.ETag != etag {
				t.Errorf("Move ETag = %s, want the MD5 %s", obj.ETag, etag)
			}
			after, err := os.Stat(filepath.Join(bdir, "out", "x"))
			if err != nil {
				t.Fatal(err)
			}
			if got := os.SameFile(before, after); got != tc.wantRename {
				t.Errorf("moved by rename: %v, want %v", got, tc.wantRename)
			}
			// The final object is durable: a fresh Store reads its metadata.
			fresh, err := New(filepath.Dir(bdir))
			if err != nil {
				t.Fatal(err)
			}
			if h, err := fresh.Head(ctx, "b", "out/x"); err != nil || h.ETag != etag || h.Metadata["final"] != "1" {
				t.Errorf("final object from a fresh Store = %+v, %v", h, err)
			}
			if err := reader.Delete(ctx, "b", "_staging/j/x"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(bdir, "_staging")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("staging directory left behind (stat: %v)", err)
			}
			if n := len(reader.scratch); n != 0 {
				t.Errorf("%d scratch entries kept after the move", n)
			}
		})
	}
}
