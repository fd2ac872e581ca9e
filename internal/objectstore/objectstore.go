// Package objectstore is the port to object storage: S3 on AWS, directories on
// one machine, memory in tests. Implementations map their failures onto the
// fault taxonomy (throttling and 5xx → TransientError, access denied and
// missing buckets → SystemicError) and report absence as ErrNotFound.
package objectstore

import (
	"context"
	"errors"
	"io"
	"time"
)

// Metadata keys written on promoted objects. Lower case: S3 lower-cases
// user metadata keys, and both sides must compare equal.
const (
	MetaSourceSHA256 = "src-sha256"
	MetaRecipe       = "recipe"
	MetaSourceKey    = "src-key"
	MetaFingerprint  = "src-fingerprint" // "sha256" or "fast" (size + head + tail)
)

var (
	// ErrNotFound reports a missing object.
	ErrNotFound = errors.New("objectstore: not found")
	// ErrPreconditionFailed reports a failed conditional write (HTTP 412).
	ErrPreconditionFailed = errors.New("objectstore: precondition failed")
)

// Object describes a stored object.
type Object struct {
	Bucket   string
	Key      string
	Size     int64
	ETag     string
	Modified time.Time
	Metadata map[string]string
	// VersionID is the object's version in a versioned bucket (Head on
	// S3; "" elsewhere).
	VersionID string
}

// CopyRequest copies one object onto another key, replacing its metadata.
type CopyRequest struct {
	SrcBucket, SrcKey string
	DstBucket, DstKey string
	Metadata          map[string]string // replaces the source's (MetadataDirective REPLACE)
	// IfNoneMatch makes the copy fail with ErrPreconditionFailed when the
	// destination exists (If-None-Match: *).
	IfNoneMatch bool
	// IfMatch, when set, makes the copy fail with ErrPreconditionFailed
	// unless the destination's ETag equals it (an atomic overwrite of a known
	// version).
	IfMatch string
	// SrcETag and SrcSize describe the source as its writer was told by
	// its Put (the ETag and size in the answer): a store that would read
	// the source's description before copying (S3 HEADs it for the size
	// and ETag its copy needs) takes them from here instead, and copies
	// only that version (S3: x-amz-copy-source-if-match). A source whose
	// ETag is another fails transient. The copy then has the store's
	// default Content-Type, as a Put without one. SrcETag "": the store
	// reads the source's description itself.
	SrcETag string
	SrcSize int64
}

// PutRequest writes a whole object.
type PutRequest struct {
	Bucket, Key string
	Body        io.Reader
	Size        int64 // -1 when unknown
	Metadata    map[string]string
	IfNoneMatch bool
	// IfMatch, when set, makes the write fail with ErrPreconditionFailed
	// unless the object's ETag equals it (S3 PutObject If-Match: an atomic
	// overwrite of a known version,
	// https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html).
	IfMatch string
	// Scratch marks work in progress (a staging object): a store may skip
	// making it durable, so a machine crash can lose it, and makes it
	// durable when it is moved or copied to its final key. S3 ignores it.
	Scratch bool
}

// PutFileRequest hands a finished local file to a store that keeps objects
// as local files (FileMover).
type PutFileRequest struct {
	Bucket, Key string
	// Path is the file. The store takes it over, success or not: it is
	// renamed into place (copied and removed across file systems).
	Path        string
	Metadata    map[string]string
	IfNoneMatch bool
	// MD5 is the file's hex MD5 when the caller computed it in its own
	// pass over the bytes (it becomes the ETag, as on S3); empty, the store
	// reads the file for it.
	MD5 string
	// Scratch: as PutRequest.Scratch.
	Scratch bool
}

// Store is what the pipeline needs from object storage.
type Store interface {
	Head(ctx context.Context, bucket, key string) (Object, error)
	// Open streams the whole object.
	Open(ctx context.Context, bucket, key string) (io.ReadCloser, error)
	// OpenRange streams length bytes from offset (length < 0: to the end).
	OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error)
	// OpenRangeIfMatch is OpenRange of the version whose ETag is etag: an
	// object rewritten since (another ETag) fails with
	// ErrPreconditionFailed, so a reader that was told an ETag never
	// reads another version's bytes, without a HEAD to check (S3
	// GetObject If-Match,
	// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html).
	// etag "" is OpenRange.
	OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error)
	Put(ctx context.Context, req PutRequest) (Object, error)
	Copy(ctx context.Context, req CopyRequest) (Object, error)
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, bucket, key string) error
	// List calls fn for every object under prefix, in key order.
	List(ctx context.Context, bucket, prefix string, fn func(Object) error) error
}

// FileMover is implemented by stores that keep objects as local files: a
// finished file is renamed in instead of copied (PutFile), and an object is
// renamed onto another key instead of copied and deleted (Move, with Copy's
// metadata and conditions; the source key is gone afterwards, and a Move
// whose source is gone fails with ErrNotFound). Either is one rename of the
// data, so an output is written once.
type FileMover interface {
	PutFile(ctx context.Context, req PutFileRequest) (Object, error)
	Move(ctx context.Context, req CopyRequest) (Object, error)
}

// LocalPather is implemented by stores that keep objects as local files, so
// GDAL can read them in place instead of through a copy.
type LocalPather interface {
	LocalPath(bucket, key string) (string, error)
}
