package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

// rangeCounter records the ranges a ReaderAt asks the store for.
type rangeCounter struct {
	objectstore.Store
	mu     sync.Mutex
	ranges [][2]int64
	fail   error
}

func (c *rangeCounter) OpenRange(ctx context.Context, bucket, key string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.ranges = append(c.ranges, [2]int64{off, n})
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return c.Store.OpenRange(ctx, bucket, key, off, n)
}

func newObject(t *testing.T, size int) (*rangeCounter, []byte) {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(1, uint64(size)))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	s := memstore.New("b")
	if _, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "k", Body: bytes.NewReader(data), Size: int64(size)}); err != nil {
		t.Fatal(err)
	}
	return &rangeCounter{Store: s}, data
}

func TestReaderAtFetchesBySize(t *testing.T) {
	const kib = 1 << 10
	tests := []struct {
		name   string
		size   int
		ra     objectstore.ReadAhead
		reads  [][2]int // offset, length, in order
		ranges [][2]int64
	}{
		{
			name:   "small object: one whole GET serves every read",
			size:   300 * kib,
			ra:     objectstore.ReadAhead{WholeObjectMax: 1 << 20, BlockSize: 64 * kib, MaxBlocks: 2},
			reads:  [][2]int{{0, 16}, {100 * kib, 4 * kib}, {299 * kib, 2 * kib}, {5, 200 * kib}},
			ranges: [][2]int64{{0, -1}},
		},
		{
			name:  "large object: aligned blocks, each fetched once while kept",
			size:  300 * kib,
			ra:    objectstore.ReadAhead{WholeObjectMax: 100 * kib, BlockSize: 64 * kib, MaxBlocks: 4},
			reads: [][2]int{{0, 16}, {10, 100}, {60 * kib, 8 * kib}, {299 * kib, 4 * kib}, {1, 1}},
			// The read across 64 KiB takes blocks 0 and 1; the last block is short.
			ranges: [][2]int64{{0, 64 * kib}, {64 * kib, 64 * kib}, {256 * kib, 44 * kib}},
		},
		{
			name:  "memory bound: the least recently used block is dropped and fetched again",
			size:  300 * kib,
			ra:    objectstore.ReadAhead{WholeObjectMax: -1, BlockSize: 64 * kib, MaxBlocks: 2},
			reads: [][2]int{{0, 1}, {64 * kib, 1}, {128 * kib, 1}, {64 * kib, 1}, {0, 1}},
			ranges: [][2]int64{{0, 64 * kib}, {64 * kib, 64 * kib}, {128 * kib, 64 * kib},
				{0, 64 * kib}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, data := newObject(t, tt.size)
			r := objectstore.NewReaderAtWith(context.Background(), store, "b", "k", int64(tt.size), tt.ra)
			for _, rd := range tt.reads {
				p := make([]byte, rd[1])
				n, err := r.ReadAt(p, int64(rd[0]))
				end := min(rd[0]+rd[1], tt.size)
				if n != end-rd[0] || (err != nil && !(errors.Is(err, io.EOF) && end < rd[0]+rd[1])) {
					t.Fatalf("ReadAt(%d, %d) = %d, %v", rd[0], rd[1], n, err)
				}
				if !bytes.Equal(p[:n], data[rd[0]:end]) {
					t.Fatalf("ReadAt(%d, %d): wrong bytes", rd[0], rd[1])
				}
			}
			if len(store.ranges) != len(tt.ranges) {
				t.Fatalf("store ranges %v, want %v", store.ranges, tt.ranges)
			}
			for i := range tt.ranges {
				if store.ranges[i] != tt.ranges[i] {
					t.Fatalf("store ranges %v, want %v", store.ranges, tt.ranges)
				}
			}
			if n, _ := r.Fetches(); n != int64(len(tt.ranges)) {
				t.Errorf("Fetches = %d, want %d", n, len(tt.ranges))
			}
		})
	}
}

// TestReaderAtSharesConcurrentFetches: reads racing for one block (GDAL's
// multi-range reads) cost one request.
func TestReaderAtSharesConcurrentFetches(t *testing.T) {
	store, data := newObject(t, 1<<20)
	r := objectstore.NewReaderAt(context.Background(), store, "b", "k", 1<<20)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, 1000)
			off := int64(i * 50000)
			if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+1000]) {
				t.Errorf("ReadAt(%d): %v", off, err)
			}
		}()
	}
	wg.Wait()
	if len(store.ranges) != 1 {
		t.Errorf("%d requests, want 1: %v", len(store.ranges), store.ranges)
	}
}

// TestReaderAtFailuresAreNotKept: a failed fetch keeps the store's error
// and the next read asks again.
func TestReaderAtFailuresAreNotKept(t *testing.T) {
	store, data := newObject(t, 4096)
	errDown := errors.New("store down")
	store.fail = errDown
	r := objectstore.NewReaderAt(context.Background(), store, "b", "k", 4096)
	p := make([]byte, 10)
	if _, err := r.ReadAt(p, 0); !errors.Is(err, errDown) {
		t.Fatalf("ReadAt = %v, want the store's error", err)
	}
	store.fail = nil
	if _, err := r.ReadAt(p, 0); err != nil || !bytes.Equal(p, data[:10]) {
		t.Fatalf("ReadAt after recovery: %v", err)
	}
	if len(store.ranges) != 2 {
		t.Errorf("%d requests, want 2", len(store.ranges))
	}
}

// TestReaderAtShortObject: an object shorter than the size the caller was
// told (changed since Head) is an error, not zeros.
func TestReaderAtShortObject(t *testing.T) {
	store, _ := newObject(t, 1000)
	r := objectstore.NewReaderAt(context.Background(), store, "b", "k", 2000)
	if _, err := r.ReadAt(make([]byte, 10), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadAt = %v, want ErrUnexpectedEOF", err)
	}
	if _, err := r.ReadAt(make([]byte, 10), 2000); !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt at the end = %v, want EOF", err)
	}
}
