// Package dirindex answers "which entries of this directory start with this
// prefix" without reading the whole directory each time. A source tree of
// 10,000 files in one directory was read in full several times per file
// (the store's sidecar listing, preflight, the source re-check): total work
// grew with the square of the file count.
//
// Large directories are read once and then kept exact by the kernel's
// change notifications (inotify on Linux), applied before every answer:
// a create, delete or rename that returned before a call is in its answer.
// A directory's modification time is not used: it is too coarse to order
// two changes within one tick. Elsewhere, and for small directories, every
// call reads the directory as os.ReadDir would.
package dirindex

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Entry is one directory entry: its name and its type bits (fs.ModeDir,
// fs.ModeSymlink, 0 for a regular file, or another fs.ModeType bit).
type Entry struct {
	Name string
	Type fs.FileMode
}

// minIndexed is the entry count from which a directory is kept in memory;
// smaller ones are cheaper to read than to watch.
const minIndexed = 512

// Entries returns the entries of dir whose names start with prefix, sorted
// by name. A missing directory is the same error os.ReadDir returns.
func Entries(dir, prefix string) ([]Entry, error) {
	dir = filepath.Clean(dir)
	if ents, ok := cached(dir, prefix); ok {
		return ents, nil
	}
	return read(dir, prefix)
}

// read lists dir in full, indexing it when it is large enough.
func read(dir, prefix string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	all := make([]Entry, 0, len(des))
	for _, de := range des {
		all = append(all, Entry{Name: de.Name(), Type: de.Type()})
	}
	if len(all) >= minIndexed {
		keep(dir)
	}
	return withPrefix(all, prefix), nil
}

// withPrefix returns a copy of the sorted entries whose name starts with
// prefix.
func withPrefix(sorted []Entry, prefix string) []Entry {
	if prefix == "" {
		return slices.Clone(sorted)
	}
	i, _ := slices.BinarySearchFunc(sorted, prefix, func(e Entry, p string) int { return strings.Compare(e.Name, p) })
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j].Name, prefix) {
		j++
	}
	return slices.Clone(sorted[i:j])
}

// typeOf is the type bits of dir/name as the directory reports them, from
// a fresh lstat (inotify names a created entry, not its type).
func typeOf(dir, name string) (fs.FileMode, bool) {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return 0, false
	}
	return fi.Mode().Type(), true
}
