package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

var _ objectstore.FileMover = (*Store)(nil)

// PutFile takes a finished local file in as an object: it is renamed into
// a temporary name beside the object (copied there when it lies on another
// file system), then committed as Put commits. The bytes are never copied
// on one file system. The file is the store's from the call on: it is
// removed when the put fails.
func (s *Store) PutFile(ctx context.Context, req objectstore.PutFileRequest) (_ objectstore.Object, err error) {
	const op = "PutFile"
	w := where(op, req.Bucket, req.Key)
	if err := ctx.Err(); err != nil {
		_ = os.Remove(req.Path)
		return objectstore.Object{}, fmt.Errorf("%s: %w", w, err)
	}
	bdir, nested, err := s.resolve(op, req.Bucket, req.Key)
	if err != nil {
		_ = os.Remove(req.Path)
		return objectstore.Object{}, err
	}
	path := writePath(bdir, req.Key, nested, req.Scratch)
	tmpName, etag, err := takeFile(ctx, filepath.Dir(path), req.Path, req.MD5)
	if err != nil {
		_ = os.Remove(req.Path)
		return objectstore.Object{}, classify(w+": taking "+req.Path, err)
	}
	defer abandonName(bdir, tmpName, &err)
	f, err := os.OpenFile(tmpName, os.O_RDWR, 0)
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if etag == "" {
		if _, etag, err = copyMD5(ctx, nil, f); err != nil {
			f.Close()
			return objectstore.Object{}, classify(w+": reading", err)
		}
	}
	e, err := finishTemp(f, etag, req.Metadata, !req.Scratch)
	if err != nil {
		f.Close()
		return objectstore.Object{}, classify(w, err)
	}
	return s.commit(ctx, op, bdir, req.Bucket, req.Key, nested, path, tmpName, e, req.IfNoneMatch, "", !req.Scratch)
}

// takeFile renames the file src to a new temporary name in dir, creating
// dir when needed, and returns the name and etag (unchanged, or the MD5 of
// a copy). rename(2) with RENAME_NOREPLACE takes a unique name without
// creating an empty file first; across file systems, or where the flag is
// not supported, it creates the temporary and copies or renames over it.
func takeFile(ctx context.Context, dir, src, etag string) (string, string, error) {
	for attempt := 0; ; attempt++ {
		name := filepath.Join(dir, tempPrefix+randHex(8))
		err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, name, unix.RENAME_NOREPLACE)
		switch {
		case err == nil:
			return name, etag, nil
		case attempt >= 10:
			return "", "", err
		case errors.Is(err, syscall.EEXIST):
		case errors.Is(err, syscall.ENOENT):
			if _, serr := os.Lstat(src); serr != nil {
				return "", "", serr
			}
			// As in createTemp: a concurrent Delete may prune dir again.
			if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
				return "", "", err
			}
		case errors.Is(err, syscall.EXDEV), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.ENOTSUP):
			return takeFileByCopy(ctx, dir, src, etag)
		default:
			return "", "", err
		}
	}
}

// takeFileByCopy reserves a temporary name by creating it, then renames
// src over it (copies it across file systems).
func takeFileByCopy(ctx context.Context, dir, src, etag string) (string, string, error) {
	tmp, err := createTemp(dir)
	if err != nil {
		return "", "", err
	}
	_ = tmp.Close()
	switch err := os.Rename(src, tmp.Name()); {
	case errors.Is(err, syscall.EXDEV):
		if etag, err = copyInto(ctx, tmp.Name(), src); err != nil {
			_ = os.Remove(tmp.Name())
			return "", "", err
		}
	case err != nil:
		_ = os.Remove(tmp.Name())
		return "", "", err
	}
	return tmp.Name(), etag, nil
}

// copyInto copies src over the file dst and removes src, returning the
// copy's hex MD5 (PutFile across file systems).
func copyInto(ctx context.Context, dst, src string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer os.Remove(src)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return "", err
	}
	_, etag, err := copyMD5(ctx, out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return etag, err
}

// Move renames an object onto another key of the same bucket with new
// metadata (Copy's MetadataDirective REPLACE and conditions), under both
// keys' locks. The data is made durable first (a scratch object was not),
// then the destination's sidecar, then the rename: a crash leaves the old
// destination with its metadata, or the new one with its own. Across
// buckets, or file systems, it is Copy then Delete.
func (s *Store) Move(ctx context.Context, req objectstore.CopyRequest) (_ objectstore.Object, err error) {
	const op = "Move"
	w := where(op, req.DstBucket, req.DstKey)
	bdir, path, err := s.resolveLive(ctx, op, req.DstBucket, req.DstKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	sbdir, spath, err := s.resolve(op, req.SrcBucket, req.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	if sbdir != bdir {
		return s.copyThenDelete(ctx, req)
	}
	if spath == path {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w, fault.Data(fault.InvalidInput, "source and destination are the same key"))
	}
	spath = located(sbdir, req.SrcKey, spath)
	srcScratchDir := filepath.Dir(spath) == filepath.Join(sbdir, scratchDirName)
	if link, err := checkLink(w, sbdir, spath); err != nil || link {
		if err != nil {
			return objectstore.Object{}, err
		}
		return s.copyThenDelete(ctx, req) // a link moves as what it points to
	}
	unlockPair, err := s.lockPair(ctx, bdir, req.SrcKey, req.DstKey)
	if err != nil {
		return objectstore.Object{}, classify(w+": lock", err)
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			unlockPair()
		}
	}
	defer unlock()

	src, err := os.Open(spath)
	switch {
	case notFound(err):
		return objectstore.Object{}, fmt.Errorf("%s: source %s/%s: %w", w, req.SrcBucket, req.SrcKey, objectstore.ErrNotFound)
	case err != nil:
		return objectstore.Object{}, classify(w, err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if !fi.Mode().IsRegular() {
		return objectstore.Object{}, fmt.Errorf("%s: source %s/%s: %w", w, req.SrcBucket, req.SrcKey, objectstore.ErrNotFound)
	}
	srcEntry, srcInMemory := s.entryFor(spath, fi)
	if srcEntry == nil {
		// Not written by the store (or changed behind its back): a copy
		// computes the ETag, and leaves such a file where it is.
		unlock()
		return s.copyThenDelete(ctx, req)
	}
	other := scratchPath(bdir, req.DstKey)
	curEntry, replacing, err := s.checkPreconditions(w, req.DstBucket, req.DstKey, path, other, req.IfNoneMatch, req.IfMatch)
	if err != nil {
		return objectstore.Object{}, err
	}
	// A rename keeps the inode, size and mtime the entry is matched by.
	e := *srcEntry
	e.Metadata, e.inXattr = lowerKeys(req.Metadata), false
	setXattrEntry(src, &e)
	if err := fsync(src); err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if !e.inXattr {
		sc := &sidecar{V: 1, Cur: &e, Prev: curEntry}
		if err := sc.write(path, true); err != nil {
			return objectstore.Object{}, classify(w+": sidecar", err)
		}
	}
	switch err := os.Rename(spath, path); {
	case errors.Is(err, syscall.EXDEV):
		unlock()
		return s.copyThenDelete(ctx, req)
	case err != nil:
		return objectstore.Object{}, classify(w, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if e.inXattr && replacing {
		removeStaleSidecar(path)
	}
	// The source's name is gone; its sidecar now describes nothing. Its
	// directory is not synced: a source name that a crash brings back is a
	// staging leftover, removed with the job's other staged objects.
	s.setScratch(spath, nil)
	s.setScratch(path, nil)
	s.removeOther(bdir, other, true)
	if !srcInMemory && !srcScratchDir {
		_ = os.Remove(sidecarPath(spath))
	}
	pruneEmptyDirs(sbdir, filepath.Dir(spath))
	dfi, err := os.Stat(path)
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	return objectOf(req.DstBucket, req.DstKey, dfi, &e), nil
}

func (s *Store) copyThenDelete(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	obj, err := s.Copy(ctx, req)
	if err != nil {
		return obj, err
	}
	if err := s.Delete(ctx, req.SrcBucket, req.SrcKey); err != nil {
		return obj, err
	}
	return obj, nil
}
