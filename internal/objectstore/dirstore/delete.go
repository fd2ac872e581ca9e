package dirstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Delete removes an object and its sidecar; a missing object is not an
// error. Directories left empty are removed, as S3 has no directories.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	const op = "Delete"
	w := where(op, bucket, key)
	bdir, path, err := s.resolveLive(ctx, op, bucket, key)
	if err != nil {
		return err
	}
	if sp := located(bdir, key, path); sp != path {
		if err := s.deleteScratch(ctx, w, bdir, key, sp); err != nil {
			return err
		}
		// A nested file of the same key (a crash left both) goes too.
	}
	// Nothing there: done without the lock (as if the delete came just
	// before any write racing it). Staging keys already moved are the
	// common case.
	if _, err := os.Lstat(path); notFound(err) {
		s.setScratch(path, nil)
		return nil
	}
	unlock, err := s.lock(ctx, bdir, key)
	if err != nil {
		return classify(w+": lock", err)
	}
	defer unlock()
	fi, err := os.Lstat(path)
	switch {
	case notFound(err):
		return nil
	case err != nil:
		return classify(w, err)
	case fi.IsDir():
		return nil // a "directory" of other keys, not an object
	}
	if err := os.Remove(path); err != nil && !notFound(err) {
		return classify(w, err)
	}
	s.setScratch(path, nil)
	if err := os.Remove(sidecarPath(path)); err != nil && !notFound(err) {
		return classify(w+": sidecar", err)
	}
	// A concurrent Delete of a sibling may have pruned the directory
	// already: then the removal is as durable as it gets.
	if err := syncDir(filepath.Dir(path)); err != nil && !notFound(err) {
		return classify(w, err)
	}
	pruneEmptyDirs(bdir, filepath.Dir(path))
	return nil
}

// pruneEmptyDirs removes dir and its parents up to (not including) bdir
// while they are empty. Failures are ignored: a concurrent writer may be
// filling them, and createTemp recreates what it needs.
func pruneEmptyDirs(bdir, dir string) {
	if dir == filepath.Join(bdir, scratchDirName) {
		return // made once, kept
	}
	for dir != bdir && strings.HasPrefix(dir, bdir+string(filepath.Separator)) {
		// rmdir(2) directly: os.Remove tries unlink(2) first.
		_ = syscall.Rmdir(filepath.Join(dir, metaDirName))
		if syscall.Rmdir(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// SweepTemps removes the temporary files of a bucket (left by crashed
// writers) last modified longer than olderThan ago, and reports how many it
// removed. Use an age well above the longest write, or a live write loses its
// temporary file and fails.
func (s *Store) SweepTemps(ctx context.Context, bucket string, olderThan time.Duration) (int, error) {
	w := where("SweepTemps", bucket, "")
	bdir, err := s.bucketDir("SweepTemps", bucket, "")
	if err != nil {
		return 0, err
	}
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	err = filepath.WalkDir(bdir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			if notFound(err) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := de.Name()
		switch {
		case de.IsDir() && name == lockDirName:
			return filepath.SkipDir
		case de.IsDir() || !strings.HasPrefix(name, tempPrefix):
			return nil
		}
		fi, err := de.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(path); err == nil {
			removed++
		}
		return nil
	})
	if err != nil {
		return removed, classify(w, err)
	}
	return removed, nil
}
