package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// fakeAPI records calls; each method's behaviour is scripted per test.
type fakeAPI struct {
	API // nil: unscripted calls panic
	mu  sync.Mutex
	log []string

	head       func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error)
	get        func(*s3.GetObjectInput) (*s3.GetObjectOutput, error)
	put        func(*s3.PutObjectInput) (*s3.PutObjectOutput, error)
	copyObject func(*s3.CopyObjectInput) (*s3.CopyObjectOutput, error)
	uploadPart func(*s3.UploadPartInput) (*s3.UploadPartOutput, error)
	complete   func(*s3.CompleteMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error)
	del        func(*s3.DeleteObjectInput) (*s3.DeleteObjectOutput, error)
	partCopies []string
}

func (f *fakeAPI) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

func (f *fakeAPI) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.record("HeadObject " + *in.Key)
	return f.head(in)
}

func (f *fakeAPI) HeadBucket(_ context.Context, in *s3.HeadBucketInput, _ ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	f.record("HeadBucket " + *in.Bucket)
	return &s3.HeadBucketOutput{}, nil
}

func (f *fakeAPI) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.record("GetObject " + *in.Key + " " + aws.ToString(in.Range))
	return f.get(in)
}

func (f *fakeAPI) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.record("PutObject " + *in.Key)
	return f.put(in)
}

func (f *fakeAPI) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.record("DeleteObject " + *in.Key)
	return f.del(in)
}

func (f *fakeAPI) CopyObject(_ context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	f.record("CopyObject " + *in.CopySource)
	return f.copyObject(in)
}

func (f *fakeAPI) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	f.record("CreateMultipartUpload " + *in.Key)
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("up-1")}, nil
}

func (f *fakeAPI) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if f.uploadPart != nil {
		return f.uploadPart(in)
	}
	return &s3.UploadPartOutput{ETag: aws.String(`"p"`)}, nil
}

func (f *fakeAPI) UploadPartCopy(_ context.Context, in *s3.UploadPartCopyInput, _ ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	f.mu.Lock()
	f.partCopies = append(f.partCopies, aws.ToString(in.CopySourceRange))
	f.mu.Unlock()
	return &s3.UploadPartCopyOutput{CopyPartResult: &types.CopyPartResult{ETag: aws.String(`"p"`)}}, nil
}

func (f *fakeAPI) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	f.record("CompleteMultipartUpload " + aws.ToString(in.IfNoneMatch))
	for i, p := range in.MultipartUpload.Parts {
		if aws.ToInt32(p.PartNumber) != int32(i+1) {
			return nil, errors.New("parts out of order")
		}
	}
	if f.complete != nil {
		return f.complete(in)
	}
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(`"abc-2"`)}, nil
}

func (f *fakeAPI) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.record("AbortMultipartUpload " + aws.ToString(in.UploadId))
	return &s3.AbortMultipartUploadOutput{}, nil
}

func (f *fakeAPI) count(prefix string) int {
	n := 0
	for _, l := range f.log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestOpenRangeHeaders(t *testing.T) {
	f := &fakeAPI{
		get: func(*s3.GetObjectInput) (*s3.GetObjectOutput, error) {
			return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(""))}, nil
		},
		head: func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error) { return &s3.HeadObjectOutput{}, nil },
	}
	st := New(f, Options{})
	for _, tc := range []struct {
		off, n int64
		want   string
	}{
		{0, -1, "GetObject k "},
		{10, -1, "GetObject k bytes=10-"},
		{0, 5, "GetObject k bytes=0-4"},
		{100, 1, "GetObject k bytes=100-100"},
		{7, 0, "HeadObject k"},
	} {
		f.log = nil
		rc, err := st.OpenRange(context.Background(), "b", "k", tc.off, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if len(f.log) != 1 || f.log[0] != tc.want {
			t.Errorf("OpenRange(%d, %d) sent %q, want %q", tc.off, tc.n, f.log, tc.want)
		}
	}
	if _, err := st.OpenRange(context.Background(), "b", "k", -1, 3); err == nil {
		t.Error("negative offset accepted")
	}
}

func TestOpenRangePastEnd(t *testing.T) {
	f := &fakeAPI{get: func(*s3.GetObjectInput) (*s3.GetObjectOutput, error) { return nil, code(416, "InvalidRange") }}
	rc, err := New(f, Options{}).OpenRange(context.Background(), "b", "k", 99, 5)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); len(b) != 0 {
		t.Errorf("read %q past the end", b)
	}
}

func TestHeadDisambiguatesMissingBucket(t *testing.T) {
	f := &fakeAPI{head: func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error) { return nil, sdkError(404, nil) }}
	st := New(f, Options{})
	for range 3 {
		if _, err := st.Head(context.Background(), "b", "k"); !errors.Is(err, objectstore.ErrNotFound) {
			t.Fatalf("Head = %v", err)
		}
	}
	if n := f.count("HeadBucket"); n != 1 {
		t.Errorf("%d HeadBucket calls, want 1 (the bucket is remembered)", n)
	}
}

func TestPutSingleAndMultipart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		sizeKnown bool
		multipart bool
	}{
		{"small known", 10, true, false},
		{"small unknown", 10, false, false},
		{"exactly one part known", 100, true, false},
		{"exactly one part unknown", 100, false, true},
		{"two parts known", 150, true, true},
		{"two parts unknown", 200, false, true},
		{"five parts unknown", 450, false, true},
		{"five parts known", 450, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			parts := map[int32][]byte{}
			f := &fakeAPI{put: func(in *s3.PutObjectInput) (*s3.PutObjectOutput, error) {
				return &s3.PutObjectOutput{ETag: aws.String(`"e"`)}, nil
			}, uploadPart: func(in *s3.UploadPartInput) (*s3.UploadPartOutput, error) {
				b, err := io.ReadAll(in.Body)
				mu.Lock()
				parts[*in.PartNumber] = b
				mu.Unlock()
				return &s3.UploadPartOutput{ETag: aws.String(`"p"`)}, err
			}}
			// One part in flight: every part reuses the first part's buffer.
			st := New(f, Options{PartSize: 100, Concurrency: 1})
			size := int64(-1)
			if tc.sizeKnown {
				size = int64(tc.size)
			}
			body := make([]byte, tc.size)
			for i := range body {
				body[i] = byte(i * 7)
			}
			obj, err := st.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "k",
				Body: bytes.NewReader(body), Size: size, Metadata: map[string]string{"Src-SHA256": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.multipart {
				// The parts, in order, are the body, and none is over PartSize
				// (the part buffers are reused between parts).
				var got []byte
				for n := int32(1); n <= int32(len(parts)); n++ {
					if len(parts[n]) > 100 {
						t.Errorf("part %d has %d bytes, over PartSize 100", n, len(parts[n]))
					}
					got = append(got, parts[n]...)
				}
				if !bytes.Equal(got, body) {
					t.Errorf("parts hold %d bytes that are not the body's %d", len(got), len(body))
				}
			}
			if obj.Size != int64(tc.size) || obj.Metadata["src-sha256"] != "x" {
				t.Errorf("Put = %+v", obj)
			}
			if got := f.count("CreateMultipartUpload") == 1; got != tc.multipart {
				t.Errorf("multipart = %v, want %v (log %v)", got, tc.multipart, f.log)
			}
			if !tc.multipart && obj.ETag != "e" {
				t.Errorf("ETag = %q, want it unquoted", obj.ETag)
			}
		})
	}
}

func TestPutMultipartAbortsOnPartFailure(t *testing.T) {
	f := &fakeAPI{uploadPart: func(in *s3.UploadPartInput) (*s3.UploadPartOutput, error) {
		if aws.ToInt32(in.PartNumber) == 2 {
			return nil, code(503, "SlowDown")
		}
		return &s3.UploadPartOutput{ETag: aws.String(`"p"`)}, nil
	}}
	st := New(f, Options{PartSize: 10, Concurrency: 2})
	_, err := st.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "k", Body: bytes.NewReader(make([]byte, 55)), Size: -1})
	if fault.TierOf(err) != fault.TierTransient {
		t.Fatalf("Put = %v, want the part's transient error", err)
	}
	if f.count("AbortMultipartUpload up-1") != 1 || f.count("CompleteMultipartUpload") != 0 {
		t.Errorf("log = %v, want one abort and no completion", f.log)
	}
}

func TestPutSizeMismatch(t *testing.T) {
	f := &fakeAPI{}
	st := New(f, Options{PartSize: 10})
	for _, tc := range []struct{ body, size int }{{5, 8}, {9, 5}, {25, 30}} {
		_, err := st.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "k", Body: bytes.NewReader(make([]byte, tc.body)), Size: int64(tc.size)})
		if err == nil {
			t.Errorf("body %d with Size %d accepted", tc.body, tc.size)
		}
	}
	if f.count("PutObject") != 0 || f.count("CompleteMultipartUpload") != 0 {
		t.Errorf("a mismatched body was written: %v", f.log)
	}
}

func headOK(size int64, etag string) func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
	return func(in *s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
		if *in.Key == "dst" {
			return nil, sdkError(404, nil)
		}
		return &s3.HeadObjectOutput{ContentLength: aws.Int64(size), ETag: aws.String(etag), ContentType: aws.String("image/tiff")}, nil
	}
}

func TestCopyRequest(t *testing.T) {
	var sent *s3.CopyObjectInput
	f := &fakeAPI{head: headOK(10, `"e1"`), copyObject: func(in *s3.CopyObjectInput) (*s3.CopyObjectOutput, error) {
		sent = in
		return &s3.CopyObjectOutput{CopyObjectResult: &types.CopyObjectResult{ETag: aws.String(`"e1"`)}}, nil
	}}
	obj, err := New(f, Options{}).Copy(context.Background(), objectstore.CopyRequest{
		SrcBucket: "raw", SrcKey: "dir with space/ünï+c=ode?.tif", DstBucket: "out", DstKey: "cog/x.tif",
		Metadata: map[string]string{"Recipe": "r"}, IfNoneMatch: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *sent.CopySource, "raw/dir%20with%20space/%C3%BCn%C3%AF%2Bc%3Dode%3F.tif"; got != want {
		t.Errorf("CopySource = %q, want %q", got, want)
	}
	if sent.MetadataDirective != types.MetadataDirectiveReplace || sent.Metadata["recipe"] != "r" ||
		aws.ToString(sent.IfNoneMatch) != "*" || sent.IfMatch != nil ||
		aws.ToString(sent.CopySourceIfMatch) != `"e1"` || aws.ToString(sent.ContentType) != "image/tiff" {
		t.Errorf("CopyObjectInput = %+v", sent)
	}
	if obj.ETag != "e1" || obj.Size != 10 {
		t.Errorf("Copy = %+v", obj)
	}
	_, _ = New(f, Options{}).Copy(context.Background(), objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "d", IfMatch: "abc"})
	if aws.ToString(sent.IfMatch) != `"abc"` || sent.IfNoneMatch != nil {
		t.Errorf("If-Match sent as %q", aws.ToString(sent.IfMatch))
	}
}

func TestCopyRetriesConditionalConflict(t *testing.T) {
	calls := 0
	f := &fakeAPI{head: headOK(10, `"e1"`), copyObject: func(*s3.CopyObjectInput) (*s3.CopyObjectOutput, error) {
		calls++
		if calls < 3 {
			return nil, code(409, "ConditionalRequestConflict")
		}
		return nil, code(412, "PreconditionFailed")
	}}
	_, err := New(f, Options{}).Copy(context.Background(), objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "d", IfNoneMatch: true})
	if !errors.Is(err, objectstore.ErrPreconditionFailed) || calls != 3 {
		t.Errorf("after %d calls: %v, want 409s retried until the 412", calls, err)
	}
}

func TestCopySourceChangedIsTransient(t *testing.T) {
	etag := `"e1"`
	f := &fakeAPI{
		head: func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
			return &s3.HeadObjectOutput{ContentLength: aws.Int64(3), ETag: aws.String(etag)}, nil
		},
		copyObject: func(*s3.CopyObjectInput) (*s3.CopyObjectOutput, error) {
			etag = `"e2"` // rewritten between HEAD and copy: x-amz-copy-source-if-match fails
			return nil, code(412, "PreconditionFailed")
		},
	}
	_, err := New(f, Options{}).Copy(context.Background(), objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "d"})
	if fault.TierOf(err) != fault.TierTransient || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Errorf("Copy = %v, want transient (source changed), not a destination 412", err)
	}
}

func TestCopyMultipartRanges(t *testing.T) {
	f := &fakeAPI{head: headOK(25, `"e1"`)}
	obj, err := New(f, Options{CopyThreshold: 10, CopyPartSize: 10}).Copy(context.Background(),
		objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "dst", IfNoneMatch: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bytes=0-9", "bytes=10-19", "bytes=20-24"}
	got := append([]string(nil), f.partCopies...)
	if len(got) != 3 || !sameSet(got, want) {
		t.Errorf("part ranges = %v, want %v", got, want)
	}
	if f.count("CompleteMultipartUpload *") != 1 || obj.ETag != "abc-2" || obj.Size != 25 {
		t.Errorf("log %v, obj %+v", f.log, obj)
	}
}

func TestCopyThroughClient(t *testing.T) {
	var put *s3.PutObjectInput
	f := &fakeAPI{
		head: headOK(5, `"e1"`),
		get: func(in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
			if aws.ToString(in.IfMatch) != `"e1"` {
				t.Errorf("source GET not pinned to its ETag: %v", in.IfMatch)
			}
			return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader("hello"))}, nil
		},
		put: func(in *s3.PutObjectInput) (*s3.PutObjectOutput, error) {
			put = in
			b, _ := io.ReadAll(in.Body)
			if string(b) != "hello" {
				t.Errorf("put body %q", b)
			}
			return &s3.PutObjectOutput{ETag: aws.String(`"e1"`)}, nil
		},
	}
	_, err := New(f, Options{ConditionalCopy: CopyThroughClient}).Copy(context.Background(),
		objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "dst", IfNoneMatch: true, Metadata: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(put.IfNoneMatch) != "*" || put.Metadata["a"] != "b" || aws.ToString(put.ContentType) != "image/tiff" {
		t.Errorf("PutObjectInput = %+v", put)
	}
	if f.count("CopyObject") != 0 {
		t.Errorf("CopyObject used in client mode: %v", f.log)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

// TestCopyServerMultipart: a conditional copy on a store that enforces the
// condition only on CompleteMultipartUpload is a one-part UploadPartCopy
// pinned to the source's ETag, completed with If-None-Match; nothing is
// downloaded. Unconditional copies stay CopyObject; an empty source, which
// has no range to copy, goes through the client.
func TestCopyServerMultipart(t *testing.T) {
	for _, tt := range []struct {
		name        string
		size        int64
		ifNoneMatch bool
		want        []string // operations in the log, in order
		parts       []string
	}{
		// One part: no HEAD of the destination first, the condition is
		// enforced by CompleteMultipartUpload alone.
		{"conditional", 1 << 20, true, []string{"HeadObject s", "CreateMultipartUpload dst", "CompleteMultipartUpload *"}, []string{"bytes=0-1048575"}},
		{"unconditional", 1 << 20, false, []string{"HeadObject s", "CopyObject b/s"}, nil},
		{"empty source", 0, true, []string{"HeadObject s", "HeadObject dst", "HeadBucket b", "GetObject s ", "PutObject dst"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{
				head: headOK(tt.size, `"e1"`),
				copyObject: func(*s3.CopyObjectInput) (*s3.CopyObjectOutput, error) {
					return &s3.CopyObjectOutput{CopyObjectResult: &types.CopyObjectResult{ETag: aws.String(`"e1"`)}}, nil
				},
				get: func(*s3.GetObjectInput) (*s3.GetObjectOutput, error) {
					return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(""))}, nil
				},
				put: func(*s3.PutObjectInput) (*s3.PutObjectOutput, error) {
					return &s3.PutObjectOutput{ETag: aws.String(`"e0"`)}, nil
				},
			}
			_, err := New(f, Options{ConditionalCopy: CopyServerMultipart}).Copy(context.Background(),
				objectstore.CopyRequest{SrcBucket: "b", SrcKey: "s", DstBucket: "b", DstKey: "dst", IfNoneMatch: tt.ifNoneMatch})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(f.log, "|") != strings.Join(tt.want, "|") {
				t.Errorf("calls %q, want %q", f.log, tt.want)
			}
			if strings.Join(f.partCopies, "|") != strings.Join(tt.parts, "|") {
				t.Errorf("part copies %q, want %q", f.partCopies, tt.parts)
			}
		})
	}
}

// TestCopySourceEncoding: x-amz-copy-source is URL-encoded as AWS
// documents; a server decoding it (query style, "+" as a space, or path
// style) gets the key back, whatever it holds.
func TestCopySourceEncoding(t *testing.T) {
	for _, key := range []string{
		"in/a+b.tif", "in/a b.tif", "in/100%.tif", "in/München (1m).tif", "in/a&b=c;d,e:f@g$h!i'j*k.tif",
		"in/q?x#y.tif", "in/tilde~dash-under_dot.tif", "日本/地図.tif",
	} {
		cs := copySource("raw", key)
		if strings.ContainsAny(strings.TrimPrefix(cs, "raw/"), "+ &=;,:@$!'*()?#") {
			t.Errorf("copySource(%q) = %q leaves a reserved character raw", key, cs)
		}
		for name, decode := range map[string]func(string) (string, error){"path": url.PathUnescape, "query": url.QueryUnescape} {
			if got, err := decode(cs); err != nil || got != "raw/"+key {
				t.Errorf("%s-decoding copySource(%q) = %q, %v; want %q", name, key, got, err, "raw/"+key)
			}
		}
	}
}

// TestStoreRefusesInvalidKeys: keys that could leave a prefix are refused
// as InvalidKey before any request reaches S3.
func TestStoreRefusesInvalidKeys(t *testing.T) {
	f := &fakeAPI{} // any call panics
	st := New(f, Options{})
	ctx := context.Background()
	for _, key := range []string{"in/../../x.tif", "/abs/x.tif", "in//x.tif", "in/./x.tif", "in/a\nb.tif", ""} {
		calls := map[string]func() error{
			"Head": func() error { _, err := st.Head(ctx, "b", key); return err },
			"Open": func() error { _, err := st.Open(ctx, "b", key); return err },
			"Put": func() error {
				_, err := st.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Size: 0})
				return err
			},
			"Delete": func() error { return st.Delete(ctx, "b", key) },
			"CopyTo": func() error {
				_, err := st.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "ok.tif", DstBucket: "b", DstKey: key})
				return err
			},
			"CopyFrom": func() error {
				_, err := st.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: key, DstBucket: "b", DstKey: "ok.tif"})
				return err
			},
		}
		for name, call := range calls {
			var de *fault.DataError
			if err := call(); !errors.As(err, &de) || de.Code != fault.InvalidKey {
				t.Errorf("%s(%q) = %v, want InvalidKey", name, key, err)
			}
		}
	}
}
