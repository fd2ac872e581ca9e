package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/config"
)

// commandPaths lists every leaf command of the command line ("state repair").
func commandPaths(t *testing.T) []string {
	t.Helper()
	var c cli
	p, err := newParser(&c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(n *kong.Node, prefix string)
	walk = func(n *kong.Node, prefix string) {
		for _, child := range n.Children {
			path := strings.TrimSpace(prefix + " " + child.Name)
			if len(child.Children) == 0 {
				paths = append(paths, path)
			}
			walk(child, path)
		}
	}
	walk(p.Model.Node, "")
	if len(paths) < 9 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	return paths
}

// TestHelpOnStdoutForEveryCommand: --help (and help COMMAND) prints the
// command's usage on stdout, nothing on stderr, and succeeds.
func TestHelpOnStdoutForEveryCommand(t *testing.T) {
	for _, path := range append(commandPaths(t), "") {
		for _, args := range [][]string{append(strings.Fields(path), "--help"), append([]string{"help"}, strings.Fields(path)...)} {
			stdout, stderr, err := run(t, args...)
			if err != nil || stderr != "" || !strings.Contains(stdout, "Usage: geomigrate "+path) {
				t.Errorf("geomigrate %s: err %v, stderr %q, stdout:\n%s", strings.Join(args, " "), err, stderr, stdout)
			}
			if strings.Contains(stdout, "\n  -") && !strings.Contains(stdout, "--help") {
				t.Errorf("geomigrate %s: flags not in GNU double-dash form:\n%s", strings.Join(args, " "), stdout)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"migrate", "--version"}} {
		stdout, _, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"geomigrate ", "commit ", "GDAL 3.", "PROJ "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v prints %q, lacking %q", args, stdout, want)
			}
		}
	}
}

// TestBadCommandLinesAreRefusedInOneLine: a value out of range, an unknown
// enum value or an unknown flag is refused before anything runs, with a
// short message naming the flag, and exit status 2.
func TestBadCommandLinesAreRefusedInOneLine(t *testing.T) {
	src := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", src, "--dest", "out", "--workers", "-1"}, "--workers -1"},
		{[]string{"migrate", src, "--dest", "out", "--workers", "0"}, "--workers 0"},
		{[]string{"migrate", src, "--dest", "out", "--progress", "bogus"}, "--progress"},
		{[]string{"migrate", src, "--dest", "out", "--progress-file", "events.jsonl"}, "--progress-file needs --progress json"},
		{[]string{"migrate", src, "--dest", "out", "--zstd-level", "23"}, "--zstd-level 23"},
		{[]string{"migrate", src, "--dest", "out", "--vector-format", "Shapefile"}, "--vector-format"},
		{[]string{"migrate", src, "--dest", "out", "--lease", "10m"}, "--lease 10m"},
		{[]string{"migrate", src, "--dest", "out", "--bogus"}, "unknown flag --bogus"},
		{[]string{"migrate", "s3://bucket/in/", "--dest", "out"}, "add --backend aws"},
		{[]string{"migrate", src, "--dest", "s3://bucket/out"}, "add --backend aws"},
		{[]string{"migrate", "s3://bucket/in/", "--dest", "s3://bucket/out", "--backend", "aws"}, "--state-table"},
		{[]string{"status", "--dest", "out", "--status", "bogus"}, "--status \"bogus\""},
		{[]string{"replay", "--dest", "out", "--queue", "elsewhere"}, "--queue"},
		{[]string{"replay", "--dest", "out", "--visibility-timeout", "13h"}, "--visibility-timeout"},
		{[]string{"backfill", src, "--dest", "out", "--tolerated-failure-percentage", "101"}, "--tolerated-failure-percentage"},
		{[]string{"validate", "x.tif", "--format", "PNG"}, "--format \"PNG\""},
		{[]string{"no-such-command"}, "no-such-command"},
	} {
		_, stderr, err := run(t, tt.args...)
		if err == nil {
			t.Errorf("%v accepted", tt.args)
			continue
		}
		var msg bytes.Buffer
		code := exitCode(err, &msg)
		lines := strings.Split(strings.TrimSpace(msg.String()), "\n")
		if code != 2 || len(lines) > 2 || !strings.Contains(msg.String(), tt.want) || stderr != "" {
			t.Errorf("%v: exit %d, %d line(s), want 2 and at most 2 naming %q:\n%s%s", tt.args, code, len(lines), tt.want, msg.String(), stderr)
		}
		for _, internal := range []string{"main.", "config.", "*", "reflect"} {
			if strings.Contains(msg.String(), internal) {
				t.Errorf("%v: message shows an internal name (%q): %s", tt.args, internal, msg.String())
			}
		}
	}
}

// TestCaseInsensitiveNames: enum values and format names match in any case.
func TestCaseInsensitiveNames(t *testing.T) {
	var c cli
	p, err := newParser(&c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse([]string{"migrate", "x", "--dest", "y", "--vector-format", "flatgeobuf", "--progress", "PLAIN", "--backend", "AWS", "--log-format", "JSON"}); err != nil {
		t.Fatal(err)
	}
	o := c.Migrate.Options
	if o.Handlers.VectorFormat != "FlatGeobuf" || o.Progress != "plain" || o.Where.Backend != "aws" || o.LogFormat != "json" {
		t.Errorf("parsed %+v", o)
	}
	if _, err := p.Parse([]string{"status", "--dest", "y", "--status", "remedial"}); err != nil || c.Status.Only != "REMEDIAL" {
		t.Errorf("status --status remedial: %v, %q", err, c.Status.Only)
	}
	if _, err := p.Parse([]string{"validate", "a.tif", "--format", "cog"}); err != nil || c.Validate.Format != "COG" {
		t.Errorf("validate --format cog: %v, %q", err, c.Validate.Format)
	}
}

// TestWorkersDefaultPerBackend: without --workers the local backend runs
// one file per CPU and the AWS backend awsWorkersPerCPU per CPU; a given
// --workers is kept on either.
func TestWorkersDefaultPerBackend(t *testing.T) {
	cpus := runtime.NumCPU()
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"migrate", "x", "--dest", "y"}, cpus},
		{[]string{"migrate", "x", "--dest", "y", "--workers", "3"}, 3},
		{[]string{"migrate", "s3://b/p", "--dest", "s3://d", "--backend", "aws"}, awsWorkersPerCPU * cpus},
		{[]string{"migrate", "s3://b/p", "--dest", "s3://d", "--backend", "aws", "--workers", "3"}, 3},
		{[]string{"migrate", "s3://b/p", "--dest", "s3://d", "--backend", "aws", "--workers", fmt.Sprint(cpus)}, cpus},
	} {
		var c cli
		p, err := newParser(&c, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		k, err := p.Parse(tt.args)
		if err != nil {
			t.Fatal(err)
		}
		f := &c.Migrate.Options
		f.kctx = k
		f.defaultWorkers()
		if f.Workers != tt.want {
			t.Errorf("%v: --workers %d, want %d", tt.args, f.Workers, tt.want)
		}
	}
}

// TestFlagsAndLambdaEnvironmentAgree: the CLI (kong) and the Lambda
// functions (config.LoadLambda) read the one declaration alike: the same
// defaults, and the same values from the same environment.
func TestFlagsAndLambdaEnvironmentAgree(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"GEOMIGRATE_VECTOR_FORMAT": "flatgeobuf", "GEOMIGRATE_LEASE_SECONDS": "1800", "GEOMIGRATE_S3_PATH_STYLE": "false",
			"GEOMIGRATE_ZSTD_LEVEL": "9", "GEOMIGRATE_AWS_MAX_BACKOFF": "20ms", "GEOMIGRATE_S3_CONDITIONAL_COPY": "Client"},
	} {
		for _, name := range config.LambdaEnvNames() {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
		for k, v := range env {
			t.Setenv(k, v)
		}
		t.Setenv("GEOMIGRATE_DEST_BUCKET", "dst")
		t.Setenv("GEOMIGRATE_STATE_TABLE", "jobs")
		l, err := config.LoadLambda()
		if err != nil {
			t.Fatal(err)
		}
		var c cli
		p, err := newParser(&c, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse([]string{"migrate", "x", "--dest", "y"}); err != nil {
			t.Fatal(err)
		}
		if got := c.Migrate.Options.Handlers; !reflect.DeepEqual(got, l.Handlers) {
			t.Errorf("env %v: flags give %+v, the Lambda reads %+v", env, got, l.Handlers)
		}
		if got := c.Migrate.Options.Where.AWS; !reflect.DeepEqual(got, l.AWS) {
			t.Errorf("env %v: flags give %+v, the Lambda reads %+v", env, got, l.AWS)
		}
	}
}

// TestNoArgumentsIsAUsageError: the usage goes to stderr and the exit
// status is 2.
func TestNoArgumentsIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	err := realMain(context.Background(), nil, &out, &errOut)
	if exitCode(err, io.Discard) != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "Usage: geomigrate") {
		t.Errorf("err %v\nstdout %q\nstderr %q", err, out.String(), errOut.String())
	}
}

func TestGraphBackfillIsMermaidOfTheBackfillMachine(t *testing.T) {
	out, _, err := run(t, "graph", "--backfill")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flowchart", "(Map)", "ItemProcessor"} {
		if !strings.Contains(out, want) {
			t.Errorf("graph --backfill lacks %q:\n%s", want, out)
		}
	}
	migrate, _, _ := run(t, "graph")
	if migrate == out {
		t.Error("graph --backfill draws the migrate machine")
	}
}

// TestValidateGivesOneVerdictPerFile: an unreadable file or one without a
// validator is a verdict, not the end of the check.
func TestValidateGivesOneVerdictPerFile(t *testing.T) {
	dir := t.TempDir()
	junk := dir + "/junk.txt"
	if err := os.WriteFile(junk, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := sampleFile(t, "dem_utm33.tif")
	out, _, err := run(t, "validate", dir+"/missing.tif", junk, good)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 file(s) invalid") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	for _, want := range []string{"missing.tif: INVALID", "junk.txt: INVALID", "dem_utm33.tif: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
