//go:build integration

package localrun_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

// splitStore reads the sources ("src") from the local directory store and
// keeps every other bucket (the destination) on S3.
type splitStore struct {
	src, rest objectstore.Store
}

func (s splitStore) pick(bucket string) objectstore.Store {
	if bucket == "src" {
		return s.src
	}
	return s.rest
}

func (s splitStore) Head(ctx context.Context, b, k string) (objectstore.Object, error) {
	return s.pick(b).Head(ctx, b, k)
}

func (s splitStore) Open(ctx context.Context, b, k string) (io.ReadCloser, error) {
	return s.pick(b).Open(ctx, b, k)
}

func (s splitStore) OpenRange(ctx context.Context, b, k string, off, n int64) (io.ReadCloser, error) {
	return s.pick(b).OpenRange(ctx, b, k, off, n)
}

func (s splitStore) OpenRangeIfMatch(ctx context.Context, b, k, etag string, off, n int64) (io.ReadCloser, error) {
	return s.pick(b).OpenRangeIfMatch(ctx, b, k, etag, off, n)
}

func (s splitStore) Put(ctx context.Context, r objectstore.PutRequest) (objectstore.Object, error) {
	return s.pick(r.Bucket).Put(ctx, r)
}

// Copy between the two stores streams the object across.
func (s splitStore) Copy(ctx context.Context, r objectstore.CopyRequest) (objectstore.Object, error) {
	from, to := s.pick(r.SrcBucket), s.pick(r.DstBucket)
	if from == to {
		return to.Copy(ctx, r)
	}
	o, err := from.Head(ctx, r.SrcBucket, r.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	rc, err := from.Open(ctx, r.SrcBucket, r.SrcKey)
	if err != nil {
		return objectstore.Object{}, err
	}
	defer rc.Close()
	md := r.Metadata
	if md == nil {
		md = o.Metadata
	}
	return to.Put(ctx, objectstore.PutRequest{Bucket: r.DstBucket, Key: r.DstKey, Body: rc, Size: o.Size, Metadata: md, IfNoneMatch: r.IfNoneMatch})
}

func (s splitStore) Delete(ctx context.Context, b, k string) error {
	return s.pick(b).Delete(ctx, b, k)
}

func (s splitStore) List(ctx context.Context, b, prefix string, fn func(objectstore.Object) error) error {
	return s.pick(b).List(ctx, b, prefix, fn)
}

// TestBreakerHoldsFilesThroughWriteOnlyOutagesOnS3 is
// TestBreakerHoldsFilesThroughWriteOnlyOutages with the destination on the
// S3 stand-in (versitygw, AWS_ENDPOINT_URL_S3) through the S3 adapter,
// the write-only outages injected in front of it.
func TestBreakerHoldsFilesThroughWriteOnlyOutagesOnS3(t *testing.T) {
	ep := os.Getenv("AWS_ENDPOINT_URL_S3")
	if ep == "" {
		t.Skip("AWS_ENDPOINT_URL_S3 not set; run scripts/with-integration-servers.sh")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	o := awsconfig.Options{S3EndpointURL: ep, PathStyle: true, Region: "us-east-1",
		AccessKeyID: envOr("AWS_ACCESS_KEY_ID", "geomigrate-test"), SecretAccessKey: envOr("AWS_SECRET_ACCESS_KEY", "geomigrate-test-secret")}
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	c := awsconfig.NewS3(cfg, o)
	mode, err := s3store.ProbeConditionalCopy(ctx, c, mkBucket(t, c), "probe/")
	if err != nil {
		t.Fatalf("ProbeConditionalCopy: %v", err)
	}
	dir, keys := goodKeys(t)
	for _, out := range writeOutages {
		t.Run(out.name, func(t *testing.T) {
			p := newPipeline(t, dir)
			p.cfg.DestBucket = mkBucket(t, c)
			store := splitStore{src: p.store, rest: s3store.New(c, s3store.Options{ConditionalCopy: mode})}
			checkHeldThroughWriteOutage(t, p, store, keys, out.kind)
		})
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// mkBucket creates an empty bucket for one test. Only the S3 adapter
// packages may import the S3 SDK (internal/architecture), so the client's
// CreateBucket is called by reflection: c is the client awsconfig.NewS3
// returned.
func mkBucket(t *testing.T, c any) string {
	t.Helper()
	name := fmt.Sprintf("gm-brk-%d-%d", time.Now().UnixNano()%1e9, os.Getpid()%1000)
	m := reflect.ValueOf(c).MethodByName("CreateBucket")
	in := reflect.New(m.Type().In(1).Elem())
	in.Elem().FieldByName("Bucket").Set(reflect.ValueOf(&name))
	out := m.Call([]reflect.Value{reflect.ValueOf(context.Background()), in})
	if err, _ := out[1].Interface().(error); err != nil {
		t.Fatalf("CreateBucket %s: %v", name, err)
	}
	return name
}
