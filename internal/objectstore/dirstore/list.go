package dirstore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/geomigrate/geomigrate/internal/dirindex"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// List calls fn for every object whose key starts with prefix, in key
// (byte) order, descending into subdirectories. Objects carry Bucket, Key,
// Size, ETag and Modified; like S3's ListObjectsV2, no user metadata. An
// error from fn stops the listing and is returned as is.
func (s *Store) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	const op = "List"
	w := where(op, bucket, prefix)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", w, err)
	}
	if strings.IndexByte(prefix, 0) >= 0 {
		return fmt.Errorf("%s: %w", w, fault.Data(fault.InvalidInput, "prefix contains NUL"))
	}
	bdir, err := s.bucketDir(op, bucket, prefix)
	if err != nil {
		return err
	}
	dirPart, rest := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dirPart, rest = prefix[:i], prefix[i+1:]
	}
	start, base := bdir, ""
	if dirPart != "" {
		if checkKey(dirPart) != nil {
			return nil // no valid key starts with this prefix
		}
		start, base = filepath.Join(bdir, filepath.FromSlash(dirPart)), dirPart+"/"
	}
	scratch, err := s.scratchObjects(ctx, w, bucket, bdir, prefix)
	if err != nil {
		return err
	}
	if len(scratch) == 0 {
		return s.walk(ctx, w, bucket, start, base, rest, fn)
	}
	emit, flush := mergeScratch(scratch, fn)
	if err := s.walk(ctx, w, bucket, start, base, rest, emit); err != nil {
		return err
	}
	return flush()
}

func (s *Store) walk(ctx context.Context, w, bucket, dir, base, namePrefix string, fn func(objectstore.Object) error) error {
	// Only the entries starting with namePrefix: a sidecar lookup in a
	// directory of 10,000 sources reads none of the others.
	ents, err := dirindex.Entries(dir, namePrefix)
	if err != nil {
		if notFound(err) {
			return nil
		}
		return classify(w, err)
	}
	type item struct {
		name, sortKey string
		dir           bool
	}
	items := make([]item, 0, len(ents))
	for _, de := range ents {
		name := de.Name
		if strings.HasPrefix(name, reservedPrefix) {
			continue
		}
		switch {
		case de.Type.IsDir():
			// "a/..." sorts after "a-..." and before "a0": compare as "a/".
			items = append(items, item{name, name + "/", true})
		case de.Type.IsRegular():
			items = append(items, item{name, name, false})
		case de.Type&fs.ModeSymlink != 0:
			// Symlinked files (common in source trees) are objects;
			// symlinked directories are skipped so a cycle cannot trap us.
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
				items = append(items, item{name, name, false})
			}
		}
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
		path := filepath.Join(dir, it.name)
		if it.dir {
			if err := s.walk(ctx, w, bucket, path, base+it.name+"/", "", fn); err != nil {
				return err
			}
			continue
		}
		fi, e, exists, err := s.describe(path)
		if err != nil {
			return classify(w, err)
		}
		if !exists || !fi.Mode().IsRegular() {
			continue // deleted while we listed
		}
		obj := objectOf(bucket, base+it.name, fi, e)
		obj.Metadata = nil
		if err := fn(obj); err != nil {
			return err
		}
	}
	return nil
}
