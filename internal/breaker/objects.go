package breaker

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// BucketDependency names the dependency of a bucket's reads (Head, Open,
// OpenRange, List): "s3:<bucket>", the name the breaker used for the
// whole bucket before it told reads from writes, so a stored record keeps
// its meaning.
func BucketDependency(bucket string) string { return "s3:" + bucket }

// BucketWriteDependency names the dependency of a bucket's writes (Put,
// PutFile, Copy and Move to it, Delete): "s3:<bucket>/write". A slash is
// never part of a bucket name, so the two cannot collide.
func BucketWriteDependency(bucket string) string { return "s3:" + bucket + "/write" }

// Objects puts an object store behind the breaker, two dependencies per
// bucket: its reads (BucketDependency) and its writes
// (BucketWriteDependency). They are apart because a bucket can refuse one
// and answer the other (a bucket policy or KMS key change, PUT
// throttling): every job's HashCheck HEADs its destination before Convert
// writes, and one shared count would be reset by each HEAD while every
// write fails. Apart, the probe after a cooldown is also of the failing
// kind: the first write let through, never a HEAD that proves nothing
// about writes. Reads of a stream already opened are not counted: the
// call that opened it answered. A disabled breaker returns
// inner unchanged. When inner keeps objects as local files
// (objectstore.LocalPather) the result does too.
func Objects(inner objectstore.Store, b *Breaker) objectstore.Store {
	if !b.Enabled() {
		return inner
	}
	g := &guarded{inner: inner, b: b}
	lp, local := inner.(objectstore.LocalPather)
	fm, moves := inner.(objectstore.FileMover)
	switch {
	case local && moves:
		return &guardedFiles{guardedLocal: &guardedLocal{guarded: g, lp: lp}, fm: fm}
	case local:
		return &guardedLocal{guarded: g, lp: lp}
	}
	return g
}

type guarded struct {
	inner objectstore.Store
	b     *Breaker
}

type guardedLocal struct {
	*guarded
	lp objectstore.LocalPather
}

func (g *guardedLocal) LocalPath(bucket, key string) (string, error) {
	return g.lp.LocalPath(bucket, key)
}

// guardedFiles keeps a directory store's renames (FileMover) behind the
// breaker too: without them every output would be copied twice.
type guardedFiles struct {
	*guardedLocal
	fm objectstore.FileMover
}

func (g *guardedFiles) PutFile(ctx context.Context, req objectstore.PutFileRequest) (objectstore.Object, error) {
	return call(ctx, g.b, BucketWriteDependency(req.Bucket), func() (objectstore.Object, error) { return g.fm.PutFile(ctx, req) })
}

func (g *guardedFiles) Move(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	return call(ctx, g.b, BucketWriteDependency(req.DstBucket), func() (objectstore.Object, error) { return g.fm.Move(ctx, req) })
}

// call runs fn under the breaker of dependency.
func call[T any](ctx context.Context, b *Breaker, dependency string, fn func() (T, error)) (T, error) {
	var zero T
	t, err := b.Allow(ctx, dependency)
	if err != nil {
		return zero, err
	}
	v, err := fn()
	err = b.Done(ctx, t, err)
	if IsWriteDependency(dependency) {
		err = holdSystemic(dependency, err)
	}
	return v, err
}

// exhausted reports a worker's own resource running out (a full disk or
// quota, memory): not the bucket refusing, and the local run stops on it
// at once instead of waiting.
func exhausted(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.ENOMEM)
}

// IsWriteDependency reports whether dependency names a bucket's writes
// (BucketWriteDependency).
func IsWriteDependency(dependency string) bool {
	return strings.HasPrefix(dependency, "s3:") && strings.HasSuffix(dependency, "/write")
}

// holdSystemic turns a counted systemic write failure the breaker did not
// already report as open (AccessDenied, a KMS key disabled or denied, a
// missing bucket) into a BreakerOpenError in state CLOSED that asks for a
// one-second wait: the job goes round the state machine's WaitForBreaker
// loop instead of being dead-lettered, and its next attempt counts again,
// so a denied bucket opens its breaker after Threshold failures and holds
// every file until a write probe succeeds. It applies to writes only: they
// go to the pipeline's own staging and output prefixes under its own
// role, so their denial is the bucket's configuration, never one file's;
// a source object can be denied on its own, and its read stays a
// SystemicError. A transient failure is left to the task's retries.
func holdSystemic(dependency string, err error) error {
	var open *fault.BreakerOpenError
	if err == nil || errors.As(err, &open) || fault.TierOf(err) != fault.TierSystemic || !Counts(err) || exhausted(err) {
		return err
	}
	return &fault.BreakerOpenError{Dependency: dependency, State: string(Closed), RetryAfterSeconds: 1, Err: err}
}

func (g *guarded) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	return call(ctx, g.b, BucketDependency(bucket), func() (objectstore.Object, error) { return g.inner.Head(ctx, bucket, key) })
}

func (g *guarded) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	return call(ctx, g.b, BucketDependency(bucket), func() (io.ReadCloser, error) { return g.inner.Open(ctx, bucket, key) })
}

func (g *guarded) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return call(ctx, g.b, BucketDependency(bucket), func() (io.ReadCloser, error) { return g.inner.OpenRange(ctx, bucket, key, offset, length) })
}

func (g *guarded) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error) {
	return call(ctx, g.b, BucketDependency(bucket), func() (io.ReadCloser, error) {
		return g.inner.OpenRangeIfMatch(ctx, bucket, key, etag, offset, length)
	})
}

func (g *guarded) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	return call(ctx, g.b, BucketWriteDependency(req.Bucket), func() (objectstore.Object, error) { return g.inner.Put(ctx, req) })
}

func (g *guarded) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	return call(ctx, g.b, BucketWriteDependency(req.DstBucket), func() (objectstore.Object, error) { return g.inner.Copy(ctx, req) })
}

func (g *guarded) Delete(ctx context.Context, bucket, key string) error {
	_, err := call(ctx, g.b, BucketWriteDependency(bucket), func() (struct{}, error) { return struct{}{}, g.inner.Delete(ctx, bucket, key) })
	return err
}

func (g *guarded) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	_, err := call(ctx, g.b, BucketDependency(bucket), func() (struct{}, error) { return struct{}{}, g.inner.List(ctx, bucket, prefix, fn) })
	return err
}
