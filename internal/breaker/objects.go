package breaker

import (
	"context"
	"io"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// BucketDependency names the dependency of a bucket: "s3:<bucket>".
func BucketDependency(bucket string) string { return "s3:" + bucket }

// Objects puts an object store behind the breaker, one dependency per
// bucket (BucketDependency). Reads of a stream already opened are not
// counted: the call that opened it answered. A disabled breaker returns
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
	return call(ctx, g.b, req.Bucket, func() (objectstore.Object, error) { return g.fm.PutFile(ctx, req) })
}

func (g *guardedFiles) Move(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	return call(ctx, g.b, req.DstBucket, func() (objectstore.Object, error) { return g.fm.Move(ctx, req) })
}

// call runs fn under the breaker of bucket.
func call[T any](ctx context.Context, b *Breaker, bucket string, fn func() (T, error)) (T, error) {
	var zero T
	t, err := b.Allow(ctx, BucketDependency(bucket))
	if err != nil {
		return zero, err
	}
	v, err := fn()
	return v, b.Done(ctx, t, err)
}

func (g *guarded) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	return call(ctx, g.b, bucket, func() (objectstore.Object, error) { return g.inner.Head(ctx, bucket, key) })
}

func (g *guarded) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	return call(ctx, g.b, bucket, func() (io.ReadCloser, error) { return g.inner.Open(ctx, bucket, key) })
}

func (g *guarded) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return call(ctx, g.b, bucket, func() (io.ReadCloser, error) { return g.inner.OpenRange(ctx, bucket, key, offset, length) })
}

func (g *guarded) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	return call(ctx, g.b, req.Bucket, func() (objectstore.Object, error) { return g.inner.Put(ctx, req) })
}

func (g *guarded) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	return call(ctx, g.b, req.DstBucket, func() (objectstore.Object, error) { return g.inner.Copy(ctx, req) })
}

func (g *guarded) Delete(ctx context.Context, bucket, key string) error {
	_, err := call(ctx, g.b, bucket, func() (struct{}, error) { return struct{}{}, g.inner.Delete(ctx, bucket, key) })
	return err
}

func (g *guarded) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	_, err := call(ctx, g.b, bucket, func() (struct{}, error) { return struct{}{}, g.inner.List(ctx, bucket, prefix, fn) })
	return err
}
