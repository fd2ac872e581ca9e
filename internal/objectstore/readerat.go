package objectstore

import (
	"context"
	"fmt"
	"io"
)

// ReaderAt reads an object by byte ranges, for readers (GDAL through a VSI
// handler) that want random access without a local copy.
type ReaderAt struct {
	ctx         context.Context
	store       Store
	bucket, key string
	size        int64
}

// NewReaderAt returns a ReaderAt over bucket/key, whose size the caller
// knows (from Head).
func NewReaderAt(ctx context.Context, s Store, bucket, key string, size int64) *ReaderAt {
	return &ReaderAt{ctx: ctx, store: s, bucket: bucket, key: key, size: size}
}

// Size is the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt with one ranged read per call. Errors keep
// the store's classification (a reset connection stays transient).
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > r.size {
		want = r.size - off
	}
	rc, err := r.store.OpenRange(r.ctx, r.bucket, r.key, off, want)
	if err != nil {
		return 0, fmt.Errorf("objectstore.ReadAt: %s/%s@%d: %w", r.bucket, r.key, off, err)
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:want])
	if err != nil {
		return n, fmt.Errorf("objectstore.ReadAt: %s/%s@%d: %w", r.bucket, r.key, off, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}
