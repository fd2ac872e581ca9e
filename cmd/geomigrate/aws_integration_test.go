//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// s3Client talks to the S3 stand-in started by `make test`
// (scripts/with-integration-servers.sh).
func s3Client(t *testing.T) *s3.Client {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		t.Skip("no S3/DynamoDB stand-ins (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB): run through `make test` (scripts/with-integration-servers.sh)")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	// The SDK reads the stand-ins' endpoints (AWS_ENDPOINT_URL_*) itself.
	o := awsconfig.Options{}
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return awsconfig.NewS3(cfg, o)
}

// uploadSamples writes the sample data into a new bucket under samples/.
func uploadSamples(t *testing.T, c *s3.Client, bucket, dir string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("samples/" + e.Name()), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

func statuses(r localrun.Report) map[string]string {
	m := map[string]string{}
	for _, o := range r.Files {
		m[filepath.Base(o.Key)] = o.Status
	}
	return m
}

// TestAWSBackendMatchesTheEmbeddedBackends runs the sample data through S3
// and DynamoDB stand-ins and through the embedded backends: every file
// ends the same way.
func TestAWSBackendMatchesTheEmbeddedBackends(t *testing.T) {
	c := s3Client(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "migrate", samples, "--dest", filepath.Join(dir, "local"))
	if err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	local := statuses(lastReport(t, out))

	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, ops, table := "src-"+suffix, "dst-"+suffix, "ops-"+suffix, "state-"+suffix
	uploadSamples(t, c, src, samples)
	for _, b := range []string{dst, ops} {
		if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	awsArgs := func(stateDir string) []string {
		return []string{"migrate", "s3://" + src + "/samples/", "--backend", "aws", "--dest", "s3://" + dst + "/out",
			"--state-table", table, "--create-table", "--state-dir", stateDir, "--progress", "plain",
			"--quarantine-bucket", ops, "--quarantine-prefix", "quarantine/"}
	}
	out, stderr, err := run(t, awsArgs(filepath.Join(dir, "aws1"))...)
	if err != nil {
		t.Fatalf("aws run: %v\n%s\n%s", err, out, stderr)
	}
	remoteReport := lastReport(t, out)
	remote := statuses(remoteReport)
	for _, o := range remoteReport.Files {
		if o.Status != local[filepath.Base(o.Key)] {
			t.Logf("%s: %s %s: %s", o.Key, o.Status, o.Code, o.Message)
		}
	}
	for name, want := range local {
		if remote[name] != want {
			t.Errorf("%s: aws backend %q, embedded %q", name, remote[name], want)
		}
	}
	if len(remote) != len(local) {
		t.Errorf("aws run saw %d files, local %d", len(remote), len(local))
	}
	// Outputs are at the final keys with their lineage metadata.
	head, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String("out/samples/dem_utm33.tif")})
	if err != nil {
		t.Fatalf("promoted COG missing: %v", err)
	}
	if head.Metadata["src-sha256"] == "" || head.Metadata["recipe"] == "" {
		t.Errorf("promoted object metadata %v", head.Metadata)
	}
	// Every routed file has its quarantine bundle in the operations
	// bucket, written by Classify through the AWS adapters: a manifest
	// that references the input (no copy); the destination holds none.
	routed := 0
	for _, o := range remoteReport.Files {
		if o.Status != localrun.StatusRemediation && o.Status != localrun.StatusDeadLetter {
			continue
		}
		routed++
		prefix, ok := strings.CutPrefix(o.Bundle, "s3://"+ops+"/quarantine/")
		if !ok {
			t.Errorf("%s: bundle %q is not under s3://%s/quarantine/", o.Key, o.Bundle, ops)
			continue
		}
		got, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(ops), Key: aws.String("quarantine/" + prefix + quarantine.ManifestFile)})
		if err != nil {
			t.Errorf("%s: manifest: %v", o.Key, err)
			continue
		}
		var m quarantine.Manifest
		err = json.NewDecoder(got.Body).Decode(&m)
		got.Body.Close()
		if err != nil || m.Copied || m.Input.URI != "s3://"+src+"/"+o.Key || len(m.Input.SHA256) != 64 {
			t.Errorf("%s: manifest %v: copied %v, input %+v", o.Key, err, m.Copied, m.Input)
		}
	}
	listed, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(dst)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range listed.Contents {
		if k := aws.ToString(o.Key); strings.Contains(k, "quarantine") || strings.HasSuffix(k, "/"+quarantine.ManifestFile) {
			t.Errorf("a bundle object in the destination: %s", k)
		}
	}
	// The run linked its items into the destination's STAC catalog.
	if cat, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(dst), Key: aws.String("out/catalog.json")}); err != nil {
		t.Errorf("catalog: %v", err)
	} else {
		cat.Body.Close()
	}
	if routed == 0 {
		t.Error("the aws run routed no file")
	}
	// The state table lists the jobs by status.
	status, _, err := run(t, "status", "--backend", "aws", "--state-table", table)
	if err != nil || !strings.Contains(status, "COMPLETED") || !strings.Contains(status, "REMEDIAL") {
		t.Errorf("status --backend aws: %v\n%s", err, status)
	}
	// A process killed between Promote's COMPLETED record and its deletes
	// leaves the job's staged copies; another execution's staging is not
	// this run's to remove.
	ctx := context.Background()
	leftover := migration.DefaultStagingPrefix + head.Metadata["src-sha256"][:32] + "-" + head.Metadata["recipe"] + "/out/samples/dem_utm33.tif"
	foreign := migration.DefaultStagingPrefix + strings.Repeat("0", 32) + "-other/out/x.tif"
	for _, k := range []string{leftover, foreign} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(dst), Key: aws.String(k), Body: strings.NewReader("staged")}); err != nil {
			t.Fatal(err)
		}
	}
	// Again: everything skipped, and the skipped job's staging cleared.
	out, stderr, err = run(t, awsArgs(filepath.Join(dir, "aws2"))...)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastReport(t, out); r.Totals.Skipped != r.Totals.Files {
		t.Errorf("second aws run: %+v", r.Totals)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String(leftover)}); err == nil {
		t.Errorf("s3://%s/%s: the migrated file's staged copy is still there after the second run\n%s", dst, leftover, stderr)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String(foreign)}); err != nil {
		t.Errorf("s3://%s/%s: another job's staging was removed: %v", dst, foreign, err)
	}
}

// TestTwoConcurrentAWSRunsConvertEachFileOnce starts two migrations of one
// bucket at once; leases and conditional promotion make each file convert
// once.
func TestTwoConcurrentAWSRunsConvertEachFileOnce(t *testing.T) {
	c := s3Client(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	written, err := sampledata.Write(samples)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "csrc-"+suffix, "cdst-"+suffix, "cstate-"+suffix
	uploadSamples(t, c, src, samples)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(dst)}); err != nil {
		t.Fatal(err)
	}
	// Create the table before the race so neither run waits on the other's CreateTable.
	// (An empty prefix: the table is created, then the run is refused as
	// having nothing to migrate.)
	if _, _, err := run(t, "migrate", "s3://"+src+"/samples/none", "--backend", "aws", "--dest", "s3://"+dst, "--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "init")); err == nil || !strings.Contains(err.Error(), "nothing to migrate") {
		t.Fatalf("migrate of an empty prefix: %v, want 'nothing to migrate'", err)
	}
	var wg sync.WaitGroup
	reports := make([]localrun.Report, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errOut bytes.Buffer
			errs[i] = realMain(context.Background(), []string{"migrate", "s3://" + src + "/samples/", "--backend", "aws", "--dest", "s3://" + dst,
				"--state-table", table, "--state-dir", filepath.Join(dir, fmt.Sprint("run", i)), "--workers", "2"}, &out, &errOut)
			if errs[i] == nil {
				reports[i] = lastReport(t, out.String())
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	completed := map[string]int{}
	for _, r := range reports {
		for _, o := range r.Files {
			if o.Status == localrun.StatusCompleted {
				completed[o.Key]++
			}
		}
	}
	good := 0
	for _, s := range written {
		if !s.Bad {
			good++
		}
	}
	for key, n := range completed {
		if n != 1 {
			t.Errorf("%s converted %d times", key, n)
		}
	}
	if len(completed) == 0 || len(completed) != good {
		t.Errorf("%d files converted, want %d (every good file once)", len(completed), good)
	}
}
