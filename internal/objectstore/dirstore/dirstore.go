// Package dirstore is an objectstore.Store on local directories, for running
// the pipeline on one machine.
//
// Layout: bucket b is the directory <root>/b (or any existing directory given
// with WithBucketDir); object key "x/y/z.tif" is the file <bucket>/x/y/z.tif,
// so GDAL and people can read outputs in place (LocalPath).
//
// Everything the store keeps besides objects is named with the reserved
// prefix ".geomigrate-" and is never listed, and keys with a path element of
// that prefix are rejected:
//
//   - <dir>/.geomigrate-tmp-*: a write in progress. Objects are written to a
//     temporary file in the destination directory, fsynced and renamed into
//     place, so a reader sees the old object or the new one, never a part.
//     Stale temporaries left by a crash are removed by Attach (when no other
//     process writes to the bucket) or SweepTemps (by age).
//   - The entry of a durable object (ETag, identity, user metadata) is the
//     extended attribute user.geomigrate.entry of its own file, set before
//     the data's fsync, so bytes and entry are published by one rename.
//     Where the file system takes no user attributes, it is a sidecar:
//   - <dir>/.geomigrate-meta/<name>.json: the sidecar of <dir>/<name>: ETag
//     (hex MD5 of the content), size, mtime, inode and user metadata. A
//     sidecar describes an object only while the file's inode, size and mtime
//     match, so a file changed behind the store's back loses its metadata
//     rather than carrying someone else's. The sidecar keeps the entry of the
//     previous version too, and is renamed into place before the data file:
//     at every instant (also after a crash between the two renames) it holds
//     the entry of whatever data file is in place. A scratch object (a
//     staging write, PutRequest.Scratch) has none: the Store that wrote it
//     keeps its entry in memory; to any other Store it is a file the store
//     did not write.
//   - <bucket>/.geomigrate-scratch/<escaped key>: scratch objects (staging
//     writes), all in this one directory, made once and never pruned, each
//     named by its key with "%" and "/" escaped; a key too long for one
//     file name keeps the nested layout. Every read, List, Delete and Move
//     finds a key here first, then in the tree; a write to either place
//     removes the key's file at the other.
//   - <bucket>/.geomigrate-locks/NN.lock: lock stripes. Every write (Put,
//     Copy, Delete) holds its key's stripe, an in-process semaphore plus an
//     flock(2) on the stripe file, while it checks its precondition and
//     renames, so conditional writes are atomic among goroutines and among
//     processes on one machine. The expensive part (writing the temporary
//     file) happens before the lock is taken. Readers take no lock.
//
// Files without a (matching) sidecar, such as the files of a source tree
// given on the command line, are objects too: no user metadata, and an ETag
// derived from inode, size and mtime (it changes whenever the file does, but
// is not an MD5).
//
// Symbolic links in a bucket (a source tree's) are read through, as long as
// they resolve inside the bucket's directory; one that leads outside it, by
// the file or by a directory on the way, is refused as fault.UnsafeSource on
// every read, so a link cannot make the pipeline read other files. An
// object that is itself a link is not served in place (LocalPath:
// ErrNotInPlace): callers read it with Open.
//
// Errors: a missing object is objectstore.ErrNotFound; a missing bucket
// directory, a full disk or a permission problem is a fault.SystemicError; an
// unusable key is a fault.DataError with code InvalidInput (or
// DestinationConflict when a key needs a directory where an object is, or
// the reverse). Every error names the operation, bucket and key.
package dirstore

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/geomigrate/geomigrate/internal/dirindex"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

const (
	reservedPrefix = ".geomigrate-"
	tempPrefix     = ".geomigrate-tmp-"
	metaDirName    = ".geomigrate-meta"
	lockDirName    = ".geomigrate-locks"
	maxKeyLen      = 1024
)

// ErrNoSuchBucket is wrapped (inside a fault.SystemicError) when a bucket's
// directory does not exist.
var ErrNoSuchBucket = errors.New("NoSuchBucket")

var (
	_ objectstore.Store       = (*Store)(nil)
	_ objectstore.LocalPather = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithBucketDir serves bucket name from dir instead of <root>/name. The
// directory must exist; it may be read-only, in which case writes to the
// bucket fail with a SystemicError (AccessDenied).
func WithBucketDir(name, dir string) Option {
	return func(s *Store) {
		if s.mapped == nil {
			s.mapped = map[string]string{}
		}
		s.mapped[name] = dir
	}
}

// Store keeps buckets as directories. It is safe for concurrent use, and
// several processes may use the same root at once.
type Store struct {
	root   string
	mapped map[string]string

	mu   sync.Mutex
	sems map[string]*stripeLock

	// scratch holds the entries of scratch objects this process wrote, by
	// path, instead of sidecar files: a staging object lives for one job
	// and is renamed or deleted by the process that wrote it, so writing,
	// renaming and removing a sidecar (and its directory) for each was most
	// of a small file's system calls. Another process (a later run that
	// takes the job over) finds no entry and treats the file as one the
	// store did not write: Move then copies it and computes its ETag.
	scratchMu sync.Mutex
	scratch   map[string]*entry
}

// New returns a store whose buckets are the directories under root. root may
// be empty when every bucket is given with WithBucketDir. Buckets are not
// created; see CreateBucket.
func New(root string, opts ...Option) (*Store, error) {
	s := &Store{sems: map[string]*stripeLock{}, scratch: map[string]*entry{}}
	for _, o := range opts {
		o(s)
	}
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("dirstore.New: %s: %w", root, err)
		}
		s.root = abs
	}
	for name, dir := range s.mapped {
		if name == "" || strings.ContainsRune(name, 0) {
			return nil, fmt.Errorf("dirstore.New: invalid bucket name %q", name)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("dirstore.New: bucket %s=%s: %w", name, dir, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("dirstore.New: bucket %s: %w", name, classify("dirstore.New: "+name, err))
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("dirstore.New: bucket %s: %s is not a directory", name, abs)
		}
		s.mapped[name] = abs
	}
	return s, nil
}

// Root returns the absolute root directory ("" when none was given).
func (s *Store) Root() string { return s.root }

// CreateBucket creates the directory of a bucket under root (a no-op when it
// exists).
func (s *Store) CreateBucket(name string) error {
	if _, ok := s.mapped[name]; ok {
		_, err := s.bucketDir("CreateBucket", name, "")
		return err
	}
	if err := checkBucketName(name); err != nil {
		return fmt.Errorf("dirstore.CreateBucket: %s: %w", name, err)
	}
	if s.root == "" {
		return fmt.Errorf("dirstore.CreateBucket: %s: %w", name,
			fault.Systemic("dirstore.CreateBucket", errors.New("store has no root directory")))
	}
	if err := os.MkdirAll(filepath.Join(s.root, name), 0o755); err != nil {
		return classify("dirstore.CreateBucket: "+name, err)
	}
	return nil
}

func checkBucketName(name string) error {
	switch {
	case name == "":
		return fault.Data(fault.InvalidInput, "empty bucket name")
	case strings.ContainsAny(name, "/\\\x00"):
		return fault.Data(fault.InvalidInput, "bucket name %q contains '/', '\\' or NUL", name)
	case strings.HasPrefix(name, "."):
		return fault.Data(fault.InvalidInput, "bucket name %q starts with '.'", name)
	}
	return nil
}

// checkKey rejects keys that cannot name a file inside the bucket.
func checkKey(key string) error {
	why := ""
	switch {
	case key == "":
		why = "empty key"
	case len(key) > maxKeyLen:
		why = fmt.Sprintf("key longer than %d bytes", maxKeyLen)
	case strings.IndexByte(key, 0) >= 0:
		why = "key contains NUL"
	case strings.HasPrefix(key, "/"):
		why = "absolute key"
	case strings.HasSuffix(key, "/"):
		why = "key ends with '/'"
	default:
		for part := range strings.SplitSeq(key, "/") {
			switch {
			case part == "":
				why = "key has an empty path element"
			case part == "." || part == "..":
				why = "key has a '" + part + "' path element"
			case strings.HasPrefix(part, reservedPrefix):
				why = "key uses the reserved prefix " + reservedPrefix
			}
			if why != "" {
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return fault.Data(fault.InvalidInput, "invalid object key %q: %s", key, why)
}

// where names an operation for error messages: "dirstore.Put: b/k".
func where(op, bucket, key string) string { return "dirstore." + op + ": " + bucket + "/" + key }

// classify maps an operating system error onto the fault taxonomy: the
// common cases as fault.FromOS does, plus the key problems a directory
// store has that S3 has not.
func classify(where string, err error) error {
	switch {
	case fault.TierOf(err) != fault.TierUnknown:
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%s: %w", where, fault.DataWrap(fault.InvalidInput, err, "name too long"))
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY),
		errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%s: %w", where, fault.DataWrap(fault.DestinationTaken, err,
			"key conflicts with an existing object or directory (a directory store cannot hold both \"a\" and \"a/b\")"))
	}
	return fault.FromOS(where, err)
}

func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// bucketDir resolves and checks the directory of a bucket.
func (s *Store) bucketDir(op, bucket, key string) (string, error) {
	w := where(op, bucket, key)
	dir, ok := s.mapped[bucket]
	if !ok {
		if err := checkBucketName(bucket); err != nil {
			return "", fmt.Errorf("%s: %w", w, err)
		}
		if s.root == "" {
			return "", fault.Systemic(w, fmt.Errorf("%w: no directory for bucket %q", ErrNoSuchBucket, bucket))
		}
		dir = filepath.Join(s.root, bucket)
	}
	fi, err := os.Stat(dir)
	switch {
	case notFound(err), err == nil && !fi.IsDir():
		return "", fault.Systemic(w, fmt.Errorf("%w: directory %s does not exist", ErrNoSuchBucket, dir))
	case err != nil:
		return "", classify(w, err)
	}
	return dir, nil
}

// resolve checks bucket and key and returns the bucket directory and the
// object's path.
func (s *Store) resolve(op, bucket, key string) (bdir, path string, err error) {
	if err := checkKey(key); err != nil {
		return "", "", fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	bdir, err = s.bucketDir(op, bucket, key)
	if err != nil {
		return "", "", err
	}
	return bdir, filepath.Join(bdir, filepath.FromSlash(key)), nil
}

// ErrNotInPlace is returned by LocalPath for an object that is a symbolic
// link (to a file inside the bucket): read it with Open instead. A reader
// in place would meet a link, and the sidecars beside the link's target
// rather than those beside its name.
var ErrNotInPlace = errors.New("dirstore: the object is a symbolic link: read it with Open")

// checkLink refuses an object whose path leads outside its bucket's
// directory through a symbolic link (of the file or of a directory on the
// way): a source tree's link must not make the pipeline read other files.
// It reports whether the object itself is a link. A path that does not
// resolve is left to the caller (not found).
func checkLink(w, bdir, path string) (isLink bool, err error) {
	// Most objects have no link on the way: an lstat of each element below
	// the bucket directory shows it without resolving the whole path (the
	// bucket's own ancestors are not the key's business).
	if rel, ok := strings.CutPrefix(path, bdir+string(filepath.Separator)); ok {
		p, plain := bdir, true
		for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
			p += string(filepath.Separator) + part
			fi, err := os.Lstat(p)
			if err != nil {
				return false, nil // does not resolve: the caller's not found
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				plain = false
				break
			}
		}
		if plain {
			return false, nil
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, nil
	}
	realB, err := filepath.EvalSymlinks(bdir)
	if err != nil {
		return false, nil
	}
	if !strings.HasPrefix(real, realB+string(filepath.Separator)) {
		return false, fmt.Errorf("%s: %w", w, fault.Data(fault.UnsafeSource,
			"the object is a symbolic link to %s, outside the bucket directory %s; links are followed only inside it", real, realB))
	}
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0, nil
}

// LocalPath returns the file that holds an object, for reading in place.
// Callers must not write to it. An object that is a symbolic link is not
// in place (ErrNotInPlace).
func (s *Store) LocalPath(bucket, key string) (string, error) {
	bdir, path, err := s.resolve("LocalPath", bucket, key)
	if err != nil {
		return "", err
	}
	path = located(bdir, key, path)
	switch link, err := checkLink(where("LocalPath", bucket, key), bdir, path); {
	case err != nil:
		return "", err
	case link:
		return "", fmt.Errorf("%s: %w", where("LocalPath", bucket, key), ErrNotInPlace)
	}
	fi, err := os.Stat(path)
	switch {
	case notFound(err), err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s: %w", where("LocalPath", bucket, key), objectstore.ErrNotFound)
	case err != nil:
		return "", classify(where("LocalPath", bucket, key), err)
	}
	return path, nil
}

// Head describes an object.
func (s *Store) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	const op = "Head"
	if err := ctx.Err(); err != nil {
		return objectstore.Object{}, fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	bdir, path, err := s.resolve(op, bucket, key)
	if err != nil {
		return objectstore.Object{}, err
	}
	path = located(bdir, key, path)
	if _, err := checkLink(where(op, bucket, key), bdir, path); err != nil {
		return objectstore.Object{}, err
	}
	// A writer may rename the sidecar and the data file between our stat and
	// our sidecar read; the sidecar always holds the entry of the data file
	// in place, so a stat that did not change around the read is consistent.
	var obj objectstore.Object
	for range 8 {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return objectstore.Object{}, s.readErr(op, bucket, key, err)
		}
		if e, _ := s.entryFor(path, fi); e != nil {
			return objectOf(bucket, key, fi, e), nil
		}
		obj = objectOf(bucket, key, fi, nil)
		fi2, err := os.Stat(path)
		if err == nil && sameFile(fi, fi2) {
			return obj, nil
		}
	}
	return obj, nil
}

func (s *Store) readErr(op, bucket, key string, err error) error {
	if err == nil || notFound(err) {
		return fmt.Errorf("%s: %w", where(op, bucket, key), objectstore.ErrNotFound)
	}
	return classify(where(op, bucket, key), err)
}

// openObject opens an object's file and describes the version it opened.
func (s *Store) openObject(op, bucket, key string) (*os.File, objectstore.Object, *entry, error) {
	bdir, path, err := s.resolve(op, bucket, key)
	if err != nil {
		return nil, objectstore.Object{}, nil, err
	}
	path = located(bdir, key, path)
	if _, err := checkLink(where(op, bucket, key), bdir, path); err != nil {
		return nil, objectstore.Object{}, nil, err
	}
	for attempt := 0; ; attempt++ {
		// Stat before opening so a FIFO in a source tree cannot block us.
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, objectstore.Object{}, nil, s.readErr(op, bucket, key, err)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, objectstore.Object{}, nil, s.readErr(op, bucket, key, err)
		}
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return nil, objectstore.Object{}, nil, classify(where(op, bucket, key), err)
		}
		if e, _ := s.entryFor(path, fi); e != nil {
			return f, objectOf(bucket, key, fi, e), e, nil
		}
		fi2, err := os.Stat(path)
		if attempt >= 7 || (err == nil && sameFile(fi, fi2)) {
			return f, objectOf(bucket, key, fi, nil), nil, nil
		}
		f.Close() // replaced while we looked: open the new version
	}
}

// Open streams a whole object.
func (s *Store) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where("Open", bucket, key), err)
	}
	f, _, _, err := s.openObject("Open", bucket, key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenRange streams length bytes from offset (length < 0: to the end). A
// range past the end is clipped; an offset at or past the end gives an empty
// stream.
func (s *Store) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	const op = "OpenRange"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	if offset < 0 {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), fault.Data(fault.InvalidInput, "negative offset %d", offset))
	}
	f, obj, _, err := s.openObject(op, bucket, key)
	if err != nil {
		return nil, err
	}
	n := obj.Size - offset
	if n < 0 {
		n = 0
	}
	if length >= 0 && length < n {
		n = length
	}
	return &sectionReadCloser{SectionReader: io.NewSectionReader(f, min(offset, obj.Size), n), f: f}, nil
}

type sectionReadCloser struct {
	*io.SectionReader
	f *os.File
}

func (r *sectionReadCloser) Close() error { return r.f.Close() }

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

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
	if err := ctx.Err(); err != nil {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w, err)
	}
	bdir, nested, err := s.resolve(op, req.Bucket, req.Key)
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
	return s.commit(ctx, op, bdir, req.Bucket, req.Key, nested, path, tmp.Name(), e, req.IfNoneMatch, "", !req.Scratch)
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
	if err := ctx.Err(); err != nil {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w, err)
	}
	bdir, path, err := s.resolve(op, req.DstBucket, req.DstKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	src, _, srcEntry, err := s.openObject(op, req.SrcBucket, req.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	defer src.Close()
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

// describe stats path and finds its sidecar entry; exists is false when
// there is no file.
func (s *Store) describe(path string) (fi fs.FileInfo, e *entry, exists bool, err error) {
	fi, err = os.Stat(path)
	switch {
	case notFound(err):
		return nil, nil, false, nil
	case err != nil:
		return nil, nil, false, err
	}
	e, _ = s.entryFor(path, fi)
	return fi, e, true, nil
}

// entryFor returns the entry describing the file fi at path: the scratch
// entry this process keeps for it, else the one on the file (xattrName),
// else its sidecar's; inMemory tells whether it was the first.
func (s *Store) entryFor(path string, fi fs.FileInfo) (e *entry, inMemory bool) {
	s.scratchMu.Lock()
	me := s.scratch[path]
	s.scratchMu.Unlock()
	id := fileIDOf(fi)
	if me != nil && me.id() == id {
		return me, true
	}
	if xe := readXattrEntry(path); xe != nil && xe.id() == id {
		return xe, false
	}
	return readSidecar(path).match(fi), false
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

// Delete removes an object and its sidecar; a missing object is not an
// error. Directories left empty are removed, as S3 has no directories.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	const op = "Delete"
	w := where(op, bucket, key)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", w, err)
	}
	bdir, path, err := s.resolve(op, bucket, key)
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

func objectOf(bucket, key string, fi fs.FileInfo, e *entry) objectstore.Object {
	o := objectstore.Object{Bucket: bucket, Key: key, Size: fi.Size(), Modified: fi.ModTime(), Metadata: map[string]string{}}
	if e != nil {
		o.ETag = e.ETag
		maps.Copy(o.Metadata, e.Metadata)
	} else {
		o.ETag = statETag(fi)
	}
	return o
}

// statETag is the ETag of a file the store did not write: it changes when
// the file does, without reading it.
func statETag(fi fs.FileInfo) string {
	id := fileIDOf(fi)
	sum := sha256.Sum256(fmt.Appendf(nil, "%d:%d:%d:%d", id.dev, id.ino, id.size, id.mtime))
	return hex.EncodeToString(sum[:16])
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
