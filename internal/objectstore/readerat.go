package objectstore

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Read-ahead defaults (ReadAhead's zero values).
const (
	// DefaultWholeObjectMax is the largest object read whole by the first
	// read: one GET instead of one per reader call (a striped 1 MB GeoTIFF
	// cost ~160 ranged GETs without it).
	DefaultWholeObjectMax = 64 << 20
	// DefaultBlockSize is the aligned range fetched per GET above it.
	DefaultBlockSize = 8 << 20
	// DefaultMaxBlocks bounds the blocks kept per reader.
	DefaultMaxBlocks = 8
)

// ReadAhead sizes a ReaderAt's fetches from the object's size: an object up
// to WholeObjectMax bytes is fetched whole by the first read; a larger one
// in aligned BlockSize ranges, at most MaxBlocks of them kept (least
// recently used dropped first). Memory per reader is therefore at most
// max(WholeObjectMax, BlockSize × MaxBlocks). Zero values take the defaults;
// a negative WholeObjectMax never reads whole.
type ReadAhead struct {
	WholeObjectMax int64
	BlockSize      int64
	MaxBlocks      int
}

func (r ReadAhead) withDefaults() ReadAhead {
	if r.WholeObjectMax == 0 {
		r.WholeObjectMax = DefaultWholeObjectMax
	}
	if r.BlockSize <= 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.MaxBlocks <= 0 {
		r.MaxBlocks = DefaultMaxBlocks
	}
	return r
}

// ReaderAt reads an object by byte ranges, for readers (GDAL through a VSI
// handler) that want random access without a local copy. Reads are served
// from blocks fetched as ReadAhead says; concurrent reads of one block
// share its fetch. Safe for concurrent use.
type ReaderAt struct {
	ctx         context.Context
	store       Store
	bucket, key string
	size        int64
	etag        string // IfMatch: the only version read ("" any)
	blockSize   int64
	maxBlocks   int

	mu      sync.Mutex
	blocks  map[int64]*block
	lru     *list.List // of *block, most recently used first
	fetches int64
	fetched int64
}

// block is one aligned range: data once ready is closed (nil err).
type block struct {
	idx   int64
	ready chan struct{}
	data  []byte
	err   error
	elem  *list.Element
}

// NewReaderAt returns a ReaderAt over bucket/key with the default
// read-ahead, whose size the caller knows (from Head).
func NewReaderAt(ctx context.Context, s Store, bucket, key string, size int64) *ReaderAt {
	return NewReaderAtWith(ctx, s, bucket, key, size, ReadAhead{})
}

// NewReaderAtWith is NewReaderAt with the read-ahead ra.
func NewReaderAtWith(ctx context.Context, s Store, bucket, key string, size int64, ra ReadAhead) *ReaderAt {
	ra = ra.withDefaults()
	r := &ReaderAt{ctx: ctx, store: s, bucket: bucket, key: key, size: size,
		blockSize: ra.BlockSize, maxBlocks: ra.MaxBlocks, blocks: map[int64]*block{}, lru: list.New()}
	if size > 0 && size <= ra.WholeObjectMax {
		r.blockSize, r.maxBlocks = size, 1
	}
	return r
}

// IfMatch makes r read only the version of the object whose ETag is etag
// (Store.OpenRangeIfMatch): once the object is rewritten, reads fail with
// ErrPreconditionFailed. Set before the first read; returns r.
func (r *ReaderAt) IfMatch(etag string) *ReaderAt {
	r.etag = etag
	return r
}

// Size is the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// Fetches is the number of requests the reader made to the store so far,
// and the bytes they returned.
func (r *ReaderAt) Fetches() (requests, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetches, r.fetched
}

// ReadAt implements io.ReaderAt. Errors keep the store's classification (a
// reset connection stays transient).
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("objectstore.ReadAt: %s/%s: negative offset %d", r.bucket, r.key, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > r.size {
		want = r.size - off
	}
	n := 0
	for int64(n) < want {
		pos := off + int64(n)
		b, err := r.block(pos / r.blockSize)
		if err != nil {
			return n, err
		}
		n += copy(p[n:want], b[pos-(pos/r.blockSize)*r.blockSize:])
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// block returns block idx's bytes, fetching them unless held or in flight.
func (r *ReaderAt) block(idx int64) ([]byte, error) {
	r.mu.Lock()
	b, ok := r.blocks[idx]
	if ok {
		r.lru.MoveToFront(b.elem)
		r.mu.Unlock()
		<-b.ready
		return b.data, b.err
	}
	b = &block{idx: idx, ready: make(chan struct{})}
	b.elem = r.lru.PushFront(b)
	r.blocks[idx] = b
	for r.lru.Len() > r.maxBlocks {
		old := r.lru.Back().Value.(*block)
		r.lru.Remove(old.elem)
		delete(r.blocks, old.idx) // readers holding it keep their slice
	}
	r.fetches++
	r.mu.Unlock()

	b.data, b.err = r.fetch(idx)
	r.mu.Lock()
	r.fetched += int64(len(b.data))
	if b.err != nil && r.blocks[idx] == b {
		// Not kept: the next read asks again (GDAL may retry).
		r.lru.Remove(b.elem)
		delete(r.blocks, idx)
	}
	r.mu.Unlock()
	close(b.ready)
	return b.data, b.err
}

func (r *ReaderAt) fetch(idx int64) ([]byte, error) {
	start := idx * r.blockSize
	length := min(r.blockSize, r.size-start)
	// The whole object is one plain GET; a block, a ranged one.
	rlen := length
	if start == 0 && length == r.size {
		rlen = -1
	}
	var rc io.ReadCloser
	var err error
	if r.etag != "" {
		rc, err = r.store.OpenRangeIfMatch(r.ctx, r.bucket, r.key, r.etag, start, rlen)
	} else {
		rc, err = r.store.OpenRange(r.ctx, r.bucket, r.key, start, rlen)
	}
	if err != nil {
		return nil, fmt.Errorf("objectstore.ReadAt: %s/%s@%d: %w", r.bucket, r.key, start, err)
	}
	defer rc.Close()
	buf := make([]byte, length)
	n, err := io.ReadFull(rc, buf)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("object ended at %d bytes, %d expected: %w", start+int64(n), r.size, io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("objectstore.ReadAt: %s/%s@%d: %w", r.bucket, r.key, start, err)
	}
	return buf, nil
}
