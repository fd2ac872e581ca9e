//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

// TestRecipeFileOnTheAWSBackend: the same recipe file drives a run against
// S3 and DynamoDB: keys are matched under the bucket, excluded ones are
// ignored, and editing one glob converts exactly its files again, with
// the new compression in the promoted objects.
func TestRecipeFileOnTheAWSBackend(t *testing.T) {
	c := s3Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "rsrc-"+suffix, "rdst-"+suffix, "rstate-"+suffix
	uploadSamples(t, c, src, samples)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(dst)}); err != nil {
		t.Fatal(err)
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	const text = "version: 1\nexclude: [\"samples/pixel_bomb.tif\"]\nrules:\n  - match: \"samples/dem_*\"\n    raster: {compression: DEFLATE}\n"
	migrate := func(recipeText, stateDir string) map[string]localrun.Outcome {
		t.Helper()
		if err := os.WriteFile(recipePath, []byte(recipeText), 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, err := run(t, "migrate", "s3://"+src+"/samples/", "--backend", "aws", "--dest", "s3://"+dst+"/out",
			"--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, stateDir), "--progress", "plain", "--recipe", recipePath)
		if err != nil {
			t.Fatalf("aws run: %v\n%s\n%s", err, out, stderr)
		}
		m := map[string]localrun.Outcome{}
		for _, o := range lastReport(t, out).Files {
			m[filepath.Base(o.Key)] = o
		}
		return m
	}
	compression := func(key string) string {
		t.Helper()
		obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(dst), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		defer obj.Body.Close()
		p := filepath.Join(t.TempDir(), filepath.Base(key))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, obj.Body); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return cogCompression(t, p)
	}

	first := migrate(text, "s1")
	if o := first["pixel_bomb.tif"]; o.Status != localrun.StatusIgnored || o.Reason != "excluded_by_recipe" {
		t.Errorf("excluded key: %+v", o)
	}
	if first["dem_utm33.tif"].Status != localrun.StatusCompleted || first["landcover_4326.tif"].Status != localrun.StatusCompleted {
		t.Fatalf("first run: %+v", first)
	}
	if got := compression("out/samples/dem_utm33.tif"); got != "DEFLATE" {
		t.Errorf("dem: %s, want DEFLATE", got)
	}
	if got := compression("out/samples/landcover_4326.tif"); got != "ZSTD" {
		t.Errorf("landcover: %s, want ZSTD", got)
	}

	second := migrate(strings.Replace(text, "DEFLATE", "LZW", 1), "s2")
	for name, o := range second {
		want := localrun.StatusSkipped
		switch {
		case name == "dem_utm33.tif":
			want = localrun.StatusCompleted
		case first[name].Status == localrun.StatusIgnored:
			want = localrun.StatusIgnored
		}
		if o.Status != want {
			t.Errorf("after the edit, %s: %s (%s), want %s", name, o.Status, o.Reason, want)
		}
	}
	if got := compression("out/samples/dem_utm33.tif"); got != "LZW" {
		t.Errorf("dem after the edit: %s, want LZW", got)
	}
}
