package migration

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// readCounting counts the reads of source objects (Open and OpenRange).
type readCounting struct {
	objectstore.Store
	mu    sync.Mutex
	reads map[string]int
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

// TestHashCheckHandsTheSourceToConvert: with a SourceCache shared by
// HashCheck and Convert, a small source is read once for both, and Convert
// converts exactly the bytes that were hashed, and HashCheck's engine
// choice reads the TIFF header from them too; without one, the hash, the
// header and Convert each read it.
func TestHashCheckHandsTheSourceToConvert(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cache     *objectstore.SourceCache
		wantReads int
	}{
		{"shared", objectstore.NewSourceCache(1<<20, 1<<20), 1},
		{"none", nil, 3},
		{"source larger than the cache keeps", objectstore.NewSourceCache(1<<20, 4), 3},
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
