//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
)

// TestAWSBackendKeysThatNeedEncoding runs `migrate --backend aws` on the
// S3 stand-in over sources whose keys hold '+', spaces, '%' and non-ASCII
// (each copied by Promote through x-amz-copy-source: UploadPartCopy, as
// versitygw needs for conditional copies), and names keys that could leave
// the destination prefix ("..", "//", a leading "/"): the first are
// converted under exactly their names, the others refused as InvalidKey
// and nothing written for them.
func TestAWSBackendKeysThatNeedEncoding(t *testing.T) {
	c := s3Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	dem, err := os.ReadFile(filepath.Join(samples, "dem_utm33.tif"))
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "ksrc-"+suffix, "kdst-"+suffix, "kstate-"+suffix
	for _, b := range []string{src, dst} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	good := []string{"in/a+b.tif", "in/a b.tif", "in/100%.tif", "in/%2B.tif", "in/München (1m).tif", "in/x&y=z;w.tif"}
	for _, k := range good {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(src), Key: aws.String(k), Body: bytes.NewReader(dem)}); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	bad := []string{"in/../../x.tif", "/abs/x.tif", "in//x.tif", "in/./x.tif"}
	args := []string{"migrate", "s3://" + src + "/in/"}
	for _, k := range bad {
		args = append(args, "s3://"+src+"/"+k)
	}
	args = append(args, "--backend", "aws", "--dest", "s3://"+dst+"/out",
		"--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "state"), "--progress", "plain")
	out, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	report := lastReport(t, out)
	byKey := map[string]localrun.Outcome{}
	for _, o := range report.Files {
		byKey[o.Key] = o
	}
	for _, k := range good {
		o, ok := byKey[k]
		if !ok || o.Status != localrun.StatusCompleted {
			t.Errorf("%q: %+v, want completed\n%s", k, o, stderr)
			continue
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String("out/" + k)})
		if err != nil {
			t.Errorf("%q: no output at out/%s: %v", k, k, err)
			continue
		}
		// The lineage header is US-ASCII whatever the key holds.
		if v := head.Metadata[objectstore.MetaSourceKey]; v != objectstore.MetaValue(src+"/"+k) || !objectstore.SameMetaValue(v, src+"/"+k) {
			t.Errorf("%q: %s metadata %q", k, objectstore.MetaSourceKey, v)
		}
		// The STAC item's asset href resolves to the output's key.
		item, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(dst), Key: aws.String("out/" + k + ".stac.json")})
		if err != nil {
			t.Errorf("%q: no STAC item: %v", k, err)
			continue
		}
		var doc struct {
			Assets map[string]struct{ Href string } `json:"assets"`
		}
		b, _ := io.ReadAll(item.Body)
		item.Body.Close()
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for name, a := range doc.Assets {
			if got := resolveHref("out/"+k+".stac.json", a.Href); got != "out/"+k {
				t.Errorf("%q: asset %s href %q resolves to %q", k, name, a.Href, got)
			}
		}
	}
	for _, k := range bad {
		o, ok := byKey[k]
		if !ok || o.Status != localrun.StatusRemediation || o.Code != string(fault.InvalidKey) {
			t.Errorf("%q: %+v, want routed to remediation with code %s", k, o, fault.InvalidKey)
		}
	}
	// Again: every converted key is recognised as migrated.
	out, stderr, err = run(t, args...)
	if err != nil {
		t.Fatalf("second migrate: %v\n%s\n%s", err, out, stderr)
	}
	for _, o := range lastReport(t, out).Files {
		if slices.Contains(good, o.Key) && o.Status != localrun.StatusSkipped {
			t.Errorf("second run: %q %s %s %s", o.Key, o.Status, o.Code, o.Message)
		}
	}
	// Nothing outside out/ (its outputs, collections and root catalog) and
	// the pipeline's own prefixes, nothing for the refused keys.
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(dst)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if !strings.HasPrefix(k, "out/in/") && !strings.HasPrefix(k, "out/collections/") && k != "out/catalog.json" &&
				!strings.HasPrefix(k, "_staging/") && !strings.HasPrefix(k, quarantine.DefaultPrefix) {
				t.Errorf("destination holds %q, outside the prefixes the run writes", k)
			}
		}
	}
}

// resolveHref resolves a STAC href against the key of the document that
// holds it, as a URI reference, and returns the key it names.
func resolveHref(docKey, href string) string {
	base, err := url.Parse("s3://bucket/" + strings.ReplaceAll(url.PathEscape(docKey), "%2F", "/"))
	if err != nil {
		return "bad document key: " + err.Error()
	}
	ref, err := url.Parse(href)
	if err != nil {
		return "bad href: " + err.Error()
	}
	return strings.TrimPrefix(base.ResolveReference(ref).Path, "/")
}
