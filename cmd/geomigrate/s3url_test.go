package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMalformedS3LocationsAreRefused: a value beginning with "s3:" in any
// case that is not a well-formed s3://BUCKET[/PREFIX] is refused with exit
// status 2 and one line naming the flag, before anything is written (no
// ./s3:… directory, no state directory).
func TestMalformedS3LocationsAreRefused(t *testing.T) {
	src := filepath.Dir(sampleFile(t, "dem_utm33.tif"))
	cases := []struct {
		name string
		args []string
		want string // in the message
	}{
		{"one slash", []string{"migrate", src, "--dest", "s3:/bucket/out"}, "--dest s3:/bucket/out: an S3 location is s3://BUCKET"},
		{"no slash", []string{"migrate", src, "--dest", "s3:bucket/out"}, "--dest s3:bucket/out: an S3 location is s3://BUCKET"},
		{"upper-case scheme", []string{"migrate", src, "--dest", "S3://bucket/x"}, "lower case"},
		{"no bucket", []string{"migrate", src, "--dest", "s3://"}, "no bucket"},
		{"no bucket, a key", []string{"migrate", src, "--dest", "s3:///out"}, "no bucket"},
		{"upper-case bucket", []string{"migrate", src, "--dest", "s3://My_Bucket/out"}, "lower-case letters"},
		{"short bucket", []string{"migrate", src, "--dest", "s3://ab/out"}, "3 to 63"},
		{"bucket ends with a hyphen", []string{"migrate", src, "--dest", "s3://bucket-/out"}, "begin and end"},
		{"adjacent dots", []string{"migrate", src, "--dest", "s3://a..b/out"}, "adjacent dots"},
		{"IP address", []string{"migrate", src, "--dest", "s3://192.168.5.4/out"}, "IP address"},
		{"source", []string{"migrate", "s3:/archive/rasters", "--dest", "out"}, "SRC s3:/archive/rasters"},
		{"plan source", []string{"plan", "S3://archive/x"}, "lower case"},
		{"plan dest", []string{"plan", src, "--dest", "s3:out"}, "--dest s3:out"},
		{"backfill source", []string{"backfill", "s3:/archive", "--dest", "out"}, "SRC_DIR s3:/archive"},
		{"backfill manifest", []string{"backfill", "--backend", "aws", "--manifest", "s3:inventory/manifest.json", "--dest", "s3://out"}, "--manifest s3:inventory"},
		{"replay dest", []string{"replay", "--dest", "s3:/bucket/out"}, "--dest s3:/bucket/out"},
		{"status dest", []string{"status", "--dest", "s3:/bucket/out"}, "--dest s3:/bucket/out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cwd := t.TempDir()
			t.Chdir(cwd)
			_, _, err := run(t, c.args...)
			var stderr bytes.Buffer
			if code := exitCode(err, &stderr); code != 2 {
				t.Fatalf("%v: exit %d, want 2 (%v)", c.args, code, err)
			}
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if !strings.Contains(first, c.want) {
				t.Errorf("%v: message %q lacks %q", c.args, first, c.want)
			}
			if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
				t.Errorf("%v: wrote %s in the working directory", c.args, entries[0].Name())
			}
		})
	}
}

// TestS3Location: what is a well-formed S3 location, and what is not one
// at all (left to the command).
func TestS3Location(t *testing.T) {
	for s, ok := range map[string]bool{
		"s3://bucket":                     true,
		"s3://bucket/":                    true,
		"s3://my.bucket-1/a/b.tif":        true,
		"s3://ap-123-s3alias/x":           true, // an access point alias stands for a bucket
		"out":                             true,
		"./s3:/x":                         true, // a local path
		"s3data/x":                        true,
		"ssm:/recipe":                     true,
		"s3:":                             false,
		"s3:/":                            false,
		"S3:bucket":                       false,
		"s3://bucket_1/x":                 false,
		"s3://-bucket/x":                  false,
		"s3://" + strings.Repeat("a", 64): false,
	} {
		if err := s3Location(s); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", s, err, ok)
		}
	}
}
