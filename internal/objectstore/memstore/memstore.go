// Package memstore is an in-memory objectstore.Store for unit tests, with
// the semantics of the other stores: ETag is the hex MD5 of the content,
// metadata keys are lower-cased, Copy replaces metadata, conditional Put and
// Copy are atomic, missing objects are objectstore.ErrNotFound and missing
// buckets a fault.SystemicError.
package memstore

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
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// ErrNoSuchBucket is wrapped (inside a fault.SystemicError) when a bucket
// does not exist.
var ErrNoSuchBucket = errors.New("NoSuchBucket")

var _ objectstore.Store = (*Store)(nil)

type object struct {
	data     []byte // never modified after it is stored
	etag     string
	modified time.Time
	meta     map[string]string
}

// Store keeps objects in memory. It is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	buckets map[string]map[string]*object
	now     func() time.Time
}

// New returns a store holding the given (empty) buckets.
func New(buckets ...string) *Store {
	s := &Store{buckets: map[string]map[string]*object{}, now: time.Now}
	for _, b := range buckets {
		s.CreateBucket(b)
	}
	return s
}

// CreateBucket adds an empty bucket (a no-op when it exists).
func (s *Store) CreateBucket(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[name]; !ok {
		s.buckets[name] = map[string]*object{}
	}
}

// Keys returns the keys of a bucket in order (a test helper).
func (s *Store) Keys(bucket string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.buckets[bucket]))
}

func where(op, bucket, key string) string { return "memstore." + op + ": " + bucket + "/" + key }

// bucketLocked returns a bucket's objects; s.mu must be held.
func (s *Store) bucketLocked(op, bucket, key string) (map[string]*object, error) {
	b, ok := s.buckets[bucket]
	if !ok {
		return nil, fault.Systemic(where(op, bucket, key), fmt.Errorf("%w: bucket %q does not exist", ErrNoSuchBucket, bucket))
	}
	return b, nil
}

// checkKey refuses what no store accepts (objectstore.CheckKey), as S3
// and the directory store do.
func checkKey(op, bucket, key string) error {
	if err := objectstore.CheckKey(key); err != nil {
		return fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	return nil
}

// get finds an object under s.mu.
func (s *Store) get(ctx context.Context, op, bucket, key string) (*object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	if err := checkKey(op, bucket, key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked(op, bucket, key)
	if err != nil {
		return nil, err
	}
	o, ok := b[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), objectstore.ErrNotFound)
	}
	return o, nil
}

func (o *object) describe(bucket, key string, withMeta bool) objectstore.Object {
	obj := objectstore.Object{Bucket: bucket, Key: key, Size: int64(len(o.data)), ETag: o.etag, Modified: o.modified}
	if withMeta {
		obj.Metadata = maps.Clone(o.meta)
		if obj.Metadata == nil {
			obj.Metadata = map[string]string{}
		}
	}
	return obj
}

// Head describes an object.
func (s *Store) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	o, err := s.get(ctx, "Head", bucket, key)
	if err != nil {
		return objectstore.Object{}, err
	}
	return o.describe(bucket, key, true), nil
}

// Open streams a whole object.
func (s *Store) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	o, err := s.get(ctx, "Open", bucket, key)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

// OpenRange streams length bytes from offset (length < 0: to the end),
// clipped to the object.
func (s *Store) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return s.OpenRangeIfMatch(ctx, bucket, key, "", offset, length)
}

// OpenRangeIfMatch is OpenRange of the version whose ETag is etag.
func (s *Store) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%s: %w", where("OpenRange", bucket, key), fault.Data(fault.InvalidInput, "negative offset %d", offset))
	}
	o, err := s.get(ctx, "OpenRange", bucket, key)
	if err != nil {
		return nil, err
	}
	if etag != "" && o.etag != etag {
		return nil, fmt.Errorf("%s: If-Match %s: ETag is %s: %w", where("OpenRange", bucket, key), etag, o.etag, objectstore.ErrPreconditionFailed)
	}
	size := int64(len(o.data))
	start := min(offset, size)
	end := size
	if length >= 0 && start+length < end {
		end = start + length
	}
	return io.NopCloser(bytes.NewReader(o.data[start:end])), nil
}

func lowerKeys(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

// Put writes a whole object.
func (s *Store) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	const op = "Put"
	w := where(op, req.Bucket, req.Key)
	if err := ctx.Err(); err != nil {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w, err)
	}
	if err := checkKey(op, req.Bucket, req.Key); err != nil {
		return objectstore.Object{}, err
	}
	var data []byte
	if req.Body != nil {
		var err error
		if data, err = io.ReadAll(req.Body); err != nil {
			return objectstore.Object{}, fmt.Errorf("%s: reading body: %w", w, err)
		}
	}
	if req.Size >= 0 && int64(len(data)) != req.Size {
		return objectstore.Object{}, fmt.Errorf("%s: %w", w,
			fault.Data(fault.InvalidInput, "body has %d bytes, request said %d", len(data), req.Size))
	}
	return s.store(op, req.Bucket, req.Key, data, "", req.Metadata, req.IfNoneMatch, req.IfMatch)
}

// Copy copies an object onto another key with new metadata, honouring
// IfNoneMatch and IfMatch on the destination atomically.
func (s *Store) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	const op = "Copy"
	if err := checkKey(op, req.DstBucket, req.DstKey); err != nil {
		return objectstore.Object{}, err
	}
	src, err := s.get(ctx, op, req.SrcBucket, req.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	if req.SrcETag != "" && req.SrcETag != src.etag {
		return objectstore.Object{}, fault.Transient(where(op, req.SrcBucket, req.SrcKey), fmt.Errorf("source ETag is %s, the copy was of %s: it changed", src.etag, req.SrcETag))
	}
	return s.store(op, req.DstBucket, req.DstKey, src.data, src.etag, req.Metadata, req.IfNoneMatch, req.IfMatch)
}

func (s *Store) store(op, bucket, key string, data []byte, etag string, meta map[string]string, ifNoneMatch bool, ifMatch string) (objectstore.Object, error) {
	w := where(op, bucket, key)
	if etag == "" {
		sum := md5.Sum(data)
		etag = hex.EncodeToString(sum[:])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked(op, bucket, key)
	if err != nil {
		return objectstore.Object{}, err
	}
	cur, exists := b[key]
	if ifNoneMatch && exists {
		return objectstore.Object{}, fmt.Errorf("%s: If-None-Match: object exists: %w", w, objectstore.ErrPreconditionFailed)
	}
	if ifMatch != "" {
		if !exists {
			return objectstore.Object{}, fmt.Errorf("%s: If-Match %s: object does not exist: %w", w, ifMatch, objectstore.ErrPreconditionFailed)
		}
		if cur.etag != ifMatch {
			return objectstore.Object{}, fmt.Errorf("%s: If-Match %s: ETag is %s: %w", w, ifMatch, cur.etag, objectstore.ErrPreconditionFailed)
		}
	}
	o := &object{data: data, etag: etag, modified: s.now(), meta: lowerKeys(meta)}
	b[key] = o
	return o.describe(bucket, key, true), nil
}

// Delete removes an object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", where("Delete", bucket, key), err)
	}
	if err := checkKey("Delete", bucket, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked("Delete", bucket, key)
	if err != nil {
		return err
	}
	delete(b, key)
	return nil
}

// List calls fn for every object under prefix in key order, without user
// metadata (like ListObjectsV2). It works on a snapshot, so fn may write to
// the store.
func (s *Store) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	s.mu.Lock()
	b, err := s.bucketLocked("List", bucket, prefix)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var objs []objectstore.Object
	for k, o := range b {
		if strings.HasPrefix(k, prefix) {
			objs = append(objs, o.describe(bucket, k, false))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(objs, func(a, b objectstore.Object) int { return strings.Compare(a.Key, b.Key) })
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", where("List", bucket, prefix), err)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}
