// Package fingerprint hashes objects through objectstore.Store.OpenRange, so
// every store (S3, directories, memory) gets the same two digests:
//
//   - SHA256: the full content hash, downloaded as ranged reads by several
//     workers ahead of the hasher but hashed strictly in order, with memory
//     bounded by Workers × ChunkSize whatever the object's size;
//   - FastFingerprint: for objects over the size threshold (1 GiB by
//     default, docs/decisions/0004), SHA-256 of the size, the first 8 MiB
//     and the last 8 MiB.
//
// Both return lower-case hex.
package fingerprint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

const (
	// DefaultChunkSize is the size of one ranged read of a remote object
	// (one GET each).
	DefaultChunkSize = 8 << 20
	// LocalChunkSize is the size of one read of a store that keeps objects
	// as local files (objectstore.LocalPather): a read costs no request
	// there, Workers × 1 MiB of buffers is a third of the peak memory of
	// 8 MiB chunks, and a small chunk is likelier to be still in the CPU's
	// cache when it is hashed while other work shares that cache (on an
	// idle machine both sizes cost the same CPU: docs/benchmarks.md,
	// "SHA-256 against openssl").
	LocalChunkSize = 1 << 20
	// DefaultWorkers is the number of ranged reads in flight.
	DefaultWorkers = 4
	// DefaultAttempts is how many times one chunk is read before giving up
	// when the read fails with a transient error (a body cut short, a reset).
	DefaultAttempts = 3
	// FastSpan is the length of the head and of the tail in FastFingerprint.
	FastSpan = 8 << 20
)

// Options tunes SHA256.
type Options struct {
	ChunkSize int64 // 0: LocalChunkSize for a local store, else DefaultChunkSize
	Workers   int   // 0: DefaultWorkers
	Attempts  int   // 0: DefaultAttempts
	// IfMatch, when set, reads only the version of the object with this
	// ETag (the one a HEAD described): a rewritten object fails with a
	// TransientError wrapping objectstore.ErrPreconditionFailed instead of
	// being hashed under the old version's size and ETag.
	IfMatch string
}

func (o Options) norm(store objectstore.Store) Options {
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
		if _, local := store.(objectstore.LocalPather); local {
			o.ChunkSize = LocalChunkSize
		}
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	return o
}

// SHA256 returns the hex SHA-256 of the object's size bytes. With size < 0
// the size is taken from Head. The object is read as ranged chunks by
// Workers goroutines ahead of the hasher; a chunk that comes back short (the
// object changed while being read) fails with a TransientError.
func SHA256(ctx context.Context, store objectstore.Store, bucket, key string, size int64, opts Options) (string, error) {
	sum, _, err := SHA256Head(ctx, store, bucket, key, size, opts, nil)
	return sum, err
}

// SHA256Head is SHA256 that also copies the object's first len(head)
// bytes into head as they pass (n of them: fewer when the object is
// shorter), for a caller that reads a header next.
func SHA256Head(ctx context.Context, store objectstore.Store, bucket, key string, size int64, opts Options, head []byte) (sum string, n int, err error) {
	o := opts.norm(store)
	if size < 0 {
		obj, err := store.Head(ctx, bucket, key)
		if err != nil {
			return "", 0, err
		}
		size = obj.Size
	}
	h := sha256.New()
	if n, err = hashSpans(ctx, store, bucket, key, []span{{0, size}}, o, h, head); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ReadWhole reads the first size bytes of the object with one ranged
// request (retried as SHA256's reads are) and returns them with their hex
// SHA-256: what SHA256 would return, plus the bytes, for a caller that
// converts them next.
func ReadWhole(ctx context.Context, store objectstore.Store, bucket, key string, size int64, opts Options) ([]byte, string, error) {
	if size <= 0 {
		sum, err := SHA256(ctx, store, bucket, key, size, opts)
		return nil, sum, err
	}
	buf := make([]byte, size)
	if err := readChunk(ctx, store, bucket, key, 0, buf, opts.norm(store)); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(buf)
	return buf, hex.EncodeToString(sum[:]), nil
}

type chunk struct {
	buf []byte
	err error
}

// span is a byte range of the object.
type span struct{ off, n int64 }

// hashSpans writes the bytes of each span, in order, into h, and the
// first bytes of the object into head when the spans start at 0 (n of
// them). The spans are cut into chunks of at most o.ChunkSize that up to
// o.Workers goroutines read ahead of the hasher.
func hashSpans(ctx context.Context, store objectstore.Store, bucket, key string, spans []span, o Options, h hash.Hash, head []byte) (n int, err error) {
	var chunks []span
	for _, s := range spans {
		for off := s.off; off < s.off+s.n; off += o.ChunkSize {
			chunks = append(chunks, span{off, min(o.ChunkSize, s.off+s.n-off)})
		}
	}
	if len(chunks) == 0 {
		// Still prove the object is there: hashing a missing key must fail
		// even when there is nothing to read.
		rc, err := openRange(ctx, store, bucket, key, o.IfMatch, 0, 0)
		if err != nil {
			return 0, err
		}
		return 0, rc.Close()
	}
	workers := min(o.Workers, len(chunks))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// pool holds the buffers; taking one is the right to start a chunk, so
	// at most `workers` chunks are buffered or in flight at any time. Chunks
	// start in order and are consumed in order, so the oldest unconsumed
	// chunk always holds a buffer: no deadlock.
	var bufLen int64
	for _, c := range chunks {
		bufLen = max(bufLen, c.n)
	}
	pool := make(chan []byte, workers)
	for range workers {
		pool <- chunkBuffer(bufLen)
	}
	results := make([]chan chunk, len(chunks))
	for i := range results {
		results[i] = make(chan chunk, 1) // a worker never blocks on send
	}
	go func() {
		for i, c := range chunks {
			var buf []byte
			select {
			case buf = <-pool:
			case <-ctx.Done():
				return
			}
			go func() {
				buf := buf[:c.n]
				results[i] <- chunk{buf: buf, err: readChunk(ctx, store, bucket, key, c.off, buf, o)}
			}()
		}
	}()
	for i := range chunks {
		var c chunk
		select {
		case c = <-results[i]:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if c.err != nil {
			return 0, c.err
		}
		if i == 0 && chunks[0].off == 0 {
			n = copy(head, c.buf)
		}
		h.Write(c.buf)
		pool <- c.buf[:cap(c.buf)]
	}
	// Every chunk was consumed, so every buffer is back: keep full-size
	// ones for the next object.
	for range workers {
		releaseChunkBuffer(<-pool)
	}
	return n, nil
}

// fullChunks recycles full chunk buffers (DefaultChunkSize and
// LocalChunkSize) between objects: hashing a large object per job would
// otherwise allocate (and zero) Workers × the chunk size each time. The map
// is never written after init, so it is read without a lock.
var fullChunks = map[int64]*sync.Pool{DefaultChunkSize: {}, LocalChunkSize: {}}

// chunkBuffer returns a buffer of n bytes: a recycled one for a full
// chunk, an exact-size one below (a 7 KB file gets 7 KB, not 8 MiB).
func chunkBuffer(n int64) []byte {
	if pool := fullChunks[n]; pool != nil {
		if b, ok := pool.Get().(*[]byte); ok {
			return *b
		}
	}
	return make([]byte, n)
}

func releaseChunkBuffer(b []byte) {
	if pool := fullChunks[int64(cap(b))]; pool != nil {
		b = b[:cap(b)]
		pool.Put(&b)
	}
}

// readChunk fills buf from offset, retrying transient failures (not a
// rewritten object: the version asked for is gone for good).
func readChunk(ctx context.Context, store objectstore.Store, bucket, key string, offset int64, buf []byte, o Options) error {
	var err error
	for a := 0; a < o.Attempts; a++ {
		if err = readOnce(ctx, store, bucket, key, o.IfMatch, offset, buf); err == nil {
			return nil
		}
		if ctx.Err() != nil || fault.TierOf(err) != fault.TierTransient || errors.Is(err, objectstore.ErrPreconditionFailed) {
			return err
		}
	}
	return err
}

// openRange is OpenRange, of the version etag when one is given.
func openRange(ctx context.Context, store objectstore.Store, bucket, key, etag string, offset, n int64) (io.ReadCloser, error) {
	if etag == "" {
		return store.OpenRange(ctx, bucket, key, offset, n)
	}
	rc, err := store.OpenRangeIfMatch(ctx, bucket, key, etag, offset, n)
	if errors.Is(err, objectstore.ErrPreconditionFailed) {
		return nil, fault.Transient("fingerprint.read", fmt.Errorf("%s/%s was rewritten while it was read: %w", bucket, key, err))
	}
	return rc, err
}

func readOnce(ctx context.Context, store objectstore.Store, bucket, key, etag string, offset int64, buf []byte) error {
	rc, err := openRange(ctx, store, bucket, key, etag, offset, int64(len(buf)))
	if err != nil {
		return err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, buf)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fault.Transient("fingerprint.read", fmt.Errorf("%s/%s: range at %d: got %d of %d bytes (object changed?)",
			bucket, key, offset, n, len(buf)))
	default:
		var t *fault.TransientError
		var s *fault.SystemicError
		if errors.As(err, &t) || errors.As(err, &s) || errors.Is(err, context.Canceled) {
			return err
		}
		// A failed body read (reset mid-stream) is worth another try.
		return fault.Transient("fingerprint.read", err)
	}
}

// FastFingerprint returns the hex SHA-256 of
//
//	uint64 big-endian size ‖ bytes [0, h) ‖ bytes [max(h, size−FastSpan), size)
//
// with h = min(FastSpan, size): the size, the first 8 MiB and the last
// 8 MiB, never hashing a byte twice (an object up to 16 MiB is hashed
// whole, after its size). size < 0 is taken from Head. The head and the
// tail are read in parallel.
func FastFingerprint(ctx context.Context, store objectstore.Store, bucket, key string, size int64) (string, error) {
	if size < 0 {
		obj, err := store.Head(ctx, bucket, key)
		if err != nil {
			return "", err
		}
		size = obj.Size
	}
	headLen := min(int64(FastSpan), size)
	tailOff := max(headLen, size-FastSpan)
	h := sha256.New()
	var sz [8]byte
	binary.BigEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	// At most two chunks (head, tail), read in parallel, hashed in order.
	o := Options{ChunkSize: FastSpan, Workers: 2}.norm(store)
	if _, err := hashSpans(ctx, store, bucket, key, []span{{0, headLen}, {tailOff, size - tailOff}}, o, h, nil); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FastFingerprintBytes is FastFingerprint over an in-memory object (tests,
// and callers that already hold the bytes).
func FastFingerprintBytes(data []byte) string {
	size := int64(len(data))
	headLen := min(int64(FastSpan), size)
	tailOff := max(headLen, size-FastSpan)
	h := sha256.New()
	var sz [8]byte
	binary.BigEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	h.Write(data[:headLen])
	h.Write(data[tailOff:])
	return hex.EncodeToString(h.Sum(nil))
}
