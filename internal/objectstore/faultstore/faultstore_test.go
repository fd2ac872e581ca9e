package faultstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/objectstoretest"
)

// Without rules the wrapper is transparent.
func TestConformanceWithoutRules(t *testing.T) {
	objectstoretest.RunStoreTests(t, func(t *testing.T) (objectstore.Store, string) {
		return faultstore.New(memstore.New("b")), "b"
	})
}

func seeded(t *testing.T) *memstore.Store {
	t.Helper()
	m := memstore.New("b")
	for _, k := range []string{"in/a.tif", "in/b.tif", "other"} {
		if _, err := m.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: k, Body: strings.NewReader("0123456789"), Size: 10}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		kind   faultstore.Kind
		tier   fault.Tier
		code   string
		status int
	}{
		{faultstore.SlowDown, fault.TierTransient, "SlowDown", 503},
		{faultstore.InternalError, fault.TierTransient, "InternalError", 500},
		{faultstore.RequestTimeout, fault.TierTransient, "RequestTimeout", 400},
		{faultstore.ConnReset, fault.TierTransient, "", 0},
		{faultstore.AccessDenied, fault.TierSystemic, "AccessDenied", 403},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			s := faultstore.New(seeded(t), faultstore.Rule{Op: faultstore.OpHead, Kind: tc.kind})
			_, err := s.Head(context.Background(), "b", "other")
			if fault.TierOf(err) != tc.tier {
				t.Errorf("tier of %v = %q, want %q", err, fault.TierOf(err), tc.tier)
			}
			if !strings.Contains(err.Error(), "faultstore.Head: b/other") {
				t.Errorf("%q does not say where", err)
			}
			var api *faultstore.APIError
			switch {
			case tc.code == "":
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("%v is not ECONNRESET", err)
				}
			case !errors.As(err, &api) || api.Code != tc.code || api.StatusCode != tc.status:
				t.Errorf("%v: want APIError %s %d", err, tc.code, tc.status)
			}
		})
	}
}

func TestRuleSelection(t *testing.T) {
	ctx := context.Background()
	type call struct {
		op, key string
		fail    bool
	}
	head := func(s *faultstore.Store, key string) error { _, err := s.Head(ctx, "b", key); return err }
	del := func(s *faultstore.Store, key string) error { return s.Delete(ctx, "b", key) }
	for _, tc := range []struct {
		name  string
		rules []faultstore.Rule
		calls []call
	}{
		{"first N of an op", []faultstore.Rule{{Op: "Head", Times: 2}}, []call{
			{"Head", "other", true}, {"Delete", "x", false}, {"Head", "in/a.tif", true}, {"Head", "other", false}, {"Head", "other", false},
		}},
		{"by key", []faultstore.Rule{{Op: "Head", Key: "in/a.tif"}}, []call{
			{"Head", "other", false}, {"Head", "in/a.tif", true}, {"Head", "in/a.tif", true}, {"Head", "in/b.tif", false},
		}},
		{"by match", []faultstore.Rule{{Match: faultstore.KeyPrefix("in/"), Times: 1}}, []call{
			{"Head", "other", false}, {"Delete", "in/x", true}, {"Head", "in/a.tif", false},
		}},
		{"every other call", []faultstore.Rule{{Op: "Head", When: func(n int) bool { return n%2 == 0 }}}, []call{
			{"Head", "other", false}, {"Head", "other", true}, {"Head", "other", false}, {"Head", "other", true},
		}},
		{"first rule that fires wins", []faultstore.Rule{{Op: "Head", Times: 1}, {Op: "Head", Key: "other", Times: 1}}, []call{
			{"Head", "other", true}, {"Head", "other", true}, {"Head", "other", false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := faultstore.New(seeded(t), tc.rules...)
			want := 0
			for i, c := range tc.calls {
				var err error
				if c.op == "Head" {
					err = head(s, c.key)
				} else {
					err = del(s, c.key)
				}
				if (err != nil) != c.fail {
					t.Errorf("call %d %s %s: err = %v, want failure %v", i, c.op, c.key, err, c.fail)
				}
				if c.fail {
					want++
				}
			}
			if got := s.Injected("Head") + s.Injected("Delete"); got != want {
				t.Errorf("Injected = %d, want %d", got, want)
			}
			if s.InjectedTotal() != want {
				t.Errorf("InjectedTotal = %d, want %d", s.InjectedTotal(), want)
			}
		})
	}
}

func TestMidStreamFailure(t *testing.T) {
	ctx := context.Background()
	s := faultstore.New(seeded(t),
		faultstore.Rule{Op: faultstore.OpOpen, AfterBytes: 4, Times: 1},
		faultstore.Rule{Op: faultstore.OpOpenRange, AfterBytes: 3, Kind: faultstore.InternalError, Times: 1})
	rc, err := s.Open(ctx, "b", "other")
	if err != nil {
		t.Fatalf("Open with a mid-stream rule failed up front: %v", err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if string(b) != "0123" || fault.TierOf(err) != fault.TierTransient || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read %q then %v, want 4 bytes then a transient connection reset", b, err)
	}
	rc, err = s.OpenRange(ctx, "b", "other", 2, 6)
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(rc)
	rc.Close()
	if string(b) != "234" || fault.TierOf(err) != fault.TierTransient {
		t.Errorf("ranged read %q then %v", b, err)
	}
	// The second time the stream is whole.
	rc, _ = s.Open(ctx, "b", "other")
	if b, err := io.ReadAll(rc); err != nil || string(b) != "0123456789" {
		t.Errorf("retry read %q, %v", b, err)
	}
	if s.Injected("Open") != 1 || s.Injected("OpenRange") != 1 || s.Calls("Open") != 2 {
		t.Errorf("counters: open %d/%d range %d", s.Injected("Open"), s.Calls("Open"), s.Injected("OpenRange"))
	}
	br := faultstore.NewBreakingReader(strings.NewReader("abcdef"), 2, nil)
	if b, err := io.ReadAll(br); string(b) != "ab" || fault.TierOf(err) != fault.TierTransient {
		t.Errorf("NewBreakingReader: %q, %v", b, err)
	}
}

// An Applied failure changes the store and still reports an error: the
// caller's retry must cope (e.g. a promote retried with If-None-Match).
func TestAppliedFailure(t *testing.T) {
	ctx := context.Background()
	inner := seeded(t)
	s := faultstore.New(inner, faultstore.Rule{Op: faultstore.OpCopy, Kind: faultstore.RequestTimeout, Applied: true, Times: 1})
	req := objectstore.CopyRequest{SrcBucket: "b", SrcKey: "in/a.tif", DstBucket: "b", DstKey: "out/a.tif", IfNoneMatch: true}
	if _, err := s.Copy(ctx, req); fault.TierOf(err) != fault.TierTransient {
		t.Fatalf("Copy = %v, want a transient error", err)
	}
	if _, err := inner.Head(ctx, "b", "out/a.tif"); err != nil {
		t.Fatalf("the applied copy is missing: %v", err)
	}
	if _, err := s.Copy(ctx, req); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("retried Copy = %v, want ErrPreconditionFailed", err)
	}
	// A failure that is not applied leaves the store alone.
	s.AddRule(faultstore.Rule{Op: faultstore.OpPut, Kind: faultstore.SlowDown})
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "new", Body: bytes.NewReader(nil), Size: 0}); fault.TierOf(err) != fault.TierTransient {
		t.Errorf("Put = %v", err)
	}
	if _, err := inner.Head(ctx, "b", "new"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("unapplied Put reached the store: %v", err)
	}
	s.ClearRules()
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "new", Body: bytes.NewReader(nil), Size: 0}); err != nil {
		t.Errorf("Put after ClearRules: %v", err)
	}
}

func TestCustomErrorAndList(t *testing.T) {
	boom := fault.Data(fault.CorruptSource, "bad")
	s := faultstore.New(seeded(t), faultstore.Rule{Op: faultstore.OpList, Key: "in/", Err: boom})
	err := s.List(context.Background(), "b", "in/", func(objectstore.Object) error { return nil })
	if !errors.Is(err, boom) {
		t.Errorf("List = %v, want the custom error", err)
	}
	if err := s.List(context.Background(), "b", "", func(objectstore.Object) error { return nil }); err != nil {
		t.Errorf("List of another prefix = %v", err)
	}
}

// Exactly Times failures are injected however many goroutines call.
func TestConcurrentCounting(t *testing.T) {
	s := faultstore.New(seeded(t), faultstore.Rule{Op: faultstore.OpHead, Kind: faultstore.SlowDown, Times: 25})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fails int
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := s.Head(context.Background(), "b", "other"); err != nil {
					mu.Lock()
					fails++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if fails != 25 || s.Injected(faultstore.OpHead) != 25 || s.Calls(faultstore.OpHead) != 200 {
		t.Errorf("fails %d, injected %d, calls %d; want 25, 25, 200", fails, s.Injected(faultstore.OpHead), s.Calls(faultstore.OpHead))
	}
}
