//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

// s3Request is one request the counting proxy forwarded: the S3 operation
// told from method, path and query (path-style addressing), and the key.
type s3Request struct {
	op, bucket, key string
}

// countingProxy forwards S3 requests unchanged (the Host header is signed)
// and records each.
type countingProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []s3Request
}

func startCountingProxy(t *testing.T, upstream string) *countingProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls = append(p.calls, classifyS3(r))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *countingProxy) take() []s3Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

// classifyS3 names a path-style S3 request's operation.
func classifyS3(r *http.Request) s3Request {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	op := r.Method
	switch {
	case r.Method == http.MethodHead && key == "":
		op = "HeadBucket"
	case r.Method == http.MethodHead:
		op = "HeadObject"
	case r.Method == http.MethodGet && key == "":
		op = "ListObjects"
	case r.Method == http.MethodGet:
		op = "GetObject"
	case r.Method == http.MethodPut && key == "":
		op = "CreateBucket"
	case r.Method == http.MethodPut && q.Has("uploadId") && copySrc:
		op = "UploadPartCopy"
	case r.Method == http.MethodPut && q.Has("uploadId"):
		op = "UploadPart"
	case r.Method == http.MethodPut && copySrc:
		op = "CopyObject"
	case r.Method == http.MethodPut:
		op = "PutObject"
	case r.Method == http.MethodPost && q.Has("uploads"):
		op = "CreateMultipartUpload"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		op = "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		op = "AbortMultipartUpload"
	case r.Method == http.MethodDelete:
		op = "DeleteObject"
	}
	return s3Request{op: op, bucket: bucket, key: key}
}

// TestRequestsPerSmallFile counts the S3 requests of `migrate --backend
// aws` per small striped GeoTIFF, through a counting proxy in front of the
// S3 stand-in: at most 10 per file (docs/decisions/0109), the source read
// with at most one GET, the output written with one PUT (or one multipart
// upload) and promoted by a server-side copy (no GET of the staged
// output). The stand-in (versitygw) ignores conditions on CopyObject, so
// each conditional copy is a multipart copy there (three requests) where
// Amazon S3 takes one CopyObject.
func TestRequestsPerSmallFile(t *testing.T) {
	c := s3Client(t)
	const files = 4
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "reqsrc-"+suffix, "reqdst-"+suffix, "reqstate-"+suffix
	ctx := context.Background()
	for _, b := range []string{src, dst} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	// ~1.2 MB single-strip uncompressed tiles: GDAL reads them line by line.
	const w, h = 1100, 1100
	rng := rand.New(rand.NewPCG(14, 1))
	for i := range files {
		pix := make([]byte, w*h)
		for j := range pix {
			pix[j] = byte(j%w/5 + i + rng.IntN(3))
		}
		body := tinyGeoTIFF(w, h, pix, 500000+float64(i)*w*10, 5100000, 10, 32633)
		key := fmt.Sprintf("in/tile_%02d.tif", i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(src), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}

	proxy := startCountingProxy(t, os.Getenv("AWS_ENDPOINT_URL_S3"))
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.srv.URL)
	out, stderr, err := run(t, "migrate", "s3://"+src+"/in/", "--backend", "aws", "--dest", "s3://"+dst+"/out",
		"--state-table", table, "--create-table", "--state-dir", t.TempDir(), "--workers", "1", "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	rep := lastReport(t, out)
	for _, f := range rep.Files {
		if f.Status != localrun.StatusCompleted {
			t.Fatalf("%s: %s %s %s", f.Key, f.Status, f.Code, f.Message)
		}
	}
	if len(rep.Files) != files {
		t.Fatalf("report has %d files, want %d", len(rep.Files), files)
	}

	calls := proxy.take()
	if testing.Verbose() {
		for _, r := range calls {
			t.Logf("%-24s %s/%s", r.op, r.bucket, r.key)
		}
	}
	byOp := map[string]int{}
	sourceGets := map[string]int{}
	// Per staged output (the COG, its STAC item, the collection):
	// written once, copied once server-side, never read back.
	staged := map[string]int{}
	var stagingGets, copies int
	for _, r := range calls {
		byOp[r.op]++
		staging := r.bucket == dst && strings.HasPrefix(r.key, "_staging/")
		switch {
		case r.bucket == src && r.op == "GetObject":
			sourceGets[r.key]++
		case staging && r.op == "GetObject":
			stagingGets++
		case staging && (r.op == "PutObject" || r.op == "CreateMultipartUpload") && !strings.Contains(r.key, ".geomigrate-probe-"):
			staged[r.key]++
		case r.bucket == dst && (r.op == "CopyObject" || r.op == "UploadPartCopy") && !strings.Contains(r.key, ".geomigrate-probe-"):
			copies++
		}
	}
	ops := make([]string, 0, len(byOp))
	for op, n := range byOp {
		ops = append(ops, fmt.Sprintf("%s %.2f", op, float64(n)/files))
	}
	sort.Strings(ops)
	t.Logf("S3 requests per file (%d files, start-up included): %d in all: %s", files, len(calls), strings.Join(ops, ", "))
	t.Logf("source GETs %v; staged outputs %d, written %v; server-side copies %d; staged outputs read back %d",
		sourceGets, len(staged), staged, copies, stagingGets)
	srcGets := 0
	for _, n := range sourceGets {
		srcGets += n
	}
	// Each request naming a file's key (its source, staged output, output
	// or STAC item) is that file's; the rest are the run's own (start-up
	// checks, the listing, the STAC tree's collection and catalog).
	perFile := map[string]int{}
	perRun := 0
	for _, r := range calls {
		name := ""
		for i := range files {
			if strings.Contains(r.key, fmt.Sprintf("in/tile_%02d.", i)) {
				name = fmt.Sprintf("tile_%02d", i)
			}
		}
		if name == "" {
			perRun++
			continue
		}
		perFile[name]++
	}
	most := 0
	for _, n := range perFile {
		most = max(most, n)
	}
	t.Logf("S3 requests of each file %v; of the run itself %d", perFile, perRun)
	// One line for make bench-e2e to print.
	t.Logf("figure: s3-requests-per-small-file per-file=%d per-run=%d total=%.2f source-get=%.2f staged-put=%.2f server-copy=%.2f staged-read-back=%.2f (%d files, outputs per file %.2f)",
		most, perRun, float64(len(calls))/files, float64(srcGets)/files, float64(len(staged))/files, float64(copies)/files, float64(stagingGets)/files, files, float64(len(staged))/files)
	if len(perFile) != files || most > 10 {
		t.Errorf("S3 requests per file %v, want at most 10 each", perFile)
	}

	if len(sourceGets) != files {
		t.Errorf("%d of %d sources read", len(sourceGets), files)
	}
	for k, n := range sourceGets {
		if n > 1 {
			t.Errorf("source %s: %d GETs, want at most 1", k, n)
		}
	}
	if len(staged) < files {
		t.Errorf("%d staged outputs for %d files", len(staged), files)
	}
	for k, n := range staged {
		if n != 1 {
			t.Errorf("staged output %s written %d times, want once", k, n)
		}
	}
	if copies != len(staged) {
		t.Errorf("%d server-side copies for %d staged outputs, want one each", copies, len(staged))
	}
	if stagingGets != 0 {
		t.Errorf("Promote read %d staged outputs back through the client, want 0 (server-side copy)", stagingGets)
	}
}
