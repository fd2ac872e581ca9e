//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/plan"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
)

// bucketState is every object of a bucket with its ETag and time.
func bucketState(t *testing.T, c *s3.Client, bucket string) string {
	t.Helper()
	var lines []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			lines = append(lines, fmt.Sprintf("%s %s %d %s", aws.ToString(o.Key), aws.ToString(o.ETag), aws.ToInt64(o.Size), aws.ToTime(o.LastModified)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// tableState is every record of the state table with its version.
func tableState(t *testing.T, table string) string {
	t.Helper()
	o := awsconfig.Options{}
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	err = dynamostore.New(awsconfig.NewDynamoDB(cfg, o), dynamostore.Options{Table: table}).List(context.Background(), "", func(j statestore.Job) error {
		lines = append(lines, fmt.Sprintf("%s %s v%d", j.ID, j.Status, j.Version))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestPlanAWSBackend: plan --backend aws lists the bucket, predicts the
// run (conversions and preflight refusals before it, skips after it) and
// changes nothing in either bucket or the table.
func TestPlanAWSBackend(t *testing.T) {
	c := s3Client(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(samples, "README.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "plansrc-"+suffix, "plandst-"+suffix, "planstate-"+suffix
	uploadSamples(t, c, src, samples)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(dst)}); err != nil {
		t.Fatal(err)
	}
	migrateArgs := []string{"migrate", "s3://" + src + "/samples/", "--backend", "aws", "--dest", "s3://" + dst + "/out",
		"--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "state"), "--progress", "plain"}
	planArgs := []string{"s3://" + src + "/samples/", "--backend", "aws", "--dest", "s3://" + dst + "/out", "--state-table", table}

	// Before any run: the table must exist (migrate --create-table makes
	// it); plan says so rather than guess.
	if _, _, err := run(t, append([]string{"plan"}, planArgs...)...); err == nil || !strings.Contains(err.Error(), "DynamoDB table \""+table+"\" does not exist") {
		t.Fatalf("plan against a missing state table: %v", err)
	}
	out, stderr, err := run(t, migrateArgs...)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	completed := 0
	for _, f := range lastReport(t, out).Files {
		if f.Status == "completed" {
			completed++
		}
	}
	before := bucketState(t, c, src) + "\n--\n" + bucketState(t, c, dst) + "\n--\n" + tableState(t, table)
	r := planJSON(t, planArgs...)
	if after := bucketState(t, c, src) + "\n--\n" + bucketState(t, c, dst) + "\n--\n" + tableState(t, table); after != before {
		t.Fatalf("plan wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
	skipped := 0
	for _, f := range r.Files {
		if f.Action == plan.ActionSkip && f.Reason == migration.ReasonAlreadyMigrated {
			skipped++
		}
	}
	if skipped != completed || r.Totals.Ignore != 1 || r.Backend != "aws" {
		t.Errorf("after migrate: %d skipped as migrated, %d completed; totals %+v", skipped, completed, r.Totals)
	}

	// Another recipe: everything geospatial would be converted or refused
	// again; preflight by ranged reads refuses four bad GeoTIFFs, the two
	// that only a full open refuses (no CRS, truncated) would be converted.
	other := planJSON(t, append(planArgs, "--zstd-level", "9")...)
	refused := map[string]string{}
	for _, f := range other.Files {
		if f.Action == plan.ActionRefuse {
			refused[filepath.Base(f.Key)] = f.Code
		}
	}
	for name, code := range map[string]string{"vrt_passwd.tif": "UnsafeSource", "empty.tif": "CorruptSource", "not_a_raster.tif": "UnsupportedFormat", "pixel_bomb.tif": "BudgetExceeded"} {
		if refused[name] != code {
			t.Errorf("%s: refused with %q, want %s (refusals %v)", name, refused[name], code, refused)
		}
	}
	if other.Totals.Skip != 0 || other.Totals.Convert != completed+2 || other.Totals.Refuse != 4 || other.Estimate.Transitions == 0 {
		t.Errorf("with another recipe: %+v", other.Totals)
	}
	text, _, err := run(t, append([]string{"plan"}, planArgs...)...)
	if err != nil || !strings.Contains(text, "Cost per 1,000 files: $") || !strings.Contains(text, "(aws backend") {
		t.Errorf("plan --backend aws text: %v\n%s", err, text)
	}
}

// TestPlanAWSBackendWithRecipe: with --backend aws and --recipe, plan gives
// every file the recipe hash the migrate that follows reports for it,
// ignores the excluded glob as the run does, and afterwards skips exactly
// the files the run converted.
func TestPlanAWSBackendWithRecipe(t *testing.T) {
	c := s3Client(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	recipeText := `version: 1
exclude: ["samples/temperature_*"]
defaults:
  raster: {compression: ZSTD, level: 9}
rules:
  - match: "samples/dem_*"
    raster: {compression: DEFLATE, level: 6}
`
	if err := os.WriteFile(recipePath, []byte(recipeText), 0o644); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "planrsrc-"+suffix, "planrdst-"+suffix, "planrstate-"+suffix
	uploadSamples(t, c, src, samples)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(dst)}); err != nil {
		t.Fatal(err)
	}
	where := []string{"s3://" + src + "/samples/", "--backend", "aws", "--dest", "s3://" + dst + "/out", "--state-table", table, "--recipe", recipePath}
	// The table must exist for plan: migrate --create-table makes it, so a
	// run over nothing (an empty prefix) creates it first.
	if _, _, err := run(t, "migrate", "s3://"+src+"/none/", "--backend", "aws", "--dest", "s3://"+dst+"/out", "--state-table", table,
		"--create-table", "--state-dir", filepath.Join(dir, "state0")); err == nil || !strings.Contains(err.Error(), "nothing to migrate") {
		t.Fatalf("migrate over an empty prefix: %v", err)
	}
	planned := map[string]plan.File{}
	for _, f := range planJSON(t, where...).Files {
		planned[f.Key] = f
	}
	out, stderr, err := run(t, append([]string{"migrate"}, append(where, "--state-dir", filepath.Join(dir, "state"), "--progress", "plain")...)...)
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	report := lastReport(t, out)
	replanned := map[string]plan.File{}
	for _, f := range planJSON(t, where...).Files {
		replanned[f.Key] = f
	}
	hashes := map[string]bool{}
	for _, o := range report.Files {
		p, again := planned[o.Key], replanned[o.Key]
		if p.Key == "" {
			t.Errorf("%s: not in the plan", o.Key)
			continue
		}
		if p.RecipeHash != o.RecipeHash || again.RecipeHash != o.RecipeHash {
			t.Errorf("%s: plan's recipe %q (after the run %q), the report's %q", o.Key, p.RecipeHash, again.RecipeHash, o.RecipeHash)
		}
		if (p.Action == plan.ActionIgnore) != (o.Status == "ignored") {
			t.Errorf("%s: plan %s (%s), migrate %s (%s)", o.Key, p.Action, p.Reason, o.Status, o.Reason)
		}
		if strings.HasPrefix(o.Key, "samples/temperature_") && p.Reason != migration.ReasonExcluded {
			t.Errorf("%s: plan %s (%s), want ignored as %s", o.Key, p.Action, p.Reason, migration.ReasonExcluded)
		}
		if (o.Status == "completed") != (again.Action == plan.ActionSkip && again.Reason == migration.ReasonAlreadyMigrated) {
			t.Errorf("%s: migrate %s, plan after it %s (%s)", o.Key, o.Status, again.Action, again.Reason)
		}
		if o.RecipeHash != "" {
			hashes[o.RecipeHash] = true
		}
	}
	if len(planned) != len(report.Files) || len(hashes) != 2 {
		t.Errorf("plan lists %d file(s), the report %d; recipes %v (want the dem rule's and the defaults')", len(planned), len(report.Files), hashes)
	}
}
