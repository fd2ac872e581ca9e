package dirstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// TestCopiedBucketKeepsItsMetadata copies a bucket directory as cp -a
// does (bytes, entry, mtime kept; new inodes) and reads it with a new
// Store: an object whose bytes are still those its entry describes keeps
// its metadata, one changed behind the store's back (same size, or not)
// loses it. The entry is written back onto the copy, so the second read
// matches it by inode.
func TestCopiedBucketKeepsItsMetadata(t *testing.T) {
	for _, sidecars := range []bool{false, true} {
		name := "xattr"
		if sidecars {
			name = "sidecar"
		}
		t.Run(name, func(t *testing.T) {
			xattrEntries = !sidecars
			t.Cleanup(func() { xattrEntries = true })
			s, bdir := newBucketStore(t)
			ctx := context.Background()
			meta := map[string]string{"sha256": "abc", "source-key": "src/a.tif"}
			for _, k := range []string{"same.tif", "flipped.tif", "shorter.tif"} {
				if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "out/" + k, Body: strings.NewReader("the bytes of " + k), Size: -1, Metadata: meta}); err != nil {
					t.Fatal(err)
				}
			}
			xattrEntries = true // a read writes the entry back where it can
			copied := filepath.Join(filepath.Dir(bdir), "copy")
			if b, err := exec.Command("cp", "-a", bdir, copied).CombinedOutput(); err != nil {
				t.Fatalf("cp -a: %v\n%s", err, b)
			}
			// Same size, other bytes; and a shorter file.
			if err := os.WriteFile(filepath.Join(copied, "out/flipped.tif"), []byte("THE bytes of flipped.tif"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(copied, "out/shorter.tif"), []byte("bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := New("", WithBucketDir("b", copied))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				key  string
				kept bool
			}{{"out/same.tif", true}, {"out/flipped.tif", false}, {"out/shorter.tif", false}} {
				for read := 1; read <= 2; read++ {
					h, err := c.Head(ctx, "b", tc.key)
					if err != nil {
						t.Fatal(err)
					}
					if got := h.Metadata["source-key"] == "src/a.tif"; got != tc.kept {
						t.Errorf("%s, read %d: metadata %v, want kept=%v", tc.key, read, h.Metadata, tc.kept)
					}
				}
				if !tc.kept {
					continue
				}
				// The second read found the entry by the copy's inode.
				path := filepath.Join(copied, filepath.FromSlash(tc.key))
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if xe := readXattrEntry(path); xe == nil || xe.id() != fileIDOf(fi) {
					t.Errorf("%s: the entry on the copy does not name its inode: %+v", tc.key, xe)
				}
			}
		})
	}
}
