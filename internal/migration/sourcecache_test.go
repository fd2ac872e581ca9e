package migration

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// readCounting counts the reads of source objects (Open, OpenRange and
// OpenRangeIfMatch).
type readCounting struct {
	objectstore.Store
	mu    sync.Mutex
	reads map[string]int
	heads map[string]int
}

func (s *readCounting) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	s.mu.Lock()
	if s.heads == nil {
		s.heads = map[string]int{}
	}
	s.heads[bucket+"/"+key]++
	s.mu.Unlock()
	return s.Store.Head(ctx, bucket, key)
}

func (s *readCounting) count(bucket, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[bucket+"/"+key]++
}

func (s *readCounting) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	s.count(bucket, key)
	return s.Store.Open(ctx, bucket, key)
}

func (s *readCounting) OpenRange(ctx context.Context, bucket, key string, off, n int64) (io.ReadCloser, error) {
	s.count(bucket, key)
	return s.Store.OpenRange(ctx, bucket, key, off, n)
}

func (s *readCounting) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, off, n int64) (io.ReadCloser, error) {
	s.count(bucket, key)
	return s.Store.OpenRangeIfMatch(ctx, bucket, key, etag, off, n)
}

// TestHashCheckHandsTheSourceToConvert: with a SourceCache shared by
// HashCheck and Convert, a small source is read once for both, and Convert
// converts exactly the bytes that were hashed, and HashCheck's engine
// choice reads the TIFF header from them too; without one, the hash and
// Convert each read it (the header is kept from the hash's pass).
func TestHashCheckHandsTheSourceToConvert(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cache     *objectstore.SourceCache
		wantReads int
	}{
		{"shared", objectstore.NewSourceCache(1<<20, 1<<20), 1},
		{"none", nil, 2},
		{"source larger than the cache keeps", objectstore.NewSourceCache(1<<20, 4), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			store := &readCounting{Store: f.store, reads: map[string]int{}}
			quiet := slog.New(slog.DiscardHandler)
			f.hash = NewHashCheck(f.cfg, store, f.tracker, StoreFingerprinter{Store: store, Threshold: 1 << 20, Keep: tt.cache}, quiet)
			eng := &rangeEngine{}
			conv := NewConvert(f.cfg, store, f.tracker, eng, fakeValidator, quiet).WithSources(tt.cache)
			f.put(t, "x.tif", "pixels of x")
			hc := f.check(t, "e1", "x.tif")
			if _, err := conv.Handle(context.Background(), ConvertInput{Job: hc.Job, Context: inv("e1", 0)}); err != nil {
				t.Fatal(err)
			}
			if eng.ranged != 1 {
				t.Fatalf("ConvertReader called %d times", eng.ranged)
			}
			if got := store.reads["src/x.tif"]; got != tt.wantReads {
				t.Errorf("source read %d times, want %d", got, tt.wantReads)
			}
			if tt.cache != nil && tt.cache.Held() != 0 {
				t.Errorf("cache still holds %d bytes after Convert took them", tt.cache.Held())
			}
		})
	}
}

// rewriteOnRead overwrites an object just before its first read, after
// HashCheck's HEAD described it.
type rewriteOnRead struct {
	objectstore.Store
	once sync.Once
	put  func()
}

func (s *rewriteOnRead) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, off, n int64) (io.ReadCloser, error) {
	s.once.Do(s.put)
	return s.Store.OpenRangeIfMatch(ctx, bucket, key, etag, off, n)
}

// TestHashCheckHashesTheVersionItDescribed: a source rewritten between
// HashCheck's HEAD and its read is not hashed (nor kept for Convert) under
// the old version's size and ETag: the check fails transient, and its
// retry describes and hashes the new version.
func TestHashCheckHashesTheVersionItDescribed(t *testing.T) {
	for _, cache := range []*objectstore.SourceCache{nil, objectstore.NewSourceCache(1<<20, 1<<20)} {
		f := newFixture(t)
		f.put(t, "x.tif", "version one")
		store := &rewriteOnRead{Store: f.store, put: func() { f.put(t, "x.tif", "version two, longer") }}
		quiet := slog.New(slog.DiscardHandler)
		hc := NewHashCheck(f.cfg, store, f.tracker, StoreFingerprinter{Store: store, Threshold: 1 << 20, Keep: cache}, quiet)
		_, err := hc.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: "x.tif"}, Context: inv("e1", 0)})
		if fault.TierOf(err) != fault.TierTransient {
			t.Fatalf("cache %v: HashCheck of a source rewritten after its HEAD: %v, want a TransientError", cache != nil, err)
		}
		if cache != nil && cache.Held() != 0 {
			t.Errorf("the cache holds %d bytes of a version HashCheck did not describe", cache.Held())
		}
		out, err := hc.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: "x.tif"}, Context: inv("e1", 1)})
		if err != nil || out.Job.SourceSize != int64(len("version two, longer")) {
			t.Fatalf("retry: %+v %v", out.Job, err)
		}
	}
}
