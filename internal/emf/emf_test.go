package emf_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
)

var _ migration.Metrics = (*emf.Logger)(nil)

var fixed = time.Date(2026, 11, 30, 9, 15, 2, 123_000_000, time.UTC)

// checkSpec validates one document against the EMF specification's rules:
// the root is a JSON object with an _aws metadata object holding an integer
// millisecond Timestamp and a CloudWatchMetrics array of MetricDirectives;
// each directive has exactly Namespace, Dimensions and Metrics; a dimension
// set holds at most 30 names; each named dimension is a string member of
// the root and each metric a number member (or array of numbers); metric
// definitions have a Name (1-255) and optionally a known Unit.
func checkSpec(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("a document is exactly one line: %q", line)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, line)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("_aws metadata object missing: %s", line)
	}
	for k := range aws {
		if k != "Timestamp" && k != "CloudWatchMetrics" {
			t.Errorf("_aws has an unknown member %q", k)
		}
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		t.Fatalf("_aws.Timestamp must be a number, got %T", aws["Timestamp"])
	}
	if _, err := ts.Int64(); err != nil {
		t.Errorf("_aws.Timestamp must be integer milliseconds: %v", ts)
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		t.Fatalf("_aws.CloudWatchMetrics must be a non-empty array")
	}
	for _, d := range dirs {
		dir, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("MetricDirective must be an object")
		}
		if len(dir) != 3 {
			t.Errorf("MetricDirective must hold exactly Namespace, Dimensions, Metrics: %v", dir)
		}
		if ns, _ := dir["Namespace"].(string); ns == "" || len(ns) > 255 {
			t.Errorf("Namespace %q", ns)
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			t.Fatalf("Dimensions must be an array of dimension sets")
		}
		for _, s := range sets {
			set, ok := s.([]any)
			if !ok || len(set) > emf.MaxDimensions {
				t.Fatalf("dimension set must be an array of at most 30 names: %v", s)
			}
			for _, n := range set {
				name, ok := n.(string)
				if !ok {
					t.Fatalf("dimension name must be a string: %v", n)
				}
				if _, ok := root[name].(string); !ok {
					t.Errorf("dimension %q must be a string member of the root", name)
				}
			}
		}
		ms, ok := dir["Metrics"].([]any)
		if !ok || len(ms) == 0 {
			t.Fatalf("Metrics must be a non-empty array")
		}
		for _, m := range ms {
			md, ok := m.(map[string]any)
			if !ok {
				t.Fatalf("MetricDefinition must be an object")
			}
			name, _ := md["Name"].(string)
			if name == "" || len(name) > 255 {
				t.Errorf("metric Name %q", name)
			}
			if u, has := md["Unit"]; has {
				if us, _ := u.(string); !emf.Units[us] {
					t.Errorf("metric %q: unit %v is not a CloudWatch unit", name, u)
				}
			}
			switch v := root[name].(type) {
			case json.Number:
			case []any:
				for _, x := range v {
					if _, ok := x.(json.Number); !ok {
						t.Errorf("metric %q: array value must hold numbers", name)
					}
				}
			default:
				t.Errorf("metric %q must be a number member of the root, got %T", name, root[name])
			}
		}
	}
	return root
}

func TestDocumentShape(t *testing.T) {
	var buf bytes.Buffer
	l := emf.New(&buf, "geomigrate", emf.WithClock(func() time.Time { return fixed }), emf.WithProperty("function", "geomigrate-convert"))
	l.Count("Errors", 1, "Count", "State", "Convert", "Tier", "transient")
	l.Count("BytesOut", 4096, "Bytes", "State", "Convert")
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	if len(lines) != 3 || len(lines[2]) != 0 {
		t.Fatalf("want two lines, got %q", buf.String())
	}
	root := checkSpec(t, lines[0])
	want := `{"State":"Convert","Tier":"transient","Errors":1,"function":"geomigrate-convert","_aws":{"Timestamp":1796030102123,"CloudWatchMetrics":[{"Namespace":"geomigrate","Dimensions":[["State","Tier"]],"Metrics":[{"Name":"Errors","Unit":"Count"}]}]}}`
	var wantRoot map[string]any
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&wantRoot); err != nil {
		t.Fatal(err)
	}
	if g, w := canon(t, root), canon(t, wantRoot); g != w {
		t.Errorf("document\n got %s\nwant %s", g, w)
	}
	root = checkSpec(t, lines[1])
	if root["BytesOut"].(json.Number).String() != "4096" || root["State"] != "Convert" {
		t.Errorf("second document: %v", root)
	}
}

func canon(t *testing.T, v any) string {
	b, err := json.Marshal(v) // map keys sorted
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNoDimensions(t *testing.T) {
	var buf bytes.Buffer
	emf.New(&buf, "geomigrate").Count("Retries", 1, "Count")
	root := checkSpec(t, buf.Bytes())
	dims := root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if canon(t, dims) != "[[]]" {
		t.Errorf("Dimensions = %s, want [[]] (one empty set: the metric without dimensions)", canon(t, dims))
	}
}

func TestEmptyDimensionValueIsReplaced(t *testing.T) {
	var buf bytes.Buffer
	emf.New(&buf, "geomigrate").Count("Errors", 1, "Count", "State", "", "Tier", "unknown")
	root := checkSpec(t, buf.Bytes())
	if root["State"] != "none" {
		t.Errorf("State = %v, want none (CloudWatch drops empty dimension values)", root["State"])
	}
}

func TestInvalidInputIsRejectedNotWritten(t *testing.T) {
	cases := []struct {
		name string
		call func(l *emf.Logger)
	}{
		{"odd dims", func(l *emf.Logger) { l.Count("Errors", 1, "Count", "State") }},
		{"bad unit", func(l *emf.Logger) { l.Count("Errors", 1, "Things") }},
		{"NaN", func(l *emf.Logger) { l.Count("Errors", math.NaN(), "Count") }},
		{"metric named like a dimension", func(l *emf.Logger) { l.Count("State", 1, "Count", "State", "x") }},
		{"duplicate dimension", func(l *emf.Logger) { l.Count("Errors", 1, "Count", "State", "a", "State", "b") }},
		{"empty name", func(l *emf.Logger) { l.Count("", 1, "Count") }},
		{"too many dimensions", func(l *emf.Logger) {
			var d []string
			for i := range 31 {
				d = append(d, "d"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
			}
			l.Count("Errors", 1, "Count", d...)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			var errs []error
			c.call(emf.New(&buf, "geomigrate", emf.WithErrorHandler(func(err error) { errs = append(errs, err) })))
			if buf.Len() != 0 || len(errs) != 1 {
				t.Errorf("wrote %q, errors %v; want nothing written and one error", buf.String(), errs)
			}
		})
	}
}

func TestConcurrentWritesStayWholeLines(t *testing.T) {
	var buf bytes.Buffer
	l := emf.New(&buf, "geomigrate")
	done := make(chan bool)
	for range 8 {
		go func() {
			for range 50 {
				l.Count("Retries", 1, "Count", "State", "Convert")
			}
			done <- true
		}()
	}
	for range 8 {
		<-done
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, ln := range lines {
		checkSpec(t, []byte(ln+"\n"))
	}
}
