package dirstore

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// copyBuffers hold the 256 KiB buffers Put and Copy stream through: one
// allocated per call was a third of a small file's allocations.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyMD5 copies src to dst (nil: src is only read) through a pooled
// buffer, stopping when ctx ends, and returns the bytes copied and their
// hex MD5: the ETag S3 gives a single-part upload.
func copyMD5(ctx context.Context, dst io.Writer, src io.Reader) (int64, string, error) {
	h := md5.New()
	w := io.Writer(h)
	if dst != nil {
		w = io.MultiWriter(dst, h)
	}
	buf := copyBuffers.Get().(*[]byte)
	n, err := io.CopyBuffer(w, ctxReader{ctx, src}, *buf)
	copyBuffers.Put(buf)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// Put writes a whole object.
func (s *Store) Put(ctx context.Context, req objectstore.PutRequest) (_ objectstore.Object, err error) {
	const op = "Put"
	w := where(op, req.Bucket, req.Key)
	bdir, nested, err := s.resolveLive(ctx, op, req.Bucket, req.Key)
	if err != nil {
		return objectstore.Object{}, err
	}
	path := writePath(bdir, req.Key, nested, req.Scratch)
	if req.Body == nil {
		req.Body = strings.NewReader("")
	}
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	defer abandon(bdir, tmp, &err)
	n, etag, err := copyMD5(ctx, tmp, req.Body)
	if err != nil {
		return objectstore.Object{}, classify(w+": reading body", err)
	}
	if req.Size >= 0 && n != req.Size {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w,
			fault.Data(fault.InvalidInput, "body has %d bytes, request said %d", n, req.Size))
	}
	e, err := finishTemp(tmp, etag, req.Metadata, !req.Scratch)
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	return s.commit(ctx, op, bdir, req.Bucket, req.Key, nested, path, tmp.Name(), e, req.IfNoneMatch, req.IfMatch, !req.Scratch)
}

// writePath is where a write of key puts its file: the bucket's scratch
// directory for a scratch write (scratchDirName), else the nested path.
func writePath(bdir, key, nested string, scratch bool) string {
	if scratch {
		if sp := scratchPath(bdir, key); sp != "" {
			return sp
		}
	}
	return nested
}

// Copy copies an object onto another key with new metadata
// (MetadataDirective REPLACE), honouring IfNoneMatch and IfMatch on the
// destination atomically.
func (s *Store) Copy(ctx context.Context, req objectstore.CopyRequest) (_ objectstore.Object, err error) {
	const op = "Copy"
	w := where(op, req.DstBucket, req.DstKey)
	bdir, path, err := s.resolveLive(ctx, op, req.DstBucket, req.DstKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	src, srcObj, srcEntry, err := s.openObject(op, req.SrcBucket, req.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	defer src.Close()
	// A file this store has no entry for (staged by another process: its
	// entry was kept in that process's memory) has an ETag of its file
	// identity, not the writer's MD5: only an entry's ETag is compared.
	if req.SrcETag != "" && srcEntry != nil && req.SrcETag != srcObj.ETag {
		return objectstore.Object{}, fault.Transient(where(op, req.SrcBucket, req.SrcKey), fmt.Errorf("source ETag is %s, the copy was of %s: it changed", srcObj.ETag, req.SrcETag))
	}
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	defer abandon(bdir, tmp, &err)
	var etag string
	if srcEntry != nil {
		// Same bytes, same ETag; file to file lets the kernel copy.
		_, err = io.Copy(tmp, src)
		etag = srcEntry.ETag
	} else {
		_, etag, err = copyMD5(ctx, tmp, src)
	}
	if err != nil {
		return objectstore.Object{}, classify(w+": copying from "+req.SrcBucket+"/"+req.SrcKey, err)
	}
	e, err := finishTemp(tmp, etag, req.Metadata, true)
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	return s.commit(ctx, op, bdir, req.DstBucket, req.DstKey, path, path, tmp.Name(), e, req.IfNoneMatch, req.IfMatch, true)
}

// createTemp creates a temporary file in dir, creating dir when needed. A
// concurrent Delete may prune the directory between the two, hence the loop.
func createTemp(dir string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(filepath.Join(dir, tempPrefix+randHex(8)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		switch {
		case err == nil:
			return f, nil
		case attempt >= 10:
			return nil, err
		case errors.Is(err, fs.ErrExist):
		case errors.Is(err, fs.ErrNotExist):
			// A concurrent Delete may prune a parent while MkdirAll walks
			// down; that is a lost race, not a failure: try again. The race
			// shows as ENOENT, or as EEXIST when another writer's Mkdir won
			// and the prune removed the directory before MkdirAll's Lstat
			// saw it. A file in the way of a directory fails the OpenFile
			// above with ENOTDIR, so neither hides a real key conflict; the
			// attempts are bounded all the same.
			if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

// cleanupTemp removes a temporary file unless it was renamed into place.
func cleanupTemp(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// abandon removes a write's temporary file (a no-op once it was renamed)
// and, when the write failed, the directories it created for nothing, so a
// failed Put of "a/b" cannot leave an empty "a" that blocks key "a".
func abandon(bdir string, f *os.File, err *error) {
	_ = f.Close()
	abandonName(bdir, f.Name(), err)
}

// abandonName is abandon for a temporary known by its name.
func abandonName(bdir, name string, err *error) {
	if *err == nil {
		return // committed: the name was renamed onto the object
	}
	_ = os.Remove(name)
	pruneEmptyDirs(bdir, filepath.Dir(name))
}

// finishTemp describes a temporary file and, unless it is scratch, stores
// the entry on it (xattrName, where the file system takes it) and makes
// both durable.
func finishTemp(f *os.File, etag string, meta map[string]string, durable bool) (*entry, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	e := entryOf(fi)
	e.ETag = etag
	e.Metadata = lowerKeys(meta)
	if durable {
		setXattrEntry(f, e)
		if err := fsync(f); err != nil {
			return nil, err
		}
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return e, nil
}

func lowerKeys(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

// commit renames a finished temporary file onto path (nested, the key's
// path in the tree, or its scratch file) under the key's lock, after
// checking the preconditions, and removes the key's file at the other
// location; durable makes the rename and the sidecar survive a machine
// crash before it returns.
func (s *Store) commit(ctx context.Context, op, bdir, bucket, key, nested, path, tmpPath string, e *entry, ifNoneMatch bool, ifMatch string, durable bool) (objectstore.Object, error) {
	w := where(op, bucket, key)
	unlock, err := s.lock(ctx, bdir, key)
	if err != nil {
		return objectstore.Object{}, classify(w+": lock", err)
	}
	defer unlock()

	other := otherPath(bdir, key, nested, path)
	curEntry, replacing, err := s.checkPreconditions(w, bucket, key, path, other, ifNoneMatch, ifMatch)
	if err != nil {
		return objectstore.Object{}, err
	}
	if !durable && (curEntry == nil || path != nested) {
		// A scratch object (in the scratch directory, or over nothing the
		// store described): its entry is kept in memory (Store.scratch), no
		// sidecar.
		if err := os.Rename(tmpPath, path); err != nil {
			return objectstore.Object{}, classify(w, err)
		}
		s.setScratch(path, e)
		s.removeOther(bdir, other, false)
		fi, err := os.Stat(path)
		if err != nil {
			return objectstore.Object{}, classify(w, err)
		}
		return objectOf(bucket, key, fi, e), nil
	}
	s.setScratch(path, nil)
	if !e.inXattr {
		// Sidecar first, holding both the new entry and the current one: if
		// we stop before the data rename the current file keeps its metadata.
		sc := &sidecar{V: 1, Cur: e, Prev: curEntry}
		if err := sc.write(path, durable); err != nil {
			return objectstore.Object{}, classify(w+": sidecar", err)
		}
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	if e.inXattr && replacing {
		removeStaleSidecar(path)
	}
	if durable {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return objectstore.Object{}, classify(w, err)
		}
	}
	s.removeOther(bdir, other, durable)
	fi, err := os.Stat(path)
	if err != nil {
		return objectstore.Object{}, classify(w, err)
	}
	return objectOf(bucket, key, fi, e), nil
}

// checkPreconditions checks If-None-Match and If-Match against the object
// at path, or else at other (the key's other location, see otherPath),
// under its key's lock, and returns its current entry and whether a file
// is at path (the write replaces it).
func (s *Store) checkPreconditions(w, bucket, key, path, other string, ifNoneMatch bool, ifMatch string) (_ *entry, atPath bool, _ error) {
	cur, curEntry, exists, err := s.describe(path)
	atPath = exists
	if err == nil && !exists && other != "" {
		cur, curEntry, exists, err = s.describe(other)
	}
	if err != nil {
		return nil, false, classify(w, err)
	}
	if ifNoneMatch && exists {
		return nil, false, fmt.Errorf("%s: If-None-Match: object exists: %w", w, objectstore.ErrPreconditionFailed)
	}
	if ifMatch != "" {
		if !exists {
			return nil, false, fmt.Errorf("%s: If-Match %s: object does not exist: %w", w, ifMatch, objectstore.ErrPreconditionFailed)
		}
		if etag := objectOf(bucket, key, cur, curEntry).ETag; etag != ifMatch {
			return nil, false, fmt.Errorf("%s: If-Match %s: ETag is %s: %w", w, ifMatch, etag, objectstore.ErrPreconditionFailed)
		}
	}
	return curEntry, atPath, nil
}

// removeStaleSidecar removes the sidecar of a file replaced by one that
// carries its entry itself (it describes only the replaced file's inode).
// Not synced: a sidecar a crash brings back matches no file.
func removeStaleSidecar(path string) {
	_ = syscall.Unlink(sidecarPath(path))
	_ = syscall.Rmdir(filepath.Join(filepath.Dir(path), metaDirName))
}

// setScratch records the entry of a scratch object at path (nil forgets it).
func (s *Store) setScratch(path string, e *entry) {
	s.scratchMu.Lock()
	defer s.scratchMu.Unlock()
	if e == nil {
		delete(s.scratch, path)
		return
	}
	s.scratch[path] = e
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := fsync(d); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// syncs counts the store's fsync(2) calls, for the tests that pin how many
// a write costs.
var syncs atomic.Int64

func fsync(f *os.File) error {
	syncs.Add(1)
	return f.Sync()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
