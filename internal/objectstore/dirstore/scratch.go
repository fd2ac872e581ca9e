package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/dirindex"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// scratchDirName is the one directory per bucket that holds scratch
// objects (staging writes), each under its key escaped into one file name.
// A staging key names a directory per job ("_staging/<hash>/<dir>/<name>"),
// and making and removing those directories for every file was the
// largest part of a tiny file's cost: a new directory's inode is placed
// away from its parent's, so the mkdir, the first file in it and its
// removal each touch cold inode tables. The scratch directory is made once
// and never pruned. Its files are found by key (the name is the escaped
// key), so another process sees them as it saw the nested files
// (docs/decisions/0084).
const scratchDirName = ".geomigrate-scratch"

// maxNameLen is the longest file name Linux file systems take.
const maxNameLen = 255

var keyEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// escapeKey maps a key onto one file name ("%" and "/" escaped); it keeps
// prefixes: the names of the keys starting with p start with escapeKey(p).
func escapeKey(key string) string { return keyEscaper.Replace(key) }

// unescapeKey reverses escapeKey; ok is false for a name escapeKey does
// not make.
func unescapeKey(name string) (key string, ok bool) {
	if !strings.Contains(name, "%") {
		return name, true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		switch {
		case strings.HasPrefix(name[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(name[i:], "%2F"):
			b.WriteByte('/')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// scratchPath is the file of key's scratch version in bucket directory
// bdir, or "" when its escaped name is too long for one file name (such a
// scratch write keeps the nested layout).
func scratchPath(bdir, key string) string {
	name := escapeKey(key)
	if len(name) > maxNameLen {
		return ""
	}
	return filepath.Join(bdir, scratchDirName, name)
}

// located returns the file that holds key now: its scratch file when there
// is one, else the nested path. A writer keeps at most one of the two
// (commit removes the other under the key's lock).
func located(bdir, key, nested string) string {
	if sp := scratchPath(bdir, key); sp != "" {
		if _, err := os.Lstat(sp); err == nil {
			return sp
		}
	}
	return nested
}

// otherPath is the location of key that a write to path must leave empty:
// the nested path for a scratch write, the scratch file for any other.
func otherPath(bdir, key, nested, path string) string {
	if path != nested {
		return nested
	}
	return scratchPath(bdir, key)
}

// removeOther removes what a committed write replaced at key's other
// location (see otherPath), with its sidecar and in-memory entry, and
// prunes the nested directories it leaves empty. After a durable write a
// removed scratch file's removal is made durable too: a crash must not
// bring back a stale scratch file, which would hide the durable object.
func (s *Store) removeOther(bdir, other string, durable bool) {
	if other == "" {
		return
	}
	s.setScratch(other, nil)
	if err := syscall.Unlink(other); err != nil {
		return // nothing there: the common case
	}
	if dir := filepath.Dir(other); dir == filepath.Join(bdir, scratchDirName) {
		if durable {
			_ = syncDir(dir)
		}
		return
	}
	_ = os.Remove(sidecarPath(other))
	pruneEmptyDirs(bdir, filepath.Dir(other))
}

// deleteScratch removes key's scratch file sp under the key's lock. The
// removal is not synced: scratch is not durable, and a crash that brings
// the file back leaves a staging leftover the staging sweep removes.
func (s *Store) deleteScratch(ctx context.Context, w, bdir, key, sp string) error {
	unlock, err := s.lock(ctx, bdir, key)
	if err != nil {
		return classify(w+": lock", err)
	}
	defer unlock()
	if err := os.Remove(sp); err != nil && !notFound(err) {
		return classify(w, err)
	}
	s.setScratch(sp, nil)
	return nil
}

// scratchObjects lists the scratch files whose keys start with prefix, in
// key order (List merges them with the nested tree).
func (s *Store) scratchObjects(ctx context.Context, w, bucket, bdir, prefix string) ([]objectstore.Object, error) {
	dir := filepath.Join(bdir, scratchDirName)
	ents, err := dirindex.Entries(dir, escapeKey(prefix))
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, classify(w, err)
	}
	var out []objectstore.Object
	for _, de := range ents {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", w, err)
		}
		if strings.HasPrefix(de.Name, reservedPrefix) || !de.Type.IsRegular() {
			continue // a write in progress
		}
		key, ok := unescapeKey(de.Name)
		if !ok || checkKey(key) != nil {
			continue
		}
		fi, e, exists, err := s.describe(filepath.Join(dir, de.Name))
		if err != nil {
			return nil, classify(w, err)
		}
		if !exists || !fi.Mode().IsRegular() {
			continue
		}
		obj := objectOf(bucket, key, fi, e)
		obj.Metadata = nil
		out = append(out, obj)
	}
	slices.SortFunc(out, func(a, b objectstore.Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// mergeScratch wraps a List callback so the scratch objects are passed in
// key order among the nested ones; a key held by both (a write between the
// two reads) is passed once, as its scratch file. flush passes the rest.
func mergeScratch(scratch []objectstore.Object, fn func(objectstore.Object) error) (emit func(objectstore.Object) error, flush func() error) {
	i := 0
	emit = func(o objectstore.Object) error {
		for ; i < len(scratch) && scratch[i].Key < o.Key; i++ {
			if err := fn(scratch[i]); err != nil {
				i++
				return err
			}
		}
		if i < len(scratch) && scratch[i].Key == o.Key {
			return nil
		}
		return fn(o)
	}
	flush = func() error {
		for ; i < len(scratch); i++ {
			if err := fn(scratch[i]); err != nil {
				i++
				return err
			}
		}
		return nil
	}
	return emit, flush
}
