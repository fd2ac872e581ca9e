// Package s3store implements objectstore.Store over Amazon S3 (and
// S3-compatible stores such as versitygw) with aws-sdk-go-v2.
//
//   - Put: one PutObject up to PartSize; above it a multipart upload of
//     PartSize parts sent Concurrency at a time (memory: Concurrency ×
//     PartSize), aborted on any failure. IfNoneMatch sends If-None-Match: *
//     (on PutObject, or on CompleteMultipartUpload).
//   - Copy: CopyObject with MetadataDirective REPLACE (the source's
//     Content-Type is kept), pinned to the source's ETag, and
//     If-None-Match: * / If-Match; above CopyThreshold (5 GiB, S3's
//     CopyObject limit) a multipart copy with UploadPartCopy, each part
//     pinned to the source's ETag, the condition checked up front and
//     enforced again on CompleteMultipartUpload. A 409
//     ConditionalRequestConflict (a concurrent conditional write) is retried
//     a few times, as AWS documents, until it resolves to success or 412.
//     Stores that ignore conditions on CopyObject but enforce them on
//     CompleteMultipartUpload (versitygw v1.8.0) take
//     Options.ConditionalCopy = CopyServerMultipart (still server-side);
//     CopyThroughClient is the last resort.
//   - OpenRange: a ranged GET ("bytes=off-end", or "bytes=off-" to the end).
//
// Errors are mapped onto the taxonomy by MapError.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

const (
	// MinPartSize is S3's smallest part (except the last).
	MinPartSize = 5 << 20
	// MaxParts is S3's largest part count.
	MaxParts = 10000
	// DefaultPartSize is the multipart threshold and part size of Put.
	DefaultPartSize = 16 << 20
	// DefaultConcurrency is the parts in flight per Put or Copy.
	DefaultConcurrency = 4
	// DefaultCopyThreshold is the largest object CopyObject accepts.
	DefaultCopyThreshold = 5 << 30
	// DefaultCopyPartSize is the UploadPartCopy part size (raised to fit
	// MaxParts when needed).
	DefaultCopyPartSize = 512 << 20
)

// API is the subset of *s3.Client the store uses.
type API interface {
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CopyObject(context.Context, *s3.CopyObjectInput, ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

var _ API = (*s3.Client)(nil)

// Options tunes the store. Zero values take the defaults above.
type Options struct {
	// PartSize is both the size above which Put goes multipart and the
	// part size (at least MinPartSize on real S3; smaller values are
	// allowed for tests against stores that accept them).
	PartSize int64
	// Concurrency is the parts uploaded or copied at once.
	Concurrency int
	// CopyThreshold is the source size above which Copy goes multipart.
	// Lower it in tests to exercise UploadPartCopy.
	CopyThreshold int64
	// CopyPartSize is the UploadPartCopy part size.
	CopyPartSize int64
	// ListPageSize is ListObjectsV2's MaxKeys (0: the server's default,
	// 1000). Small values exercise paging in tests.
	ListPageSize int32
	// ConditionalCopy chooses how conditional copies are enforced
	// (CopyServerSide on AWS; CopyServerMultipart or CopyThroughClient for
	// stores that ignore conditions on CopyObject — see
	// ProbeConditionalCopy).
	ConditionalCopy ConditionalCopy
}

// Store is an objectstore.Store over S3.
type Store struct {
	api     API
	opts    Options
	buckets sync.Map // bucket name → true once HeadBucket found it
}

var _ objectstore.Store = (*Store)(nil)

// New returns a Store over api (usually awsconfig.NewS3).
func New(api API, opts Options) *Store {
	if opts.PartSize <= 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.CopyThreshold <= 0 {
		opts.CopyThreshold = DefaultCopyThreshold
	}
	if opts.CopyPartSize <= 0 {
		opts.CopyPartSize = DefaultCopyPartSize
	}
	return &Store{api: api, opts: opts}
}

// Head returns the object's size, ETag, modification time and user metadata
// (keys lower-case).
func (s *Store) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	out, err := s.head(ctx, bucket, key, "s3.Head")
	if err != nil {
		return objectstore.Object{}, err
	}
	return objectstore.Object{
		Bucket:   bucket,
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     trimETag(aws.ToString(out.ETag)),
		Modified: aws.ToTime(out.LastModified),
		Metadata: lowerKeys(out.Metadata),
		// "null" is S3's version of an object written before versioning.
		VersionID: strings.TrimPrefix(aws.ToString(out.VersionId), "null"),
	}, nil
}

func (s *Store) head(ctx context.Context, bucket, key, op string) (*s3.HeadObjectOutput, error) {
	if err := checkKey(op, bucket, key); err != nil {
		return nil, err
	}
	out, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		mapped := MapError(op, bucket, key, err)
		if errors.Is(mapped, objectstore.ErrNotFound) {
			return nil, s.checkBucket(ctx, bucket, op, mapped)
		}
		return nil, mapped
	}
	return out, nil
}

// checkBucket tells a missing object from a missing bucket after a HEAD
// 404: HEAD responses carry no error body, so S3 says NotFound for both.
// A bucket seen once is remembered; otherwise HeadBucket decides (it needs
// s3:ListBucket, which the pipeline's role has anyway: without it S3
// answers a missing key with 403, not 404).
func (s *Store) checkBucket(ctx context.Context, bucket, op string, notFound error) error {
	if _, ok := s.buckets.Load(bucket); ok {
		return notFound
	}
	_, err := s.api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	switch {
	case err == nil:
		s.buckets.Store(bucket, true)
		return notFound
	case awsconfig.StatusCode(err) == 404:
		return fault.Systemic(fmt.Sprintf("%s: s3://%s", op, bucket), &NoSuchBucketError{Bucket: bucket, Err: err})
	default:
		return MapError(op+" (HeadBucket)", bucket, "", err)
	}
}

// Open streams the whole object.
func (s *Store) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	return s.get(ctx, bucket, key, "", "", "s3.Open")
}

// OpenRange streams length bytes from offset; length < 0 reads to the end
// (Range: bytes=offset-). A range that starts at or past the end reads
// nothing. length 0 checks that the object exists and reads nothing.
func (s *Store) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return s.OpenRangeIfMatch(ctx, bucket, key, "", offset, length)
}

// OpenRangeIfMatch is OpenRange with If-Match: etag (a 412 when the
// object's ETag is another is ErrPreconditionFailed).
func (s *Store) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error) {
	const op = "s3.OpenRange"
	switch {
	case offset < 0:
		return nil, fmt.Errorf("%s: s3://%s/%s: negative offset %d", op, bucket, key, offset)
	case length == 0:
		h, err := s.head(ctx, bucket, key, op)
		if err != nil {
			return nil, err
		}
		if now := trimETag(aws.ToString(h.ETag)); etag != "" && now != trimETag(etag) {
			return nil, fmt.Errorf("%s: s3://%s/%s: If-Match %s: ETag is %s: %w", op, bucket, key, etag, now, objectstore.ErrPreconditionFailed)
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	case length < 0 && offset == 0:
		return s.get(ctx, bucket, key, "", etag, op)
	case length < 0:
		return s.get(ctx, bucket, key, fmt.Sprintf("bytes=%d-", offset), etag, op)
	default:
		return s.get(ctx, bucket, key, fmt.Sprintf("bytes=%d-%d", offset, offset+length-1), etag, op)
	}
}

func (s *Store) get(ctx context.Context, bucket, key, rng, etag, op string) (io.ReadCloser, error) {
	if err := checkKey(op, bucket, key); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	if etag != "" {
		in.IfMatch = aws.String(quoteETag(etag))
	}
	out, err := s.api.GetObject(ctx, in)
	if err != nil {
		if rng != "" && (awsconfig.ErrorCode(err) == "InvalidRange" || awsconfig.StatusCode(err) == 416) {
			// The range starts at or past the end: the object exists and
			// has nothing there, as a file read at EOF.
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, MapError(op, bucket, key, err)
	}
	return &body{rc: out.Body, op: op, bucket: bucket, key: key}, nil
}

// body maps read errors (a connection reset mid-stream) onto the taxonomy.
type body struct {
	rc              io.ReadCloser
	op, bucket, key string
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = MapError(b.op+".read", b.bucket, b.key, err)
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	if err := checkKey("s3.Delete", bucket, key); err != nil {
		return err
	}
	_, err := s.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		err = MapError("s3.Delete", bucket, key, err)
		if errors.Is(err, objectstore.ErrNotFound) {
			return nil
		}
	}
	return err
}

// List calls fn for every object under prefix in key order, page by page.
// Listed objects carry no user metadata (ListObjectsV2 does not return it).
func (s *Store) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	in := &s3.ListObjectsV2Input{Bucket: &bucket}
	if prefix != "" {
		in.Prefix = &prefix
	}
	p := s3.NewListObjectsV2Paginator(s.api, in, func(o *s3.ListObjectsV2PaginatorOptions) {
		o.Limit = s.opts.ListPageSize
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return MapError("s3.List", bucket, prefix, err)
		}
		for _, c := range page.Contents {
			if err := fn(objectstore.Object{
				Bucket:   bucket,
				Key:      aws.ToString(c.Key),
				Size:     aws.ToInt64(c.Size),
				ETag:     trimETag(aws.ToString(c.ETag)),
				Modified: aws.ToTime(c.LastModified),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkKey refuses what no store accepts (objectstore.CheckKey) before
// any request: S3 itself stores "../x" or "/abs" as ordinary keys.
func checkKey(op, bucket, key string) error {
	if err := objectstore.CheckKey(key); err != nil {
		return fmt.Errorf("%s: s3://%s/%s: %w", op, bucket, key, err)
	}
	return nil
}

// copySource renders bucket/key for x-amz-copy-source, which AWS documents
// as URL-encoded (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html):
// every byte of each segment but the unreserved ones (RFC 3986: letters,
// digits, "-", ".", "_", "~") is percent-encoded, the "/" between segments
// kept. url.PathEscape is not enough: it leaves "+" (which S3 decodes as a
// space: a 404 for "a+b.tif"), and "&", "=", ":", "@", "$", "," as they are.
func copySource(bucket, key string) string {
	var b strings.Builder
	b.Grow(len(bucket) + 1 + 3*len(key))
	b.WriteString(bucket)
	b.WriteByte('/')
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func trimETag(s string) string { return strings.Trim(s, `"`) }

func quoteETag(s string) string {
	if s == "*" || strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `W/"`) {
		return s
	}
	return `"` + s + `"`
}

func lowerKeys(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}
