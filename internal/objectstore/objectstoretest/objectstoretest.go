// Package objectstoretest is the conformance suite of objectstore.Store:
// every implementation (directories, memory, S3) runs RunStoreTests so the
// pipeline can rely on one behaviour everywhere.
package objectstoretest

// Size: the one Store conformance suite every backend runs: a short test function per contract.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// NewStoreFunc returns a store and the name of an existing, empty bucket in
// it. It is called once per subtest.
type NewStoreFunc func(t *testing.T) (objectstore.Store, string)

// RunStoreTests runs the conformance suite against the stores newStore makes.
//
// Behaviour pinned here, beyond the interface's comments:
//   - ETag is the bare (unquoted) lower-case hex MD5 of the content for
//     objects written by Put; an unconditional Copy preserves it (a
//     conditional one may be a multipart copy, whose ETag is its own).
//   - Metadata keys come back lower-case; Head returns all of them, List none
//     are required.
//   - OpenRange clips ranges past the end; an offset at or past the end
//     yields an empty stream, not an error.
//   - If-Match on a missing destination fails with ErrPreconditionFailed (S3
//     may say ErrNotFound; both are accepted).
//   - A missing bucket is a fault.SystemicError.
func RunStoreTests(t *testing.T, newStore NewStoreFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s objectstore.Store, bucket string)
	}{
		{"PutHeadOpen", testPutHeadOpen},
		{"PutUnknownSizeAndEmpty", testPutUnknownSizeAndEmpty},
		{"PutSizeMismatch", testPutSizeMismatch},
		{"Overwrite", testOverwrite},
		{"PutIfNoneMatch", testPutIfNoneMatch},
		{"PutIfMatch", testPutIfMatch},
		{"OpenRangeIfMatch", testOpenRangeIfMatch},
		{"CopyKnownSource", testCopyKnownSource},
		{"Missing", testMissing},
		{"MissingBucket", testMissingBucket},
		{"OpenRange", testOpenRange},
		{"CopyReplacesMetadata", testCopyReplacesMetadata},
		{"CopyOntoItself", testCopyOntoItself},
		{"CopyMissingSource", testCopyMissingSource},
		{"CopyIfNoneMatch", testCopyIfNoneMatch},
		{"CopyIfMatch", testCopyIfMatch},
		{"ConcurrentCopyIfNoneMatch", testConcurrentCopyIfNoneMatch},
		{"ConcurrentPutIfNoneMatch", testConcurrentPutIfNoneMatch},
		{"ConcurrentCopyIfMatch", testConcurrentCopyIfMatch},
		{"ReadersSeeWholeObjects", testReadersSeeWholeObjects},
		{"Delete", testDelete},
		{"ListOrderAndPrefix", testListOrderAndPrefix},
		{"ListStopsOnError", testListStopsOnError},
		{"ListAllowsWrites", testListAllowsWrites},
		{"KeysWithSpacesAndUnicode", testUnicodeKeys},
		{"LargeObject", testLargeObject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, bucket := newStore(t)
			tc.fn(t, s, bucket)
		})
	}
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func put(t *testing.T, s objectstore.Store, bucket, key string, data []byte, meta map[string]string) objectstore.Object {
	t.Helper()
	obj, err := s.Put(context.Background(), objectstore.PutRequest{
		Bucket: bucket, Key: key, Body: bytes.NewReader(data), Size: int64(len(data)), Metadata: meta,
	})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return obj
}

func read(t *testing.T, s objectstore.Store, bucket, key string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), bucket, key)
	if err != nil {
		t.Fatalf("Open %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func head(t *testing.T, s objectstore.Store, bucket, key string) objectstore.Object {
	t.Helper()
	obj, err := s.Head(context.Background(), bucket, key)
	if err != nil {
		t.Fatalf("Head %s: %v", key, err)
	}
	return obj
}

func sameMeta(got, want map[string]string) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return maps.Equal(got, want)
}

func testPutHeadOpen(t *testing.T, s objectstore.Store, bucket string) {
	data := []byte("hello, cloud-native world\n")
	meta := map[string]string{
		objectstore.MetaSourceSHA256: strings.Repeat("ab", 32),
		objectstore.MetaRecipe:       "recipe-1f2e",
		objectstore.MetaSourceKey:    "raw/dem tile.tif",
		objectstore.MetaFingerprint:  "sha256",
	}
	before := time.Now().Add(-time.Minute)
	got := put(t, s, bucket, "out/a.tif", data, meta)
	if got.ETag != md5hex(data) {
		t.Errorf("Put ETag = %q, want hex MD5 %q", got.ETag, md5hex(data))
	}
	if got.Size != int64(len(data)) || got.Key != "out/a.tif" || got.Bucket != bucket {
		t.Errorf("Put = %+v", got)
	}
	h := head(t, s, bucket, "out/a.tif")
	if h.ETag != got.ETag || h.Size != int64(len(data)) || h.Key != "out/a.tif" || h.Bucket != bucket {
		t.Errorf("Head = %+v, Put = %+v", h, got)
	}
	if !sameMeta(h.Metadata, meta) {
		t.Errorf("Head metadata = %v, want %v", h.Metadata, meta)
	}
	if h.Modified.Before(before) || h.Modified.After(time.Now().Add(time.Minute)) {
		t.Errorf("Head Modified = %v, not about now", h.Modified)
	}
	if b := read(t, s, bucket, "out/a.tif"); !bytes.Equal(b, data) {
		t.Errorf("Open = %q, want %q", b, data)
	}
}

func testPutUnknownSizeAndEmpty(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	for _, tc := range []struct {
		key  string
		data []byte
		size int64
	}{
		{"unknown-size", []byte("streamed body"), -1},
		{"empty", nil, 0},
		{"empty-unknown", nil, -1},
	} {
		obj, err := s.Put(ctx, objectstore.PutRequest{Bucket: bucket, Key: tc.key, Body: bytes.NewReader(tc.data), Size: tc.size})
		if err != nil {
			t.Fatalf("Put %s: %v", tc.key, err)
		}
		if obj.Size != int64(len(tc.data)) || obj.ETag != md5hex(tc.data) {
			t.Errorf("Put %s = %+v, want size %d etag %s", tc.key, obj, len(tc.data), md5hex(tc.data))
		}
		if b := read(t, s, bucket, tc.key); !bytes.Equal(b, tc.data) {
			t.Errorf("%s: read %q", tc.key, b)
		}
		if h := head(t, s, bucket, tc.key); h.Size != int64(len(tc.data)) || len(h.Metadata) != 0 {
			t.Errorf("Head %s = %+v", tc.key, h)
		}
	}
}

func testPutSizeMismatch(t *testing.T, s objectstore.Store, bucket string) {
	_, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: "short", Body: strings.NewReader("abc"), Size: 10})
	if err == nil {
		t.Fatal("Put with a short body succeeded")
	}
	if _, err := s.Head(context.Background(), bucket, "short"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("after a failed Put, Head = %v, want ErrNotFound", err)
	}
}

func testOverwrite(t *testing.T, s objectstore.Store, bucket string) {
	first := put(t, s, bucket, "k", []byte("version one"), map[string]string{"recipe": "1", "extra": "x"})
	second := put(t, s, bucket, "k", []byte("version two, longer"), map[string]string{"recipe": "2"})
	if first.ETag == second.ETag {
		t.Errorf("ETag unchanged by overwrite: %s", first.ETag)
	}
	h := head(t, s, bucket, "k")
	if h.ETag != second.ETag || !sameMeta(h.Metadata, map[string]string{"recipe": "2"}) {
		t.Errorf("Head after overwrite = %+v", h)
	}
	if b := read(t, s, bucket, "k"); string(b) != "version two, longer" {
		t.Errorf("read after overwrite = %q", b)
	}
}

func testPutIfNoneMatch(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	req := func(body string) objectstore.PutRequest {
		return objectstore.PutRequest{Bucket: bucket, Key: "once", Body: strings.NewReader(body), Size: int64(len(body)), IfNoneMatch: true}
	}
	if _, err := s.Put(ctx, req("first")); err != nil {
		t.Fatalf("first conditional Put: %v", err)
	}
	if _, err := s.Put(ctx, req("second")); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("second conditional Put = %v, want ErrPreconditionFailed", err)
	}
	if b := read(t, s, bucket, "once"); string(b) != "first" {
		t.Errorf("content = %q, want first", b)
	}
}

// testPutIfMatch: a Put with If-Match overwrites only the version named.
func testPutIfMatch(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	old := put(t, s, bucket, "doc", []byte("version one"), nil)
	req := func(body, ifMatch string) objectstore.PutRequest {
		return objectstore.PutRequest{Bucket: bucket, Key: "doc", Body: strings.NewReader(body), Size: int64(len(body)), IfMatch: ifMatch}
	}
	if _, err := s.Put(ctx, req("not this", md5hex([]byte("something else")))); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("Put with a wrong If-Match = %v, want ErrPreconditionFailed", err)
	}
	if _, err := s.Put(ctx, req("version two", old.ETag)); err != nil {
		t.Fatalf("Put with the right If-Match: %v", err)
	}
	if b := read(t, s, bucket, "doc"); string(b) != "version two" {
		t.Fatalf("content = %q, want version two", b)
	}
	if _, err := s.Put(ctx, req("version three", old.ETag)); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("Put with a stale If-Match = %v, want ErrPreconditionFailed", err)
	}
}

// testOpenRangeIfMatch: a read of a named version gives its bytes, and
// fails once the object was rewritten.
func testOpenRangeIfMatch(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	v1 := put(t, s, bucket, "src", []byte("0123456789"), nil)
	for _, r := range []struct {
		off, n int64
		want   string
	}{{0, -1, "0123456789"}, {2, 3, "234"}, {7, -1, "789"}} {
		rc, err := s.OpenRangeIfMatch(ctx, bucket, "src", v1.ETag, r.off, r.n)
		if err != nil {
			t.Fatalf("OpenRangeIfMatch(%d, %d) of the current version: %v", r.off, r.n, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != r.want {
			t.Errorf("OpenRangeIfMatch(%d, %d) = %q %v, want %q", r.off, r.n, b, err, r.want)
		}
	}
	put(t, s, bucket, "src", []byte("rewritten!"), nil)
	for _, n := range []int64{-1, 4} {
		if rc, err := s.OpenRangeIfMatch(ctx, bucket, "src", v1.ETag, 0, n); !errors.Is(err, objectstore.ErrPreconditionFailed) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("OpenRangeIfMatch(0, %d) of a rewritten object = %v, want ErrPreconditionFailed", n, err)
		}
	}
	if _, err := s.OpenRangeIfMatch(ctx, bucket, "absent", v1.ETag, 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("OpenRangeIfMatch of a missing key = %v, want ErrNotFound", err)
	}
}

// testCopyKnownSource: a copy told the source's ETag and size (its Put's
// answer) copies that version, and fails transient once it was
// rewritten, leaving the destination as it was.
func testCopyKnownSource(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	src := put(t, s, bucket, "staged", []byte("staged bytes"), nil)
	req := objectstore.CopyRequest{SrcBucket: bucket, SrcKey: "staged", DstBucket: bucket, DstKey: "final",
		Metadata: map[string]string{"v": "1"}, IfNoneMatch: true, SrcETag: src.ETag, SrcSize: src.Size}
	if _, err := s.Copy(ctx, req); err != nil {
		t.Fatalf("Copy of a known source: %v", err)
	}
	if h := head(t, s, bucket, "final"); h.Size != src.Size || h.Metadata["v"] != "1" || string(read(t, s, bucket, "final")) != "staged bytes" {
		t.Fatalf("final after the copy = %+v", h)
	}
	put(t, s, bucket, "staged", []byte("other bytes!"), nil)
	req.DstKey = "final2"
	_, err := s.Copy(ctx, req)
	if err == nil || fault.TierOf(err) != fault.TierTransient {
		t.Errorf("Copy of a source rewritten since = %v, want a TransientError", err)
	}
	if _, err := s.Head(ctx, bucket, "final2"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("final2 after a refused copy: %v, want ErrNotFound", err)
	}
}

func testMissing(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	put(t, s, bucket, "dir/present", []byte("x"), nil)
	for _, key := range []string{"absent", "dir/absent", "dir", "dir/present/below"} {
		if _, err := s.Head(ctx, bucket, key); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head %s = %v, want ErrNotFound", key, err)
		}
		if rc, err := s.Open(ctx, bucket, key); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Open %s = %v, want ErrNotFound", key, err)
			if rc != nil {
				rc.Close()
			}
		}
		if rc, err := s.OpenRange(ctx, bucket, key, 0, 1); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("OpenRange %s = %v, want ErrNotFound", key, err)
			if rc != nil {
				rc.Close()
			}
		}
	}
}

func testMissingBucket(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	missing := bucket + "-does-not-exist"
	checks := map[string]error{}
	_, checks["Head"] = s.Head(ctx, missing, "k")
	_, checks["Put"] = s.Put(ctx, objectstore.PutRequest{Bucket: missing, Key: "k", Body: strings.NewReader("x"), Size: 1})
	checks["List"] = s.List(ctx, missing, "", func(objectstore.Object) error { return nil })
	for op, err := range checks {
		if tier := fault.TierOf(err); tier != fault.TierSystemic {
			t.Errorf("%s on a missing bucket: %v (tier %q), want a SystemicError", op, err, tier)
		}
	}
}

func testOpenRange(t *testing.T, s objectstore.Store, bucket string) {
	data := []byte("0123456789abcdefghij") // 20 bytes
	put(t, s, bucket, "range", data, nil)
	for _, tc := range []struct {
		name           string
		offset, length int64
		want           string
	}{
		{"whole to end", 0, -1, string(data)},
		{"whole exact", 0, 20, string(data)},
		{"middle", 5, 10, "56789abcde"},
		{"tail to end", 17, -1, "hij"},
		{"one byte", 19, 1, "j"},
		{"clipped", 15, 100, "fghij"},
		{"zero length", 3, 0, ""},
		{"at end", 20, -1, ""},
		{"past end", 25, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := s.OpenRange(context.Background(), bucket, "range", tc.offset, tc.length)
			if err != nil {
				t.Fatalf("OpenRange(%d, %d): %v", tc.offset, tc.length, err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("OpenRange(%d, %d) = %q, want %q", tc.offset, tc.length, b, tc.want)
			}
		})
	}
}

func testCopyReplacesMetadata(t *testing.T, s objectstore.Store, bucket string) {
	data := []byte("staged output")
	src := put(t, s, bucket, "staging/x.tif", data, map[string]string{"stage": "1", "recipe": "old"})
	want := map[string]string{objectstore.MetaSourceSHA256: "abc", objectstore.MetaRecipe: "new"}
	got, err := s.Copy(context.Background(), objectstore.CopyRequest{
		SrcBucket: bucket, SrcKey: "staging/x.tif", DstBucket: bucket, DstKey: "final/x.tif", Metadata: want,
	})
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if got.ETag != src.ETag || got.Size != int64(len(data)) {
		t.Errorf("Copy = %+v, want ETag %s size %d", got, src.ETag, len(data))
	}
	h := head(t, s, bucket, "final/x.tif")
	if !sameMeta(h.Metadata, want) {
		t.Errorf("copied metadata = %v, want exactly %v", h.Metadata, want)
	}
	if h.ETag != src.ETag {
		t.Errorf("copied ETag = %s, want %s", h.ETag, src.ETag)
	}
	if b := read(t, s, bucket, "final/x.tif"); !bytes.Equal(b, data) {
		t.Errorf("copied content = %q", b)
	}
	if hs := head(t, s, bucket, "staging/x.tif"); !sameMeta(hs.Metadata, map[string]string{"stage": "1", "recipe": "old"}) {
		t.Errorf("source metadata changed: %v", hs.Metadata)
	}
	// REPLACE with no metadata clears it.
	if _, err := s.Copy(context.Background(), objectstore.CopyRequest{
		SrcBucket: bucket, SrcKey: "staging/x.tif", DstBucket: bucket, DstKey: "bare/x.tif",
	}); err != nil {
		t.Fatalf("Copy without metadata: %v", err)
	}
	if h := head(t, s, bucket, "bare/x.tif"); len(h.Metadata) != 0 {
		t.Errorf("Copy without metadata kept %v", h.Metadata)
	}
}

func testCopyOntoItself(t *testing.T, s objectstore.Store, bucket string) {
	obj := put(t, s, bucket, "self", []byte("same bytes"), map[string]string{"recipe": "1"})
	got, err := s.Copy(context.Background(), objectstore.CopyRequest{
		SrcBucket: bucket, SrcKey: "self", DstBucket: bucket, DstKey: "self",
		Metadata: map[string]string{"recipe": "2"}, IfMatch: obj.ETag,
	})
	if err != nil {
		t.Fatalf("Copy onto itself: %v", err)
	}
	h := head(t, s, bucket, "self")
	// The copy reports the ETag the object now has. It need not be the old
	// one: a server-side multipart copy's ETag is not the content MD5 (on
	// Amazon S3 above 5 GB, and on stores copied that way at every size).
	if !sameMeta(h.Metadata, map[string]string{"recipe": "2"}) || h.ETag != got.ETag || h.ETag == "" {
		t.Errorf("after self copy: Head = %+v, Copy = %+v (before: %+v)", h, got, obj)
	}
	if b := read(t, s, bucket, "self"); string(b) != "same bytes" {
		t.Errorf("content = %q", b)
	}
}

func testCopyMissingSource(t *testing.T, s objectstore.Store, bucket string) {
	_, err := s.Copy(context.Background(), objectstore.CopyRequest{SrcBucket: bucket, SrcKey: "nope", DstBucket: bucket, DstKey: "dst"})
	if !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("Copy from a missing source = %v, want ErrNotFound", err)
	}
	if _, err := s.Head(context.Background(), bucket, "dst"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("destination appeared: %v", err)
	}
}

func testCopyIfNoneMatch(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	put(t, s, bucket, "src1", []byte("one"), nil)
	put(t, s, bucket, "src2", []byte("two"), nil)
	req := func(src string) objectstore.CopyRequest {
		return objectstore.CopyRequest{SrcBucket: bucket, SrcKey: src, DstBucket: bucket, DstKey: "dst",
			Metadata: map[string]string{"from": src}, IfNoneMatch: true}
	}
	if _, err := s.Copy(ctx, req("src1")); err != nil {
		t.Fatalf("first conditional Copy: %v", err)
	}
	if _, err := s.Copy(ctx, req("src2")); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("second conditional Copy = %v, want ErrPreconditionFailed", err)
	}
	h := head(t, s, bucket, "dst")
	if b := read(t, s, bucket, "dst"); string(b) != "one" || h.Metadata["from"] != "src1" {
		t.Errorf("dst = %q %v, want the first copy", b, h.Metadata)
	}
}

func testCopyIfMatch(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	put(t, s, bucket, "new", []byte("new content"), nil)
	old := put(t, s, bucket, "dst", []byte("old content"), map[string]string{"v": "old"})
	req := func(ifMatch, dst string) objectstore.CopyRequest {
		return objectstore.CopyRequest{SrcBucket: bucket, SrcKey: "new", DstBucket: bucket, DstKey: dst,
			Metadata: map[string]string{"v": "new"}, IfMatch: ifMatch}
	}
	if _, err := s.Copy(ctx, req(md5hex([]byte("something else")), "dst")); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("Copy with a wrong If-Match = %v, want ErrPreconditionFailed", err)
	}
	if b := read(t, s, bucket, "dst"); string(b) != "old content" {
		t.Fatalf("failed If-Match copy changed dst to %q", b)
	}
	if _, err := s.Copy(ctx, req(old.ETag, "dst")); err != nil {
		t.Fatalf("Copy with the right If-Match: %v", err)
	}
	if h := head(t, s, bucket, "dst"); h.Metadata["v"] != "new" || string(read(t, s, bucket, "dst")) != "new content" {
		t.Errorf("dst after If-Match copy = %+v", h)
	}
	// The old ETag is stale now.
	if _, err := s.Copy(ctx, req(old.ETag, "dst")); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("Copy with a stale If-Match = %v, want ErrPreconditionFailed", err)
	}
	_, err := s.Copy(ctx, req(old.ETag, "absent"))
	if !errors.Is(err, objectstore.ErrPreconditionFailed) && !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("If-Match copy onto a missing key = %v, want ErrPreconditionFailed (or ErrNotFound)", err)
	}
}

// race runs n functions at once and reports how many succeeded; every other
// outcome must be ErrPreconditionFailed.
func race(t *testing.T, n int, fn func(i int) error) (winners []int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, i)
			case !errors.Is(err, objectstore.ErrPreconditionFailed):
				t.Errorf("racer %d: %v, want success or ErrPreconditionFailed", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return winners
}

const racers = 16

func testConcurrentCopyIfNoneMatch(t *testing.T, s objectstore.Store, bucket string) {
	for i := range racers {
		put(t, s, bucket, fmt.Sprintf("staging/%02d", i), fmt.Appendf(nil, "candidate %02d", i), nil)
	}
	winners := race(t, racers, func(i int) error {
		_, err := s.Copy(context.Background(), objectstore.CopyRequest{
			SrcBucket: bucket, SrcKey: fmt.Sprintf("staging/%02d", i), DstBucket: bucket, DstKey: "final/out.tif",
			Metadata: map[string]string{"winner": fmt.Sprint(i)}, IfNoneMatch: true,
		})
		return err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent If-None-Match copies succeeded (%v), want exactly 1", len(winners), winners)
	}
	w := winners[0]
	h := head(t, s, bucket, "final/out.tif")
	if b := read(t, s, bucket, "final/out.tif"); string(b) != fmt.Sprintf("candidate %02d", w) || h.Metadata["winner"] != fmt.Sprint(w) {
		t.Errorf("final = %q %v, want the winner %d's content and metadata", b, h.Metadata, w)
	}
}

func testConcurrentPutIfNoneMatch(t *testing.T, s objectstore.Store, bucket string) {
	winners := race(t, racers, func(i int) error {
		body := fmt.Sprintf("writer %02d", i)
		_, err := s.Put(context.Background(), objectstore.PutRequest{
			Bucket: bucket, Key: "claim", Body: strings.NewReader(body), Size: int64(len(body)), IfNoneMatch: true,
		})
		return err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent If-None-Match puts succeeded (%v), want exactly 1", len(winners), winners)
	}
	if b := read(t, s, bucket, "claim"); string(b) != fmt.Sprintf("writer %02d", winners[0]) {
		t.Errorf("claim = %q, want writer %02d", b, winners[0])
	}
}

func testConcurrentCopyIfMatch(t *testing.T, s objectstore.Store, bucket string) {
	base := put(t, s, bucket, "dst", []byte("base"), nil)
	for i := range racers {
		put(t, s, bucket, fmt.Sprintf("src/%02d", i), fmt.Appendf(nil, "update %02d", i), nil)
	}
	winners := race(t, racers, func(i int) error {
		_, err := s.Copy(context.Background(), objectstore.CopyRequest{
			SrcBucket: bucket, SrcKey: fmt.Sprintf("src/%02d", i), DstBucket: bucket, DstKey: "dst", IfMatch: base.ETag,
		})
		return err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent If-Match copies succeeded (%v), want exactly 1", len(winners), winners)
	}
	if b := read(t, s, bucket, "dst"); string(b) != fmt.Sprintf("update %02d", winners[0]) {
		t.Errorf("dst = %q, want update %02d", b, winners[0])
	}
}

// testReadersSeeWholeObjects overwrites an object while others read it:
// every read returns one complete version with its own metadata.
func testReadersSeeWholeObjects(t *testing.T, s objectstore.Store, bucket string) {
	versions := map[string]string{
		md5hex(bytes.Repeat([]byte("A"), 64<<10)):  "A",
		md5hex(bytes.Repeat([]byte("B"), 100<<10)): "B",
	}
	body := func(v string) []byte {
		if v == "A" {
			return bytes.Repeat([]byte("A"), 64<<10)
		}
		return bytes.Repeat([]byte("B"), 100<<10)
	}
	put(t, s, bucket, "hot", body("A"), map[string]string{"v": "A"})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := []string{"A", "B"}[i%2]
			if _, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: "hot",
				Body: bytes.NewReader(body(v)), Size: int64(len(body(v))), Metadata: map[string]string{"v": v}}); err != nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	}()
	deadline := time.Now().Add(300 * time.Millisecond)
	for reads := 0; reads < 20 || time.Now().Before(deadline); reads++ {
		h, err := s.Head(context.Background(), bucket, "hot")
		if err != nil {
			t.Fatalf("Head during overwrites: %v", err)
		}
		if v, ok := versions[h.ETag]; !ok || h.Metadata["v"] != v || h.Size != int64(len(body(v))) {
			t.Fatalf("Head during overwrites = %+v: ETag, size and metadata disagree", h)
		}
		b := read(t, s, bucket, "hot")
		if _, ok := versions[md5hex(b)]; !ok {
			t.Fatalf("read a torn object of %d bytes", len(b))
		}
	}
	cancel()
	wg.Wait()
}

func testDelete(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	put(t, s, bucket, "d/gone", []byte("x"), map[string]string{"a": "b"})
	put(t, s, bucket, "d/kept", []byte("y"), nil)
	if err := s.Delete(ctx, bucket, "d/gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Head(ctx, bucket, "d/gone"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, bucket, "d/gone"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if err := s.Delete(ctx, bucket, "never/existed"); err != nil {
		t.Errorf("Delete of a missing key = %v, want nil", err)
	}
	if got := listKeys(t, s, bucket, ""); !slices.Equal(got, []string{"d/kept"}) {
		t.Errorf("List after Delete = %v", got)
	}
	// The key can be written again, with fresh metadata.
	put(t, s, bucket, "d/gone", []byte("again"), nil)
	if h := head(t, s, bucket, "d/gone"); len(h.Metadata) != 0 || h.Size != 5 {
		t.Errorf("rewritten object = %+v", h)
	}
}

func listKeys(t *testing.T, s objectstore.Store, bucket, prefix string) []string {
	t.Helper()
	keys := []string{}
	err := s.List(context.Background(), bucket, prefix, func(o objectstore.Object) error {
		if o.Bucket != bucket {
			t.Errorf("List object %s has bucket %q", o.Key, o.Bucket)
		}
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List %q: %v", prefix, err)
	}
	return keys
}

func testListOrderAndPrefix(t *testing.T, s objectstore.Store, bucket string) {
	// Byte order puts "a-c" < "a/b" < "a0": a directory walk in name order
	// gets this wrong.
	keys := []string{"z", "a0", "ab/z", "a/c/d", "a-c", "a/b", "a/c/e.tif", "m/n/o/p"}
	sizes := map[string]int{}
	for i, k := range keys {
		data := bytes.Repeat([]byte{'x'}, i+1)
		sizes[k] = len(data)
		put(t, s, bucket, k, data, map[string]string{"k": "v"})
	}
	var objs []objectstore.Object
	if err := s.List(context.Background(), bucket, "", func(o objectstore.Object) error {
		objs = append(objs, o)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if int(o.Size) != sizes[o.Key] || o.ETag == "" || o.Modified.IsZero() {
			t.Errorf("List entry %+v: want size %d, an ETag and a time", o, sizes[o.Key])
		}
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a-c", "a/b", "a/c/d", "a/c/e.tif", "a0", "ab/z", "m/n/o/p", "z"}},
		{"a", []string{"a-c", "a/b", "a/c/d", "a/c/e.tif", "a0", "ab/z"}},
		{"a/", []string{"a/b", "a/c/d", "a/c/e.tif"}},
		{"a/c", []string{"a/c/d", "a/c/e.tif"}},
		{"a/c/", []string{"a/c/d", "a/c/e.tif"}},
		{"a/c/e", []string{"a/c/e.tif"}},
		{"a/c/d", []string{"a/c/d"}},
		{"m/n/", []string{"m/n/o/p"}},
		{"ab", []string{"ab/z"}},
		{"nope", []string{}},
		{"nope/deeper/", []string{}},
		{"z/", []string{}},
	} {
		if got := listKeys(t, s, bucket, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

func testListStopsOnError(t *testing.T, s objectstore.Store, bucket string) {
	for _, k := range []string{"1", "2", "3"} {
		put(t, s, bucket, k, []byte(k), nil)
	}
	stop := errors.New("stop here")
	var seen []string
	err := s.List(context.Background(), bucket, "", func(o objectstore.Object) error {
		seen = append(seen, o.Key)
		if o.Key == "2" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []string{"1", "2"}) {
		t.Errorf("List = %v after %v, want the callback's error after 1, 2", err, seen)
	}
}

// testListAllowsWrites promotes and deletes while listing, as a backfill
// does.
func testListAllowsWrites(t *testing.T, s objectstore.Store, bucket string) {
	ctx := context.Background()
	for _, k := range []string{"in/1", "in/2", "in/3"} {
		put(t, s, bucket, k, []byte(k), nil)
	}
	err := s.List(ctx, bucket, "in/", func(o objectstore.Object) error {
		if _, err := s.Copy(ctx, objectstore.CopyRequest{SrcBucket: bucket, SrcKey: o.Key, DstBucket: bucket,
			DstKey: "out/" + strings.TrimPrefix(o.Key, "in/"), IfNoneMatch: true}); err != nil {
			return err
		}
		return s.Delete(ctx, bucket, o.Key)
	})
	if err != nil {
		t.Fatalf("List with writes: %v", err)
	}
	if got := listKeys(t, s, bucket, ""); !slices.Equal(got, []string{"out/1", "out/2", "out/3"}) {
		t.Errorf("after moving = %v", got)
	}
}

func testUnicodeKeys(t *testing.T, s objectstore.Store, bucket string) {
	keys := []string{"dir with space/file name.tif", "ünïcødé/データ.gpkg", "plus+and=equals/a&b.shp"}
	for _, k := range keys {
		put(t, s, bucket, k, []byte(k), map[string]string{"src-key": k})
	}
	for _, k := range keys {
		if b := read(t, s, bucket, k); string(b) != k {
			t.Errorf("read %q = %q", k, b)
		}
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := listKeys(t, s, bucket, ""); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func testLargeObject(t *testing.T, s objectstore.Store, bucket string) {
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	obj := put(t, s, bucket, "big.bin", data, nil)
	if obj.ETag != md5hex(data) {
		t.Errorf("ETag = %s, want %s", obj.ETag, md5hex(data))
	}
	if b := read(t, s, bucket, "big.bin"); !bytes.Equal(b, data) {
		t.Fatalf("big object differs (%d bytes read)", len(b))
	}
	off, n := int64(1<<20+5), int64(2<<20)
	rc, err := s.OpenRange(context.Background(), bucket, "big.bin", off, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, data[off:off+n]) {
		t.Errorf("range of the big object differs (%d bytes)", len(b))
	}
}
