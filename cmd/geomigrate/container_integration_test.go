//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// TestContainerRouteThroughTheBinary: with a one-byte container limit,
// `geomigrate migrate` converts every sample within the recipe's budgets
// in a child process of the same binary (`geomigrate task convert`, the
// local ecs:runTask.sync), which reaches the run's state store through
// its parent; the good samples complete, and the task's DataError for a
// raster without a CRS is classified as the Lambda's is (remediation,
// MissingCRS). A second run skips every file, as after a Lambda run.
func TestContainerRouteThroughTheBinary(t *testing.T) {
	bin := cliBinary(t)
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if out, err := exec.Command(bin, "sample-data", src).CombinedOutput(); err != nil {
		t.Fatalf("sample-data: %v\n%s", err, out)
	}
	run := func() localrun.Report {
		t.Helper()
		cmd := exec.Command(bin, "migrate", src, "--dest", dest, "--progress", "plain")
		cmd.Env = append(os.Environ(), "GEOMIGRATE_CONTAINER_BYTES=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return lastReport(t, stdout.String()+"\n"+stderr.String())
	}
	r := run()
	byKey := map[string]localrun.Outcome{}
	for _, o := range r.Files {
		byKey[o.Key] = o
	}
	inContainer := 0
	for key, o := range byKey {
		if o.Engine == migration.EngineContainer {
			inContainer++
		}
		if strings.HasSuffix(key, "pixel_bomb.tif") && o.Engine != migration.EngineLambda {
			t.Errorf("%s: over the recipe's pixel budget, converted on %q; want the Lambda, whose preflight refuses it", key, o.Engine)
		}
	}
	if inContainer < 7 {
		t.Fatalf("%d files converted in the container, want every good sample at least: %+v", inContainer, r.Files)
	}
	for _, key := range []string{"dem_utm33.tif", "places.shp", "city.gpkg"} {
		if o := byKey[key]; o.Status != localrun.StatusCompleted || o.Engine != migration.EngineContainer {
			t.Errorf("%s: %s on %q (%s %s), want completed in the container", key, o.Status, o.Engine, o.Error, o.Message)
		}
	}
	if o := byKey["no_crs.tif"]; o.Status != localrun.StatusRemediation || o.Error != "DataError" || o.Code != string(fault.MissingCRS) || o.Engine != migration.EngineContainer {
		t.Errorf("no_crs.tif: %+v, want remediation DataError MissingCRS from the container", o)
	}
	if r.Totals.DeadLetter != 0 || r.Totals.Failed != 0 {
		t.Errorf("dlq %d, failed %d on a fault-free run", r.Totals.DeadLetter, r.Totals.Failed)
	}
	second := run()
	for _, o := range second.Files {
		if o.Status != localrun.StatusSkipped && o.Status != localrun.StatusIgnored {
			t.Errorf("second run: %s is %s, want skipped", o.Key, o.Status)
		}
	}
}

// TestContainerRouteOnTheAWSBackend: with --backend aws the container task
// is a child process configured as the container is on AWS (internal/config's
// environment, the S3 and DynamoDB stand-ins): the samples end as through
// the Lambda path, converted in the container.
func TestContainerRouteOnTheAWSBackend(t *testing.T) {
	cliBinary(t)
	c := s3Client(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "fsrc-"+suffix, "fdst-"+suffix, "fstate-"+suffix
	uploadSamples(t, c, src, samples)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(dst)}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GEOMIGRATE_CONTAINER_BYTES", "1")
	out, stderr, err := run(t, "migrate", "s3://"+src+"/samples/", "--backend", "aws", "--dest", "s3://"+dst+"/out",
		"--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "state"), "--progress", "plain")
	if err != nil && !strings.Contains(out, "report: ") {
		t.Fatalf("aws run: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out) // the routed samples make a failed run: its report says which
	byName := map[string]localrun.Outcome{}
	for _, o := range r.Files {
		byName[filepath.Base(o.Key)] = o
		if o.Status == localrun.StatusDeadLetter {
			t.Logf("%s: %s", o.Key, o.Message)
		}
	}
	for _, name := range []string{"dem_utm33.tif", "places.shp", "city.gpkg"} {
		if o := byName[name]; o.Status != localrun.StatusCompleted || o.Engine != migration.EngineContainer {
			t.Errorf("%s: %s on %q (%s %s), want completed in the container", name, o.Status, o.Engine, o.Error, o.Message)
		}
	}
	if o := byName["no_crs.tif"]; o.Status != localrun.StatusRemediation || o.Error != "DataError" || o.Code != string(fault.MissingCRS) || o.Engine != migration.EngineContainer {
		t.Errorf("no_crs.tif: %+v, want remediation DataError MissingCRS from the container", o)
	}
	if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String("out/samples/dem_utm33.tif")}); err != nil {
		t.Errorf("promoted COG missing: %v", err)
	}
}
