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
//     rather than carrying someone else's. An entry (on the file or in a
//     sidecar) whose inode differs but whose size and MD5 are the file's
//     describes a copy of the object (cp -a, rsync -aX, a restored backup)
//     and is taken over, written back onto the copy with its own inode
//     (docs/decisions/0103). The sidecar keeps the entry of the
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
// unusable key is a fault.DataError with code InvalidKey (a key no store
// accepts, objectstore.CheckKey), InvalidInput (one only a directory cannot
// hold: a trailing '/', the reserved prefix; or
// DestinationConflict when a key needs a directory where an object is, or
// the reverse). Every error names the operation, bucket and key.
package dirstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
