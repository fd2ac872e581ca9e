package s3store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// ConditionalCopy says how Copy enforces IfNoneMatch / IfMatch.
type ConditionalCopy int

const (
	// CopyServerSide sends If-None-Match / If-Match on CopyObject (and on
	// CompleteMultipartUpload for multipart copies). Amazon S3 enforces
	// them; the default.
	CopyServerSide ConditionalCopy = iota
	// CopyThroughClient streams the source through the client into a
	// conditional PutObject (or a multipart upload completed
	// conditionally), for S3-compatible stores that honour conditions on
	// PutObject and CompleteMultipartUpload but ignore them on CopyObject,
	// as versitygw v1.8.0 does. It costs a download and an upload; the
	// ETag stays the content MD5 for objects up to PartSize.
	CopyThroughClient
	// CopyServerMultipart copies server-side with a multipart copy
	// (CreateMultipartUpload, UploadPartCopy, CompleteMultipartUpload
	// carrying the condition) at every size, for stores that ignore
	// conditions on CopyObject but enforce them on CompleteMultipartUpload,
	// as versitygw v1.8.0 does: no byte passes through the client. The
	// condition rides on CompleteMultipartUpload because AWS documents that
	// CreateMultipartUpload, UploadPart and UploadPartCopy accept no
	// conditional headers
	// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html).
	// The ETag becomes a multipart one ("…-1").
	CopyServerMultipart
)

func (c ConditionalCopy) String() string {
	switch c {
	case CopyThroughClient:
		return "client"
	case CopyServerMultipart:
		return "server-multipart"
	}
	return "server"
}

// Copy copies SrcKey onto DstKey with the request's metadata (REPLACE, the
// source's Content-Type kept), conditionally. A failed condition (the
// destination exists, or its ETag is not IfMatch) is ErrPreconditionFailed;
// a missing source is ErrNotFound.
func (s *Store) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	if err := checkKey("s3.Copy", req.DstBucket, req.DstKey); err != nil {
		return objectstore.Object{}, err
	}
	var src *s3.HeadObjectOutput
	if req.SrcETag != "" {
		// The writer's answer already said what a HEAD would: no request.
		src = &s3.HeadObjectOutput{ContentLength: aws.Int64(req.SrcSize), ETag: aws.String(quoteETag(req.SrcETag))}
	} else {
		var err error
		if src, err = s.head(ctx, req.SrcBucket, req.SrcKey, "s3.Copy"); err != nil {
			return objectstore.Object{}, err
		}
	}
	meta := lowerKeys(req.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	conditional := req.IfNoneMatch || req.IfMatch != ""
	size := aws.ToInt64(src.ContentLength)
	switch {
	case conditional && s.opts.ConditionalCopy == CopyThroughClient,
		// An empty object has no byte range to copy a part from.
		conditional && s.opts.ConditionalCopy == CopyServerMultipart && size == 0:
		return s.copyThroughClient(ctx, req, src, meta)
	case conditional && s.opts.ConditionalCopy == CopyServerMultipart:
		return s.copyMultipart(ctx, req, src, meta)
	}
	if size > s.opts.CopyThreshold {
		return s.copyMultipart(ctx, req, src, meta)
	}
	return s.copyObject(ctx, req, src, meta)
}

func (s *Store) copyObject(ctx context.Context, req objectstore.CopyRequest, src *s3.HeadObjectOutput, meta map[string]string) (objectstore.Object, error) {
	in := &s3.CopyObjectInput{
		Bucket:            &req.DstBucket,
		Key:               &req.DstKey,
		CopySource:        aws.String(copySource(req.SrcBucket, req.SrcKey)),
		CopySourceIfMatch: src.ETag, // the object we sized is the object we copy
		MetadataDirective: types.MetadataDirectiveReplace,
		Metadata:          meta,
		ContentType:       src.ContentType,
	}
	if req.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if req.IfMatch != "" {
		in.IfMatch = aws.String(quoteETag(req.IfMatch))
	}
	out, err := retryConflict(ctx, func() (*s3.CopyObjectOutput, error) { return s.api.CopyObject(ctx, in) })
	if err != nil {
		return objectstore.Object{}, s.mapCopyError(ctx, req, src, err)
	}
	obj := objectstore.Object{Bucket: req.DstBucket, Key: req.DstKey, Size: aws.ToInt64(src.ContentLength), Metadata: meta}
	if r := out.CopyObjectResult; r != nil {
		obj.ETag = trimETag(aws.ToString(r.ETag))
		obj.Modified = aws.ToTime(r.LastModified)
	}
	return obj, nil
}

// mapCopyError maps a CopyObject failure. A 412 caused by the source's
// x-amz-copy-source-if-match (the source changed between HEAD and copy)
// cannot be told from a destination 412 by status alone, so the source is
// checked again: if its ETag moved, the failure is transient (the caller
// retries with the new source) rather than "destination exists".
func (s *Store) mapCopyError(ctx context.Context, req objectstore.CopyRequest, src *s3.HeadObjectOutput, err error) error {
	mapped := MapError("s3.CopyObject", req.DstBucket, req.DstKey, err)
	if !errors.Is(mapped, objectstore.ErrPreconditionFailed) {
		return mapped
	}
	now, herr := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &req.SrcBucket, Key: &req.SrcKey})
	if herr == nil && aws.ToString(now.ETag) == aws.ToString(src.ETag) {
		return mapped
	}
	return fault.Transient(fmt.Sprintf("s3.CopyObject: s3://%s/%s", req.SrcBucket, req.SrcKey),
		fmt.Errorf("source changed or vanished while copying: %w", err))
}

func (s *Store) copyThroughClient(ctx context.Context, req objectstore.CopyRequest, src *s3.HeadObjectOutput, meta map[string]string) (objectstore.Object, error) {
	const op = "s3.Copy"
	a := putArgs{
		bucket: req.DstBucket, key: req.DstKey, size: aws.ToInt64(src.ContentLength),
		meta: meta, contentType: src.ContentType, ifNoneMatch: req.IfNoneMatch, ifMatch: req.IfMatch,
	}
	// Fail fast, before downloading, when the condition already fails.
	if err := s.precheck(ctx, op, a); err != nil {
		return objectstore.Object{}, err
	}
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &req.SrcBucket, Key: &req.SrcKey, IfMatch: src.ETag})
	if err != nil {
		if awsconfig.StatusCode(err) == 412 {
			return objectstore.Object{}, fault.Transient(fmt.Sprintf("%s: s3://%s/%s", op, req.SrcBucket, req.SrcKey),
				fmt.Errorf("source changed while copying: %w", err))
		}
		return objectstore.Object{}, MapError(op, req.SrcBucket, req.SrcKey, err)
	}
	defer out.Body.Close()
	a.body = &body{rc: out.Body, op: op, bucket: req.SrcBucket, key: req.SrcKey}
	return s.put(ctx, op, a)
}

func (s *Store) copyMultipart(ctx context.Context, req objectstore.CopyRequest, src *s3.HeadObjectOutput, meta map[string]string) (obj objectstore.Object, err error) {
	size := aws.ToInt64(src.ContentLength)
	a := putArgs{bucket: req.DstBucket, key: req.DstKey, size: size, meta: meta,
		contentType: src.ContentType, ifNoneMatch: req.IfNoneMatch, ifMatch: req.IfMatch}
	partSize := max(s.opts.CopyPartSize, (size+MaxParts-1)/MaxParts)
	nparts := int((size + partSize - 1) / partSize)
	// The check up front spares copying many parts for nothing; one part
	// costs no more to abort than a HEAD.
	if nparts > 1 {
		if err := s.precheck(ctx, "s3.Copy", a); err != nil {
			return objectstore.Object{}, err
		}
	}
	up, err := s.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &req.DstBucket, Key: &req.DstKey, Metadata: meta, ContentType: src.ContentType,
	})
	if err != nil {
		return objectstore.Object{}, MapError("s3.CreateMultipartUpload", req.DstBucket, req.DstKey, err)
	}
	defer func() {
		if err != nil {
			s.abort(ctx, req.DstBucket, req.DstKey, up.UploadId)
		}
	}()
	parts := make([]types.CompletedPart, nparts)

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, s.opts.Concurrency)
	cs := aws.String(copySource(req.SrcBucket, req.SrcKey))
	for i := range nparts {
		select {
		case sem <- struct{}{}:
		case <-pctx.Done():
		}
		if pctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := int64(i) * partSize
			end := min(start+partSize, size) - 1
			out, perr := s.api.UploadPartCopy(pctx, &s3.UploadPartCopyInput{
				Bucket: &req.DstBucket, Key: &req.DstKey, UploadId: up.UploadId,
				PartNumber:        aws.Int32(int32(i + 1)),
				CopySource:        cs,
				CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", start, end)),
				CopySourceIfMatch: src.ETag, // every part from the same source version
			})
			if perr != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = MapError("s3.UploadPartCopy", req.DstBucket, req.DstKey, perr)
					if errors.Is(firstErr, objectstore.ErrPreconditionFailed) {
						// Only the source condition is sent on parts.
						firstErr = fault.Transient("s3.UploadPartCopy", fmt.Errorf("source s3://%s/%s changed while copying: %w", req.SrcBucket, req.SrcKey, perr))
					}
					cancel()
				}
				mu.Unlock()
				return
			}
			var etag *string
			if out.CopyPartResult != nil {
				etag = out.CopyPartResult.ETag
			}
			parts[i] = types.CompletedPart{ETag: etag, PartNumber: aws.Int32(int32(i + 1))}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return objectstore.Object{}, firstErr
	}
	if ctx.Err() != nil {
		return objectstore.Object{}, MapError("s3.Copy", req.DstBucket, req.DstKey, ctx.Err())
	}
	out, err := s.complete(ctx, a, up.UploadId, parts)
	if err != nil {
		return objectstore.Object{}, err
	}
	return objectstore.Object{
		Bucket: req.DstBucket, Key: req.DstKey, Size: size,
		ETag: trimETag(aws.ToString(out.ETag)), Modified: time.Now().UTC(), Metadata: meta,
	}, nil
}

// ProbeConditionalCopy finds out how the store behind api can enforce
// If-None-Match on a copy, by copying a probe object onto itself with
// If-None-Match: * under prefix in bucket (the probe is deleted again):
// CopyServerSide when CopyObject refuses it, else CopyServerMultipart
// when a multipart copy's CompleteMultipartUpload does, else
// CopyThroughClient. It needs write access; use it once at start-up
// against S3-compatible endpoints and pass the result as
// Options.ConditionalCopy.
func ProbeConditionalCopy(ctx context.Context, api API, bucket, prefix string) (ConditionalCopy, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	key := strings.TrimSuffix(prefix, "/") + "/.geomigrate-probe-" + hex.EncodeToString(rnd[:])
	key = strings.TrimPrefix(key, "/")
	// Removed whatever the put answers: a put whose answer was lost may
	// have written the probe all the same.
	defer removeProbe(ctx, api, bucket, key)
	if _, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("probe")}); err != nil {
		return CopyServerSide, MapError("s3.ProbeConditionalCopy", bucket, key, err)
	}
	_, err := api.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: &bucket, Key: &key, CopySource: aws.String(copySource(bucket, key)),
		MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"probe": "1"},
		IfNoneMatch: aws.String("*"),
	})
	switch mapped := MapError("s3.ProbeConditionalCopy", bucket, key, err); {
	case err == nil:
		return probeMultipartCopy(ctx, api, bucket, key) // the condition was ignored
	case errors.Is(mapped, objectstore.ErrPreconditionFailed):
		return CopyServerSide, nil
	default:
		return CopyServerSide, mapped
	}
}

// probeDeleteAttempts bounds the tries of the probe's removal.
const probeDeleteAttempts = 5

// removeProbe deletes the probe object (deleting a missing key succeeds),
// retrying passing faults: a probe left behind would sit under the staging
// prefix, owned by no job.
func removeProbe(ctx context.Context, api API, bucket, key string) {
	ctx = context.WithoutCancel(ctx)
	_ = fault.Retry(ctx, probeDeleteAttempts, fault.IsTransient, func() error {
		_, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
		return MapError("s3.ProbeConditionalCopy", bucket, key, err)
	})
}

// probeMultipartCopy copies the existing probe onto itself by
// UploadPartCopy, completed with If-None-Match: *: a 412 means the store
// enforces the condition there.
func probeMultipartCopy(ctx context.Context, api API, bucket, key string) (ConditionalCopy, error) {
	const op = "s3.ProbeConditionalCopy"
	up, err := api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return CopyThroughClient, MapError(op, bucket, key, err)
	}
	completed := false
	defer func() {
		if !completed {
			_, _ = api.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId})
		}
	}()
	part, err := api.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
		Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String(copySource(bucket, key)),
	})
	if err != nil {
		mapped := MapError(op, bucket, key, err)
		if fault.TierOf(mapped) == fault.TierTransient {
			return CopyThroughClient, mapped // a fault, not an answer: probe again
		}
		// No UploadPartCopy: copies go through the client.
		return CopyThroughClient, nil
	}
	var etag *string
	if part.CopyPartResult != nil {
		etag = part.CopyPartResult.ETag
	}
	_, err = api.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: &key, UploadId: up.UploadId, IfNoneMatch: aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: etag, PartNumber: aws.Int32(1)}}},
	})
	switch mapped := MapError(op, bucket, key, err); {
	case err == nil:
		completed = true
		return CopyThroughClient, nil
	case errors.Is(mapped, objectstore.ErrPreconditionFailed):
		return CopyServerMultipart, nil
	default:
		return CopyThroughClient, mapped
	}
}
