package dirstore_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// TestSymbolicLinksInABucket: a link whose target is inside the bucket is
// an object read through the link, but not "in place" (a reader in place
// would see a link, and sidecars beside the target rather than beside the
// link's name); a link that leaves the bucket is refused as unsafe by every
// read, so content outside the source tree is never read.
func TestSymbolicLinksInABucket(t *testing.T) {
	src, outside := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "real"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "real", "dem.tif"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret.tif"), []byte("outside"), 0o644))
	must(t, os.Symlink(filepath.Join("real", "dem.tif"), filepath.Join(src, "alias.tif")))
	must(t, os.Symlink("real", filepath.Join(src, "linked")))
	must(t, os.Symlink(filepath.Join(outside, "secret.tif"), filepath.Join(src, "escape.tif")))
	must(t, os.Symlink(outside, filepath.Join(src, "outdir")))
	s, _ := newStore(t, dirstore.WithBucketDir("src", src))
	ctx := context.Background()

	for _, tc := range []struct {
		key     string
		inPlace bool   // LocalPath succeeds
		body    string // "" when reads are refused
	}{
		{"real/dem.tif", true, "inside"},
		{"linked/dem.tif", true, "inside"}, // the file itself is no link
		{"alias.tif", false, "inside"},
		{"escape.tif", false, ""},
		{"outdir/secret.tif", false, ""},
	} {
		t.Run(tc.key, func(t *testing.T) {
			p, err := s.LocalPath("src", tc.key)
			if (err == nil) != tc.inPlace {
				t.Errorf("LocalPath = %s, %v; want in place %v", p, err, tc.inPlace)
			}
			rc, err := s.Open(ctx, "src", tc.key)
			if tc.body == "" {
				var d *fault.DataError
				if !errors.As(err, &d) || d.Code != fault.UnsafeSource {
					t.Fatalf("Open = %v, want a DataError %s", err, fault.UnsafeSource)
				}
				if _, err := s.Head(ctx, "src", tc.key); fault.CodeOf(err) != fault.UnsafeSource {
					t.Errorf("Head = %v, want %s", err, fault.UnsafeSource)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != tc.body {
				t.Errorf("Open read %q, want %q", b, tc.body)
			}
		})
	}
}
