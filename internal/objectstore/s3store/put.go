package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// putArgs is a write with everything Put and the put-based Copy need.
type putArgs struct {
	bucket, key string
	body        io.Reader
	size        int64 // -1: unknown
	meta        map[string]string
	contentType *string
	ifNoneMatch bool
	ifMatch     string // destination ETag that must be current
}

// Put writes the object: one PutObject when the body fits in PartSize, a
// multipart upload otherwise (aborted on failure). The returned Modified is
// the client's clock (S3 does not return it on writes); Head has the
// server's.
func (s *Store) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	return s.put(ctx, "s3.Put", putArgs{
		bucket: req.Bucket, key: req.Key, body: req.Body, size: req.Size,
		meta: lowerKeys(req.Metadata), ifNoneMatch: req.IfNoneMatch, ifMatch: req.IfMatch,
	})
}

func (s *Store) put(ctx context.Context, op string, a putArgs) (objectstore.Object, error) {
	if err := checkKey(op, a.bucket, a.key); err != nil {
		return objectstore.Object{}, err
	}
	if a.body == nil {
		a.body = bytes.NewReader(nil)
	}
	partSize := s.opts.PartSize
	if a.size > partSize*MaxParts {
		partSize = (a.size + MaxParts - 1) / MaxParts
	}
	single := a.size >= 0 && a.size <= partSize
	// The first part's buffer is as large as the body when its size is
	// known, and grows with it up to PartSize when not: a small output (a
	// STAC item) does not take, zero and fault in a whole part.
	var first []byte
	var err error
	if a.size >= 0 {
		first = make([]byte, min(a.size, partSize))
		var n int
		n, err = io.ReadFull(a.body, first)
		first = first[:n]
	} else {
		first, err = io.ReadAll(io.LimitReader(a.body, partSize))
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return objectstore.Object{}, fmt.Errorf("%s: s3://%s/%s: reading body: %w", op, a.bucket, a.key, err)
	}
	n := len(first)
	if int64(n) < partSize {
		single = true
	}
	if single {
		if a.size >= 0 && int64(n) != a.size {
			return objectstore.Object{}, fmt.Errorf("%s: s3://%s/%s: body has %d bytes, Size says %d", op, a.bucket, a.key, n, a.size)
		}
		if a.size >= 0 {
			// Size is exact: a longer body is a caller bug, not a truncation to hide.
			if extra, _ := io.ReadFull(a.body, make([]byte, 1)); extra > 0 {
				return objectstore.Object{}, fmt.Errorf("%s: s3://%s/%s: body is longer than Size %d", op, a.bucket, a.key, a.size)
			}
		}
		return s.putSingle(ctx, a, first)
	}
	return s.putMultipart(ctx, op, a, first, partSize)
}

// conflictRetries bounds the retries of a conditional write answered with
// 409 ConditionalRequestConflict (another conditional write to the key was
// in flight). AWS documents the retry; it resolves to success or 412.
const conflictRetries = 4

// retryConflict runs fn again after a short jittered pause while it fails
// with 409 ConditionalRequestConflict.
func retryConflict[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := fn()
		if err == nil || i >= conflictRetries || awsconfig.ErrorCode(err) != "ConditionalRequestConflict" {
			return v, err
		}
		d := time.Duration(20+rand.IntN(80<<i)) * time.Millisecond
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(d):
		}
	}
}

func (s *Store) putSingle(ctx context.Context, a putArgs, data []byte) (objectstore.Object, error) {
	in := &s3.PutObjectInput{
		Bucket:        &a.bucket,
		Key:           &a.key,
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      a.meta,
		ContentType:   a.contentType,
	}
	if a.ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if a.ifMatch != "" {
		in.IfMatch = aws.String(quoteETag(a.ifMatch))
	}
	out, err := retryConflict(ctx, func() (*s3.PutObjectOutput, error) {
		in.Body = bytes.NewReader(data)
		return s.api.PutObject(ctx, in)
	})
	if err != nil {
		return objectstore.Object{}, MapError("s3.PutObject", a.bucket, a.key, err)
	}
	return objectstore.Object{
		Bucket: a.bucket, Key: a.key, Size: int64(len(data)),
		ETag: trimETag(aws.ToString(out.ETag)), Modified: time.Now().UTC(), Metadata: a.meta,
	}, nil
}

// precheck fails a conditional multipart write before any byte is sent
// when the condition already fails; CompleteMultipartUpload enforces it
// again, atomically.
func (s *Store) precheck(ctx context.Context, op string, a putArgs) error {
	if !a.ifNoneMatch && a.ifMatch == "" {
		return nil
	}
	dst, err := s.head(ctx, a.bucket, a.key, op)
	switch {
	case err != nil && !errors.Is(err, objectstore.ErrNotFound):
		return err
	case a.ifNoneMatch && err == nil:
		return fmt.Errorf("%s: s3://%s/%s: exists: %w", op, a.bucket, a.key, objectstore.ErrPreconditionFailed)
	case a.ifMatch != "" && (err != nil || trimETag(aws.ToString(dst.ETag)) != trimETag(a.ifMatch)):
		return fmt.Errorf("%s: s3://%s/%s: ETag is not %s: %w", op, a.bucket, a.key, a.ifMatch, objectstore.ErrPreconditionFailed)
	}
	return nil
}

func (s *Store) complete(ctx context.Context, a putArgs, uploadID *string, parts []types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &a.bucket, Key: &a.key, UploadId: uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if a.ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if a.ifMatch != "" {
		in.IfMatch = aws.String(quoteETag(a.ifMatch))
	}
	if in.IfNoneMatch == nil && in.IfMatch == nil {
		out, err := s.api.CompleteMultipartUpload(ctx, in)
		if err != nil {
			// A 409 here needs a new upload (AWS): MapError makes it transient.
			return nil, MapError("s3.CompleteMultipartUpload", a.bucket, a.key, err)
		}
		return out, nil
	}
	// A conditional write is a key written once (a promotion). Its
	// Complete is tried without the SDK's retries: after an answer lost on
	// the way back, a retry completes the upload a second time (versitygw
	// answers 200 again). Between tries the key is read instead: holding
	// this write's size and metadata, it was done (docs/decisions/0103).
	for try := 1; ; try++ {
		out, err := s.api.CompleteMultipartUpload(ctx, in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		if err == nil {
			return out, nil
		}
		mapped := MapError("s3.CompleteMultipartUpload", a.bucket, a.key, err)
		if fault.TierOf(mapped) != fault.TierTransient || try >= completeAttempts || ctx.Err() != nil {
			return nil, mapped
		}
		if done, ok := s.completedAs(ctx, a); ok {
			return done, nil
		}
		select { // a throttled store is not asked again at once
		case <-ctx.Done():
			return nil, mapped
		case <-time.After(time.Duration(25+rand.IntN(50<<try)) * time.Millisecond):
		}
	}
}

// completeAttempts bounds the tries of a conditional CompleteMultipartUpload.
const completeAttempts = 3

// completedAs reports whether the key now holds the object a conditional
// multipart write would have made: its size and metadata, and (for an
// overwrite) not the replaced ETag. It reads the key up to three times
// while the store fails transiently.
func (s *Store) completedAs(ctx context.Context, a putArgs) (*s3.CompleteMultipartUploadOutput, bool) {
	if a.size < 0 {
		return nil, false // nothing to compare with
	}
	for range 3 {
		h, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &a.bucket, Key: &a.key})
		switch {
		case err != nil && fault.TierOf(MapError("s3.HeadObject", a.bucket, a.key, err)) == fault.TierTransient && ctx.Err() == nil:
			continue
		case err != nil:
			return nil, false
		}
		if aws.ToInt64(h.ContentLength) != a.size || !maps.Equal(h.Metadata, a.meta) ||
			(a.ifMatch != "" && trimETag(aws.ToString(h.ETag)) == trimETag(a.ifMatch)) {
			return nil, false
		}
		return &s3.CompleteMultipartUploadOutput{Bucket: &a.bucket, Key: &a.key, ETag: h.ETag}, true
	}
	return nil, false
}

func (s *Store) putMultipart(ctx context.Context, op string, a putArgs, first []byte, partSize int64) (obj objectstore.Object, err error) {
	if err := s.precheck(ctx, op, a); err != nil {
		return objectstore.Object{}, err
	}
	up, err := s.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &a.bucket, Key: &a.key, Metadata: a.meta, ContentType: a.contentType,
	})
	if err != nil {
		return objectstore.Object{}, MapError("s3.CreateMultipartUpload", a.bucket, a.key, err)
	}
	defer func() {
		if err != nil {
			s.abort(ctx, a.bucket, a.key, up.UploadId)
		}
	}()

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		parts    []types.CompletedPart
		firstErr error
		wg       sync.WaitGroup
		total    int64
	)
	fail := func(e error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = e
			cancel()
		}
	}
	// Concurrency buffers in all: the first part's plus the pool's.
	pool := make(chan []byte, s.opts.Concurrency)
	for range s.opts.Concurrency - 1 {
		pool <- make([]byte, partSize)
	}
	buf, n := first, int64(len(first))
	for num := int32(1); ; num++ {
		total += n
		wg.Add(1)
		go func(num int32, data []byte) {
			defer wg.Done()
			out, perr := s.api.UploadPart(pctx, &s3.UploadPartInput{
				Bucket: &a.bucket, Key: &a.key, UploadId: up.UploadId,
				PartNumber: aws.Int32(num), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			})
			if perr != nil {
				fail(MapError("s3.UploadPart", a.bucket, a.key, perr))
			} else {
				mu.Lock()
				parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
				mu.Unlock()
			}
			// Every part buffer holds at least partSize bytes (the first,
			// read with io.ReadAll, may hold more): back to partSize.
			pool <- data[:partSize]
		}(num, buf)
		if n < partSize {
			break
		}
		if num >= MaxParts {
			if extra, _ := io.ReadFull(a.body, make([]byte, 1)); extra > 0 {
				fail(fmt.Errorf("%s: s3://%s/%s: body exceeds %d parts of %d bytes", op, a.bucket, a.key, MaxParts, partSize))
			}
			break
		}
		select {
		case buf = <-pool:
		case <-pctx.Done():
		}
		if pctx.Err() != nil {
			break
		}
		m, rerr := io.ReadFull(a.body, buf)
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			fail(fmt.Errorf("%s: s3://%s/%s: reading body: %w", op, a.bucket, a.key, rerr))
			break
		}
		if m == 0 {
			break
		}
		buf, n = buf[:m], int64(m)
	}
	wg.Wait()
	mu.Lock()
	err = firstErr
	mu.Unlock()
	if err == nil && ctx.Err() != nil {
		err = MapError(op, a.bucket, a.key, ctx.Err())
	}
	if err == nil && a.size >= 0 && total != a.size {
		err = fmt.Errorf("%s: s3://%s/%s: body has %d bytes, Size says %d", op, a.bucket, a.key, total, a.size)
	}
	if err != nil {
		return objectstore.Object{}, err
	}
	sortParts(parts)
	out, err := s.complete(ctx, a, up.UploadId, parts)
	if err != nil {
		return objectstore.Object{}, err
	}
	return objectstore.Object{
		Bucket: a.bucket, Key: a.key, Size: total,
		ETag: trimETag(aws.ToString(out.ETag)), Modified: time.Now().UTC(), Metadata: a.meta,
	}, nil
}

func sortParts(p []types.CompletedPart) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && aws.ToInt32(p[j].PartNumber) < aws.ToInt32(p[j-1].PartNumber); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// abort cleans up a failed multipart upload, even when ctx is done.
func (s *Store) abort(ctx context.Context, bucket, key string, uploadID *string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = s.api.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: uploadID})
}
