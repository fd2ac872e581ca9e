package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

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

// checkKey rejects keys that cannot name a file inside the bucket: the
// keys no store accepts (objectstore.CheckKey: InvalidKey), then what only
// a directory cannot hold (InvalidInput).
func checkKey(key string) error {
	if err := objectstore.CheckKey(key); err != nil {
		return err
	}
	why := ""
	switch {
	case len(key) > maxKeyLen:
		why = fmt.Sprintf("key longer than %d bytes", maxKeyLen)
	case strings.HasSuffix(key, "/"):
		why = "key ends with '/'"
	default:
		for part := range strings.SplitSeq(key, "/") {
			if strings.HasPrefix(part, reservedPrefix) {
				why = "key uses the reserved prefix " + reservedPrefix
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

// resolveLive is resolve for an operation that has not begun: a cancelled
// context ends it first.
func (s *Store) resolveLive(ctx context.Context, op, bucket, key string) (bdir, path string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	return s.resolve(op, bucket, key)
}
