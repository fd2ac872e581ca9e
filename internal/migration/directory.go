package migration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// A directory source (a File Geodatabase, city.gdb/) is one source: its
// key is the directory's ("city.gdb"), which names no object; its content
// is every object under key + "/". It is fingerprinted, downloaded and
// checked for changes as that set, and a key inside it (an event for
// city.gdb/a00000001.gdbtable) stands for the directory.

// DirectorySourceOf is the directory source key lies inside ("a/city.gdb"
// of "a/city.gdb/a00000001.gdbtable"), or "": a lister lists the directory
// once instead of its files.
func DirectorySourceOf(key string) string { return directoryOf(key) }

// isDirectorySource reports whether key names a directory source.
func isDirectorySource(key string) bool { return formats.Lookup(key).Directory }

// directoryOf is the directory source key lies inside ("a/city.gdb" of
// "a/city.gdb/a00000001.gdbtable"), or "".
func directoryOf(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs[:len(segs)-1] {
		if formats.Lookup(s).Directory {
			return strings.Join(segs[:i+1], "/")
		}
	}
	return ""
}

// directoryMembers lists the objects of the directory source key, in key
// order (folder markers left out).
func directoryMembers(ctx context.Context, store objectstore.Store, bucket, key string) ([]objectstore.Object, error) {
	var out []objectstore.Object
	err := store.List(ctx, bucket, key+"/", func(o objectstore.Object) error {
		if !strings.HasSuffix(o.Key, "/") {
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migration.directoryMembers: %s/%s: %w", bucket, key, err)
	}
	return out, nil
}

// memberName is a member's name in the bundle digest: its key from the
// directory's own name on ("city.gdb/a00000001.gdbtable").
func memberName(dirKey, memberKey string) string {
	return path.Base(dirKey) + "/" + strings.TrimPrefix(memberKey, dirKey+"/")
}

// headSource is store.Head of a file source. Of a directory source it is
// the members' total size, their latest modification and, as ETag, a
// digest of their keys and ETags (any member changed, added or removed
// changes it); objectstore.ErrNotFound when it has none.
func headSource(ctx context.Context, store objectstore.Store, bucket, key string) (objectstore.Object, error) {
	if !isDirectorySource(key) {
		return store.Head(ctx, bucket, key)
	}
	members, err := directoryMembers(ctx, store, bucket, key)
	if err != nil {
		return objectstore.Object{}, err
	}
	if len(members) == 0 {
		return objectstore.Object{}, fmt.Errorf("migration.headSource: %s/%s: %w", bucket, key, objectstore.ErrNotFound)
	}
	obj := objectstore.Object{Bucket: bucket, Key: key}
	h := sha256.New()
	for _, m := range members {
		obj.Size += m.Size
		if m.Modified.After(obj.Modified) {
			obj.Modified = m.Modified
		}
		fmt.Fprintf(h, "%s %d %s\n", memberName(key, m.Key), m.Size, m.ETag)
	}
	obj.ETag = "dir-" + hex.EncodeToString(h.Sum(nil))[:32]
	return obj, nil
}

// fingerprintDirectory digests every member of a directory source into one
// bundle digest (bundleDigest, with no main file of its own); kind is
// "fast" when any member's is.
func fingerprintDirectory(ctx context.Context, finger Fingerprinter, bucket, key string, members []objectstore.Object) (sum, kind string, err error) {
	sums := map[string]string{}
	kind = "sha256"
	for _, m := range members {
		m.Bucket = bucket
		s, k, err := finger.Fingerprint(ctx, m)
		if err != nil {
			return "", "", fmt.Errorf("fingerprint s3://%s/%s: %w", bucket, m.Key, err)
		}
		if k != "sha256" {
			kind = k
		}
		sums[memberName(key, m.Key)] = s
	}
	return directoryDigest(key, sums), kind, nil
}

// directoryDigest is the bundle digest of a directory source's members
// (never "", which Convert reads as "read in place": a directory whose
// members all vanished gets the digest of an empty member list).
func directoryDigest(key string, sums map[string]string) string {
	if len(sums) == 0 {
		return bundleDigest(path.Base(key), "", map[string]string{"": ""})
	}
	return bundleDigest(path.Base(key), "", sums)
}

// downloadDirectory copies every member of the directory source job names
// into dir under the directory's name, and returns its path and bundle
// digest as fingerprintDirectory computes it.
func (c *Convert) downloadDirectory(ctx context.Context, job Job, dir string) (dst, digest string, err error) {
	key := job.SourceKey
	members, err := directoryMembers(ctx, c.store, job.SourceBucket, key)
	if err != nil {
		return "", "", fmt.Errorf("migration.Convert: %w", err)
	}
	dst = filepath.Join(dir, path.Base(key))
	sums := map[string]string{}
	for _, m := range members {
		rel := strings.TrimPrefix(m.Key, key+"/")
		if err := checkMemberPath(rel); err != nil {
			return "", "", err
		}
		into := filepath.Join(dst, filepath.FromSlash(path.Dir(rel)))
		if err := os.MkdirAll(into, 0o755); err != nil {
			return "", "", localError("migration.Convert: download", err)
		}
		_, sum, err := c.download(ctx, job.SourceBucket, m.Key, "", into)
		switch {
		case errors.Is(err, errSourceGone):
			// Shows up as SourceChanged in the digest.
		case err != nil:
			return "", "", err
		default:
			sums[memberName(key, m.Key)] = sum
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", "", localError("migration.Convert: download", err)
	}
	return dst, directoryDigest(key, sums), nil
}

// checkMemberPath refuses a member key that would leave the directory when
// downloaded (a store does not forbid "city.gdb/../x").
func checkMemberPath(rel string) error {
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return fault.Data(fault.UnsafeSource, "member %q of a directory source is not a plain relative path; refused", rel)
		}
	}
	return nil
}
