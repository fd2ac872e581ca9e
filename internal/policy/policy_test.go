package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
)

func TestParseValidates(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		// want are substrings of the refusal, all present ("" : accepted).
		want []string
	}{
		{"minimal", `{"version": 1}`, nil},
		{"everything", `{"version": 1,
			"classification": {"rules": [{"error": "DataError", "code": "InvalidGeometry", "tier": "data_specific", "route": "dlq"},
			                             {"error": "Lambda.*", "tier": "transient", "route": "dlq"}, {"error": "*", "tier": "unknown", "route": "dlq"}],
			                   "datasets": {"parcels": [{"error": "SystemicError", "tier": "systemic", "route": "remediation"}]}},
			"alarms": {"data_specific_rate": 0.02, "transient_rate": 0.3},
			"job_deadline_seconds": 1800,
			"backfill": {"max_concurrency": 40, "tolerated_failure_percentage": 5},
			"large_objects": {"bytes": 2147483648, "pixels": 1000000000, "features": 5000000}}`, nil},
		{"not JSON", `{"version": 1,`, []string{"not JSON"}},
		{"empty", ``, []string{"not JSON"}},
		{"no version", `{}`, []string{"(root)", "version"}},
		{"future version", `{"version": 2}`, []string{"/version"}},
		{"unknown member", `{"version": 1, "retries": 3}`, []string{"(root)", "retries"}},
		{"unknown tier", `{"version": 1, "classification": {"rules": [{"error": "DataError", "tier": "fatal", "route": "dlq"}]}}`,
			[]string{"/classification/rules/0/tier", "data_specific"}},
		{"unknown route", `{"version": 1, "classification": {"rules": [{"error": "DataError", "tier": "systemic", "route": "s3"}]}}`,
			[]string{"/classification/rules/0/route"}},
		{"rule without route", `{"version": 1, "classification": {"rules": [{"error": "DataError", "tier": "systemic"}]}}`,
			[]string{"/classification/rules/0", "route"}},
		{"unknown code", `{"version": 1, "classification": {"rules": [{"error": "DataError", "code": "Oops", "tier": "systemic", "route": "dlq"}]}}`,
			[]string{"/classification/rules/0/code"}},
		{"code on another error", `{"version": 1, "classification": {"rules": [{"error": "SystemicError", "code": "MissingCRS", "tier": "systemic", "route": "dlq"}]}}`,
			[]string{"/classification/rules/0/error", "DataError"}},
		{"bad error name", `{"version": 1, "classification": {"rules": [{"error": "Data Error", "tier": "systemic", "route": "dlq"}]}}`,
			[]string{"/classification/rules/0/error"}},
		{"dataset rule bad", `{"version": 1, "classification": {"datasets": {"d": [{"error": "*", "tier": "unknown", "route": "nowhere"}]}}}`,
			[]string{"/classification/datasets/d/0/route"}},
		{"rate above 1", `{"version": 1, "alarms": {"transient_rate": 15}}`, []string{"/alarms/transient_rate"}},
		{"rate zero", `{"version": 1, "alarms": {"data_specific_rate": 0}}`, []string{"/alarms/data_specific_rate"}},
		{"deadline above the state machine's", `{"version": 1, "job_deadline_seconds": 7201}`, []string{"/job_deadline_seconds"}},
		{"deadline fractional", `{"version": 1, "job_deadline_seconds": 90.5}`, []string{"/job_deadline_seconds"}},
		{"concurrency zero", `{"version": 1, "backfill": {"max_concurrency": 0}}`, []string{"/backfill/max_concurrency"}},
		{"percentage above 100", `{"version": 1, "backfill": {"tolerated_failure_percentage": 101}}`, []string{"/backfill/tolerated_failure_percentage"}},
		{"two problems", `{"version": 1, "backfill": {"max_concurrency": -1}, "alarms": {"transient_rate": 2}}`,
			[]string{"/backfill/max_concurrency", "/alarms/transient_rate"}},
		{"too large", `{"version": 1, "classification": {"datasets": {"` + strings.Repeat("x", MaxBytes) + `": []}}}`, []string{"more than"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if d.Version != 1 {
					t.Errorf("version %d", d.Version)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("got %v (document %+v), want an *InvalidError", err, d)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("refusal spans lines: %q", err)
			}
		})
	}
}

func TestParseKeepsDefaultsOfAbsentMembers(t *testing.T) {
	d, err := Parse([]byte(`{"version": 1, "backfill": {"max_concurrency": 7}, "alarms": {"transient_rate": 0.2}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Backfill.MaxConcurrency, want.Alarms.TransientRate = 7, 0.2
	if got, w := d.JSON(), want.JSON(); !bytes.Equal(got, w) {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
	if d.Alarms.DataSpecificRate != 0.05 || d.Backfill.ToleratedFailurePercentage != 100 || d.JobDeadline() != 2*time.Hour {
		t.Errorf("defaults lost: %+v", d)
	}
}

// The default document is valid, and is what the stack stores.
func TestDefaultIsValid(t *testing.T) {
	d, err := Parse(Default().JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.JSON(), Default().JSON()) {
		t.Errorf("round trip changed it: %s", d.JSON())
	}
}

// The schema's code list is fault.Codes: a code added there can be named in
// a rule.
func TestSchemaCodesAreFaultCodes(t *testing.T) {
	for _, c := range fault.Codes {
		doc := fmt.Sprintf(`{"version": 1, "classification": {"rules": [{"error": "DataError", "code": %q, "tier": "systemic", "route": "dlq"}]}}`, c)
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("code %s: %v", c, err)
		}
	}
	var sch struct {
		Defs struct {
			Rule struct {
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"rule"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &sch); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, c := range fault.Codes {
		codes = append(codes, string(c))
	}
	if got := sch.Defs.Rule.Properties.Code.Enum; !slices.Equal(got, codes) {
		t.Errorf("schema codes %v, fault.Codes %v", got, codes)
	}
}

func TestRulesForOrder(t *testing.T) {
	d, err := Parse([]byte(`{"version": 1, "classification": {
		"rules": [{"error": "DataError", "code": "InvalidGeometry", "tier": "data_specific", "route": "dlq"}],
		"datasets": {"parcels": [{"error": "DataError", "tier": "systemic", "route": "dlq"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	route := func(dataset, name string, code fault.Code) string {
		r := migration.Match(append(d.RulesFor(dataset), migration.DefaultRules...), name, code)
		return string(r.Tier) + "/" + r.Route
	}
	tests := []struct {
		dataset, name string
		code          fault.Code
		want          string
	}{
		{"roads", "DataError", fault.InvalidGeometry, "data_specific/dlq"},
		{"roads", "DataError", fault.MissingCRS, "data_specific/remediation"}, // the built-in rule
		{"parcels", "DataError", fault.MissingCRS, "systemic/dlq"},            // the dataset's own first
		{"roads", "TransientError", "", "transient/dlq"},
		{"roads", "Whatever", "", "unknown/dlq"},
	}
	for _, tt := range tests {
		if got := route(tt.dataset, tt.name, tt.code); got != tt.want {
			t.Errorf("%s %s %s: %s, want %s", tt.dataset, tt.name, tt.code, got, tt.want)
		}
	}
}

// fetches is a Fetcher serving a sequence of (document, revision, error).
type fetches struct {
	data  []byte
	rev   string
	err   error
	calls int
}

func (f *fetches) Fetch(context.Context) ([]byte, string, error) {
	f.calls++
	return f.data, f.rev, f.err
}

func TestSourceKeepsTheLastGoodDocument(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	f := &fetches{data: []byte(`{"version": 1, "backfill": {"max_concurrency": 10}}`), rev: "1"}
	s := NewSource(f, 30*time.Second, nil, WithClock(func() time.Time { return now }))

	if got := s.Current(ctx).Backfill.MaxConcurrency; got != 10 {
		t.Fatalf("first read: %d", got)
	}
	// Within the TTL the store is not asked.
	f.data, f.rev = []byte(`{"version": 1, "backfill": {"max_concurrency": 20}}`), "2"
	now = now.Add(10 * time.Second)
	if got := s.Current(ctx).Backfill.MaxConcurrency; got != 10 || f.calls != 1 {
		t.Fatalf("within the TTL: %d after %d fetches", got, f.calls)
	}
	now = now.Add(30 * time.Second)
	if got := s.Current(ctx).Backfill.MaxConcurrency; got != 20 {
		t.Fatalf("after the TTL: %d", got)
	}
	// A refused document leaves the last good one in force.
	f.data, f.rev = []byte(`{"version": 1, "backfill": {"max_concurrency": 0}}`), "3"
	now = now.Add(time.Minute)
	if got := s.Current(ctx).Backfill.MaxConcurrency; got != 20 {
		t.Fatalf("after a bad document: %d", got)
	}
	var inv *InvalidError
	if err := s.Refused(); !errors.As(err, &inv) || !strings.Contains(err.Error(), "revision 3") {
		t.Errorf("Refused: %v", err)
	}
	if _, err := s.Load(ctx); !errors.As(err, &inv) {
		t.Errorf("Load of the bad document: %v", err)
	}
	// So does a store that cannot be read.
	f.err = errors.New("throttled")
	now = now.Add(time.Minute)
	if got := s.Current(ctx).Backfill.MaxConcurrency; got != 20 {
		t.Fatalf("store down: %d", got)
	}
	// A good one again takes over.
	f.err, f.data, f.rev = nil, []byte(`{"version": 1}`), "4"
	now = now.Add(time.Minute)
	if got := s.Current(ctx).Backfill.MaxConcurrency; got != DefaultMaxConcurrency || s.Refused() != nil {
		t.Fatalf("fixed: %d, refused %v", got, s.Refused())
	}
}

func TestSourceServesTheDefaultBeforeAGoodDocument(t *testing.T) {
	f := &fetches{data: []byte(`{"version": 1, "alarms": {"transient_rate": 9}}`), rev: "1"}
	s := NewSource(f, 0, nil)
	if _, err := s.Load(context.Background()); err == nil {
		t.Fatal("a bad document loaded")
	}
	if got := s.Current(context.Background()); !bytes.Equal(got.JSON(), Default().JSON()) {
		t.Errorf("in force: %s", got.JSON())
	}
}

func TestFileIsReadAgainOnceChanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "policy.json")
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"version": 1, "classification": {"rules": [{"error": "DataError", "tier": "data_specific", "route": "dlq"}]}}`)
	s := NewSource(File{Path: path}, 0, nil)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	route := func() string {
		return migration.Match(append(s.RulesFor(ctx, "d"), migration.DefaultRules...), "DataError", fault.MissingCRS).Route
	}
	if got := route(); got != migration.RouteDeadLetter {
		t.Fatalf("first document: %s", got)
	}
	// Written at once after the first: the content decides, not the time.
	write(`{"version": 1, "classification": {"rules": [{"error": "Nothing", "tier": "data_specific", "route": "dlq"}]}}`)
	if got := route(); got != migration.RouteRemediation {
		t.Fatalf("edited document: %s", got)
	}
	write(`{"version": 1, "classification": {"rules": [{"error": "DataError", "tier": "bogus", "route": "dlq"}]}}`)
	if got := route(); got != migration.RouteRemediation {
		t.Fatalf("after a bad edit: %s", got)
	}
	if err := s.Refused(); err == nil || !strings.Contains(err.Error(), "/classification/rules/0/tier") {
		t.Errorf("Refused: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := route(); got != migration.RouteRemediation {
		t.Fatalf("file removed: %s", got)
	}
}
