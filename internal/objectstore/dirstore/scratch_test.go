package dirstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

func TestEscapeKeyRoundTrip(t *testing.T) {
	for _, key := range []string{"a", "a/b/c.tif", "100%/x", "%2F/%25", "a%", "_staging/0fa6-ee48/incoming/point.parquet"} {
		name := escapeKey(key)
		if strings.Contains(name, "/") {
			t.Errorf("escapeKey(%q) = %q has a '/'", key, name)
		}
		if got, ok := unescapeKey(name); !ok || got != key {
			t.Errorf("unescapeKey(escapeKey(%q)) = %q, %v", key, got, ok)
		}
	}
	for _, name := range []string{"a%", "a%2", "a%41"} {
		if _, ok := unescapeKey(name); ok {
			t.Errorf("unescapeKey(%q) accepted a name escapeKey never makes", name)
		}
	}
}

// Scratch objects live in the bucket's one scratch directory: no directory
// of the key is made, they are read, listed (in key order among the other
// objects), replaced and deleted by key as any object, and a key holds one
// file whichever way it was last written.
func TestScratchObjectsInOneDirectory(t *testing.T) {
	ctx := context.Background()
	s, bdir := newBucketStore(t)
	put := func(key, body string, scratch bool) {
		t.Helper()
		if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Body: strings.NewReader(body), Size: int64(len(body)), Scratch: scratch}); err != nil {
			t.Fatalf("Put %s: %v", key, err)
		}
	}
	list := func(prefix string) []string {
		t.Helper()
		var keys []string
		if err := s.List(ctx, "b", prefix, func(o objectstore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	put("_staging/j/in/a.tif", "a", true)
	put("_staging/j/in/c.tif", "c", true)
	put("_staging/j/in/b.tif", "b", false) // durable: nested, between the two
	put("_staging/j/in-x", "x", true)
	if _, err := os.Stat(filepath.Join(bdir, "_staging", "j", "in", "a.tif")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch Put wrote under the key's directories (%v)", err)
	}
	if h, body := readObject(t, s, "_staging/j/in/a.tif"); body != "a" || h.ETag != md5Hex("a") {
		t.Errorf("scratch object = %+v %q", h, body)
	}
	if p, err := s.LocalPath("b", "_staging/j/in/c.tif"); err != nil || filepath.Dir(p) != filepath.Join(bdir, scratchDirName) {
		t.Errorf("LocalPath = %s, %v", p, err)
	}
	want := []string{"_staging/j/in-x", "_staging/j/in/a.tif", "_staging/j/in/b.tif", "_staging/j/in/c.tif"}
	if got := list("_staging/"); !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if got := list("_staging/j/in/"); !slices.Equal(got, want[1:]) {
		t.Errorf("List of a directory = %v, want %v", got, want[1:])
	}
	if got := list("zzz"); len(got) != 0 {
		t.Errorf("List of an empty prefix = %v", got)
	}

	// Replacing moves the key between the two places; one file remains.
	put("_staging/j/in/b.tif", "b2", true)
	put("_staging/j/in/a.tif", "a2", false)
	if got := list("_staging/"); !slices.Equal(got, want) {
		t.Errorf("List after replacing = %v, want %v", got, want)
	}
	if _, body := readObject(t, s, "_staging/j/in/b.tif"); body != "b2" {
		t.Errorf("b after a scratch write over a durable one = %q", body)
	}
	if _, body := readObject(t, s, "_staging/j/in/a.tif"); body != "a2" {
		t.Errorf("a after a durable write over a scratch one = %q", body)
	}
	if _, err := os.Stat(filepath.Join(bdir, scratchDirName, escapeKey("_staging/j/in/a.tif"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replaced scratch file is left (%v)", err)
	}
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "_staging/j/in/c.tif", Body: strings.NewReader("no"), Size: 2, IfNoneMatch: true}); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("IfNoneMatch over a scratch object: %v", err)
	}

	for _, k := range want {
		if err := s.Delete(ctx, "b", k); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Head(ctx, "b", k); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head %s after Delete: %v", k, err)
		}
	}
	if got := list(""); len(got) != 0 {
		t.Errorf("List after deleting everything = %v", got)
	}
	if _, err := os.Stat(filepath.Join(bdir, "_staging")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging directories left (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(bdir, scratchDirName)); err != nil {
		t.Errorf("the scratch directory was pruned: %v", err)
	}

	// A key too long for one file name keeps the nested layout.
	long := "_staging/" + strings.Repeat("d/", 100) + "f"
	put(long, "long", true)
	if _, err := os.Stat(filepath.Join(bdir, filepath.FromSlash(long))); err != nil {
		t.Errorf("long scratch key not nested: %v", err)
	}
	if _, body := readObject(t, s, long); body != "long" {
		t.Errorf("long scratch key = %q", body)
	}
}
