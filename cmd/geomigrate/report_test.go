package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// sampleRun migrates the generated samples (plus a README.txt, ignored)
// twice into a temporary destination and returns the paths of the two run
// reports (the second run skips every file) and the destination.
func sampleRun(t *testing.T) (first, second, dest string) {
	t.Helper()
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(samples, "README.txt"), []byte("not geospatial\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, second = filepath.Join(dir, "run1.json"), filepath.Join(dir, "run2.json")
	for _, report := range []string{first, second} {
		if out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--report", report, "--progress", "plain"); err != nil {
			t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
		}
	}
	return first, second, dest
}

// reportSchema compiles docs/report-schema.json, formats asserted.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile("../../docs/report-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunReportsFollowTheSchema: reports of real runs over the samples
// (completed, remediation with hints, warnings, ignored, then all skipped,
// and a backfill)
// are valid against docs/report-schema.json, and reports broken in the
// ways a reader would trip over are not.
func TestRunReportsFollowTheSchema(t *testing.T) {
	sch := reportSchema(t)
	first, second, _ := sampleRun(t)
	// A backfill writes the same report.
	backfill := filepath.Join(t.TempDir(), "backfill.json")
	samples := filepath.Join(filepath.Dir(first), "samples")
	if out, stderr, err := run(t, "backfill", samples, "--dest", filepath.Join(t.TempDir(), "out"), "--prefix", "dem_", "--report", backfill); err != nil {
		t.Fatalf("backfill: %v\n%s\n%s", err, out, stderr)
	}
	seen := map[string]bool{}
	for _, path := range []string{first, second, backfill} {
		doc := readJSON(t, path)
		if err := sch.Validate(doc); err != nil {
			t.Fatalf("%s is not valid against the schema:\n%v", filepath.Base(path), err)
		}
		for _, f := range doc.(map[string]any)["files"].([]any) {
			o := f.(map[string]any)
			seen[o["status"].(string)] = true
			if o["status"] == "remediation" && o["hint"] == nil {
				t.Errorf("%s: remediation without a hint", o["key"])
			}
			if o["warnings"] != nil {
				seen["warnings"] = true
			}
		}
	}
	for _, want := range []string{"completed", "remediation", "ignored", "skipped", "warnings"} {
		if !seen[want] {
			t.Errorf("the sample runs have no %q file: the schema was not exercised on it", want)
		}
	}

	// Negative cases, each a copy of the first report with one defect.
	tests := []struct {
		name  string
		spoil func(r map[string]any)
		want  string // in the validation error
	}{
		{"no totals", func(r map[string]any) { delete(r, "totals") }, "totals"},
		{"future schema version", func(r map[string]any) { r["schema_version"] = 2 }, "schema_version"},
		{"unknown status", func(r map[string]any) { file(r, "completed")["status"] = "done" }, "status"},
		{"routed file without a hint", func(r map[string]any) { delete(file(r, "remediation"), "hint") }, "hint"},
		{"unknown tier", func(r map[string]any) { file(r, "remediation")["tier"] = "data" }, "tier"},
		{"negative count", func(r map[string]any) { r["totals"].(map[string]any)["completed"] = -1 }, "completed"},
		{"bad timestamp", func(r map[string]any) { r["started"] = "yesterday" }, "started"},
		{"undocumented field", func(r map[string]any) { file(r, "completed")["thumbnail"] = "x.png" }, "thumbnail"},
		{"warnings not a list", func(r map[string]any) { file(r, "completed")["warnings"] = "promoted to multi" }, "warnings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := readJSON(t, first).(map[string]any)
			tt.spoil(doc)
			err := sch.Validate(any(doc))
			if err == nil {
				t.Fatal("valid against the schema")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not mention %q:\n%v", tt.want, err)
			}
		})
	}
}

// file is the first file of report r with the given status.
func file(r map[string]any, status string) map[string]any {
	for _, f := range r["files"].([]any) {
		if o := f.(map[string]any); o["status"] == status {
			return o
		}
	}
	panic("no " + status + " file in the report")
}

// TestReportSchemaIsJSON keeps the schema a plain JSON document (other
// tools read it too).
func TestReportSchemaIsJSON(t *testing.T) {
	b, err := os.ReadFile("../../docs/report-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want JSON Schema 2020-12", v["$schema"])
	}
}
