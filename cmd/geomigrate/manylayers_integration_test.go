//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAManyLayerGeoPackageCompletesOnS3: the 300- and 500-layer
// GeoPackages of TestAManyLayerGeoPackageCompletesLocally complete through the AWS
// adapters on the S3 and DynamoDB stand-ins: its outputs list is staged in
// the destination bucket, read back by Promote, and gone afterwards with
// the rest of staging; every layer is at its final key.
func TestAManyLayerGeoPackageCompletesOnS3(t *testing.T) {
	for _, layers := range []int{300, 500} {
		t.Run(fmt.Sprint(layers), func(t *testing.T) { manyLayersOnS3(t, layers) })
	}
}

func manyLayersOnS3(t *testing.T, layers int) {
	c := s3Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	gpkg := filepath.Join(dir, "many.gpkg")
	manyLayersGPKG(t, gpkg, layers)
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "src-"+suffix, "dst-"+suffix, "state-"+suffix
	for _, b := range []string{src, dst} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(gpkg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(src), Key: aws.String("in/many.gpkg"), Body: f}); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", "s3://"+src+"/in/", "--backend", "aws", "--dest", "s3://"+dst+"/out",
		"--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "state"), "--progress", "plain")
	if err != nil {
		t.Fatalf("aws run: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	if len(r.Files) != 1 || r.Files[0].Status != "completed" || r.Files[0].Message != "" || r.Files[0].BytesOut == 0 {
		b, _ := json.Marshal(r.Files)
		t.Fatalf("report: %.2000s\n%s", b, stderr)
	}
	for i := range layers {
		key := fmt.Sprintf("out/in/many/layer_%03d.parquet", i)
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String(key)}); err != nil {
			t.Fatalf("s3://%s/%s: %v", dst, key, err)
		}
	}
	staged, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(dst), Prefix: aws.String("_staging/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range staged.Contents {
		t.Errorf("staging holds s3://%s/%s", dst, aws.ToString(o.Key))
	}
}
