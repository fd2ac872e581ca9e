package fingerprint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// rangeStore serves one in-memory object through OpenRange.
type rangeStore struct {
	objectstore.Store // unused methods panic
	data              []byte

	mu        sync.Mutex
	calls     int
	inflight  atomic.Int32
	maxFlight atomic.Int32
	failFirst map[int64]error // offset → error returned once
	delay     time.Duration
}

func (s *rangeStore) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	if key != "k" {
		return objectstore.Object{}, objectstore.ErrNotFound
	}
	return objectstore.Object{Bucket: bucket, Key: key, Size: int64(len(s.data))}, nil
}

func (s *rangeStore) OpenRange(ctx context.Context, bucket, key string, off, n int64) (io.ReadCloser, error) {
	if key != "k" {
		return nil, objectstore.ErrNotFound
	}
	s.mu.Lock()
	s.calls++
	err := s.failFirst[off]
	delete(s.failFirst, off)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cur := s.inflight.Add(1)
	for {
		m := s.maxFlight.Load()
		if cur <= m || s.maxFlight.CompareAndSwap(m, cur) {
			break
		}
	}
	time.Sleep(s.delay)
	s.inflight.Add(-1)
	end := int64(len(s.data))
	if n >= 0 && off+n < end {
		end = off + n
	}
	if off > end {
		off = end
	}
	return io.NopCloser(bytes.NewReader(s.data[off:end])), nil
}

func randomBytes(n int) []byte {
	var seed [32]byte
	seed[0], seed[1] = byte(n), byte(n>>8)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestSHA256MatchesFullHash(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{0, 1, 999, 1000, 1001, 4096, 10_000} {
		for _, workers := range []int{1, 3, 8} {
			st := &rangeStore{data: randomBytes(size)}
			got, err := SHA256(ctx, st, "b", "k", -1, Options{ChunkSize: 1000, Workers: workers})
			if err != nil {
				t.Fatalf("size %d workers %d: %v", size, workers, err)
			}
			if want := hexSum(st.data); got != want {
				t.Fatalf("size %d workers %d: got %s want %s", size, workers, got, want)
			}
		}
	}
}

func TestSHA256BoundsInFlight(t *testing.T) {
	st := &rangeStore{data: randomBytes(64 * 1000), delay: 2 * time.Millisecond}
	got, err := SHA256(context.Background(), st, "b", "k", int64(len(st.data)), Options{ChunkSize: 1000, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got != hexSum(st.data) {
		t.Fatal("hash mismatch")
	}
	if m := st.maxFlight.Load(); m > 3 || m < 2 {
		t.Fatalf("max in flight = %d, want 2..3 (parallel, bounded by workers)", m)
	}
	if st.calls != 64 {
		t.Fatalf("calls = %d, want 64", st.calls)
	}
}

func TestSHA256RetriesTransientChunk(t *testing.T) {
	st := &rangeStore{data: randomBytes(5000), failFirst: map[int64]error{
		2000: fault.Transient("test", errors.New("connection reset by peer")),
	}}
	got, err := SHA256(context.Background(), st, "b", "k", -1, Options{ChunkSize: 1000, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got != hexSum(st.data) {
		t.Fatal("hash mismatch after retry")
	}
}

func TestSHA256StopsOnSystemic(t *testing.T) {
	boom := fault.Systemic("test", errors.New("AccessDenied"))
	st := &rangeStore{data: randomBytes(5000), failFirst: map[int64]error{3000: boom}}
	_, err := SHA256(context.Background(), st, "b", "k", -1, Options{ChunkSize: 1000, Workers: 2})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the systemic error", err)
	}
}

func TestSHA256ShortObjectIsTransient(t *testing.T) {
	st := &rangeStore{data: randomBytes(5000)}
	// Claim a larger size than the object has (it shrank while hashing).
	_, err := SHA256(context.Background(), st, "b", "k", 6000, Options{ChunkSize: 1000, Workers: 2, Attempts: 1})
	if fault.TierOf(err) != fault.TierTransient {
		t.Fatalf("err = %v, want transient", err)
	}
}

func TestNotFound(t *testing.T) {
	st := &rangeStore{data: randomBytes(10)}
	ctx := context.Background()
	if _, err := SHA256(ctx, st, "b", "missing", -1, Options{}); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("SHA256: %v", err)
	}
	if _, err := SHA256(ctx, st, "b", "missing", 0, Options{}); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("SHA256 size 0: %v", err)
	}
	if _, err := FastFingerprint(ctx, st, "b", "missing", 5); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("FastFingerprint: %v", err)
	}
}

func TestSHA256Canceled(t *testing.T) {
	st := &rangeStore{data: randomBytes(100_000), delay: 5 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := SHA256(ctx, st, "b", "k", -1, Options{ChunkSize: 100, Workers: 2})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

// reference is the definition of the fast fingerprint, written out.
func reference(data []byte) string {
	h := sha256.New()
	var sz [8]byte
	binary.BigEndian.PutUint64(sz[:], uint64(len(data)))
	h.Write(sz[:])
	if len(data) <= 2*FastSpan {
		h.Write(data)
	} else {
		h.Write(data[:FastSpan])
		h.Write(data[len(data)-FastSpan:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestFastFingerprint(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{0, 1, FastSpan - 1, FastSpan, FastSpan + 1, 2*FastSpan - 1, 2 * FastSpan, 2*FastSpan + 1, 3*FastSpan + 12345} {
		st := &rangeStore{data: randomBytes(size)}
		want := reference(st.data)
		if got := FastFingerprintBytes(st.data); got != want {
			t.Fatalf("size %d: bytes %s want %s", size, got, want)
		}
		got, err := FastFingerprint(ctx, st, "b", "k", -1)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("size %d: store %s want %s", size, got, want)
		}
	}
}

func TestFastFingerprintSensitivity(t *testing.T) {
	base := randomBytes(3 * FastSpan)
	fp := FastFingerprintBytes(base)
	// A change in the head or the tail changes the fingerprint.
	for _, at := range []int{0, FastSpan - 1, 2 * FastSpan, 3*FastSpan - 1} {
		b := bytes.Clone(base)
		b[at] ^= 1
		if FastFingerprintBytes(b) == fp {
			t.Fatalf("flip at %d not detected", at)
		}
	}
	// The size is part of it even when head and tail agree.
	if FastFingerprintBytes(append(bytes.Clone(base[:FastSpan]), base[FastSpan:]...)) != fp {
		t.Fatal("same bytes, different fingerprint")
	}
	// A change in the middle is (by design) not seen.
	b := bytes.Clone(base)
	b[FastSpan+10] ^= 1
	if FastFingerprintBytes(b) != fp {
		t.Fatal("middle flip changed the fast fingerprint")
	}
	// It never equals the plain SHA-256 (the size prefix separates them).
	small := randomBytes(100)
	if FastFingerprintBytes(small) == hexSum(small) {
		t.Fatal("fast fingerprint equals sha256 for a small object")
	}
}

// TestRecycledBuffersHashCorrectly: objects of different sizes hashed one
// after another (full-size chunk buffers recycled between them, stale bytes
// in them) still give each object's own SHA-256.
func TestRecycledBuffersHashCorrectly(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, size := range []int{3*DefaultChunkSize + 5, 7 << 10, 2 * DefaultChunkSize, 0, DefaultChunkSize - 1, 3*DefaultChunkSize + 5} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		got, err := SHA256(context.Background(), &rangeStore{data: data}, "b", "k", -1, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := sha256.Sum256(data); got != hex.EncodeToString(want[:]) {
			t.Errorf("size %d: %s, want %x", size, got, want)
		}
	}
}

// localRangeStore is a rangeStore that says it keeps objects as local files.
type localRangeStore struct{ *rangeStore }

func (localRangeStore) LocalPath(bucket, key string) (string, error) { return "/nowhere/" + key, nil }

// TestChunkSizeFollowsTheStore: a store of local files is read in
// LocalChunkSize reads (no request to save, the chunk still cached when
// hashed), any other in DefaultChunkSize ranged GETs; an explicit
// ChunkSize wins over both. Each store's buffers are recycled and hash
// correctly one object after another.
func TestChunkSizeFollowsTheStore(t *testing.T) {
	size := 2*DefaultChunkSize + 3
	data := randomBytes(size)
	want := sha256.Sum256(data)
	for _, tt := range []struct {
		name  string
		local bool
		opts  Options
		reads int
	}{
		{"remote", false, Options{}, 3},
		{"local", true, Options{}, 2*DefaultChunkSize/LocalChunkSize + 1},
		{"local, chunk size set", true, Options{ChunkSize: DefaultChunkSize}, 3},
		{"remote, chunk size set", false, Options{ChunkSize: LocalChunkSize}, 2*DefaultChunkSize/LocalChunkSize + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				rs := &rangeStore{data: data}
				var st objectstore.Store = rs
				if tt.local {
					st = localRangeStore{rs}
				}
				got, err := SHA256(context.Background(), st, "b", "k", -1, tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				if got != hex.EncodeToString(want[:]) {
					t.Fatalf("digest %s, want %x", got, want)
				}
				if rs.calls != tt.reads {
					t.Errorf("%d reads, want %d", rs.calls, tt.reads)
				}
			}
		})
	}
}

// BenchmarkSHA256 reports the bytes allocated per object: a small file must
// not cost Workers × 8 MiB of zeroed buffers.
func BenchmarkSHA256(b *testing.B) {
	for _, size := range []int{7 << 10, 1 << 20, 64 << 20} {
		data := bytes.Repeat([]byte{0x5a}, size)
		st := &rangeStore{data: data}
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := SHA256(context.Background(), st, "b", "k", int64(size), Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadWhole: one request, the bytes and the hash SHA256 gives; a
// transient failure is retried, a short object is transient, a missing one
// ErrNotFound.
func TestReadWhole(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		size      int64 // claimed; the object has 5000 bytes
		failFirst error
		wantCalls int
		wantErr   func(error) bool
	}{
		{name: "whole", size: 5000, wantCalls: 1},
		{name: "retried", size: 5000, failFirst: fault.Transient("test", errors.New("reset")), wantCalls: 2},
		{name: "shrank", size: 6000, wantCalls: 3, wantErr: func(err error) bool { return fault.TierOf(err) == fault.TierTransient }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &rangeStore{data: randomBytes(5000)}
			if tt.failFirst != nil {
				st.failFirst = map[int64]error{0: tt.failFirst}
			}
			data, sum, err := ReadWhole(ctx, st, "b", "k", tt.size, Options{Attempts: 3})
			if st.calls != tt.wantCalls {
				t.Errorf("%d requests, want %d", st.calls, tt.wantCalls)
			}
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(data, st.data) || sum != hexSum(st.data) {
				t.Fatalf("ReadWhole = %d bytes, %s, %v", len(data), sum, err)
			}
		})
	}
	if _, _, err := ReadWhole(ctx, &rangeStore{data: randomBytes(10)}, "b", "missing", 10, Options{}); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("missing object: %v, want ErrNotFound", err)
	}
}
