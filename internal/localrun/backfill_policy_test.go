package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/policy"
)

// concurrencyProbe is a child migrate execution that counts how many run
// at once. Each waits until want are running, or all total items have
// started, or a second has passed, so a Map that runs fewer at once than
// want shows a lower peak, and one that runs more shows a higher one,
// whatever the timing.
type concurrencyProbe struct {
	want, total      int
	mu               sync.Mutex
	cond             *sync.Cond
	running, started int
	peak             int
}

func newProbe(want, total int) *concurrencyProbe {
	p := &concurrencyProbe{want: want, total: total}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *concurrencyProbe) child(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	p.running++
	p.started++
	p.peak = max(p.peak, p.running)
	p.cond.Broadcast()
	deadline := time.Now().Add(time.Second)
	for p.running < p.want && p.started < p.total && time.Now().Before(deadline) {
		// Wake up now and then to see the deadline.
		go func() { time.Sleep(20 * time.Millisecond); p.cond.Broadcast() }()
		p.cond.Wait()
	}
	p.running--
	p.mu.Unlock()
	var in struct{ Key string }
	_ = json.Unmarshal(params, &in)
	if strings.HasPrefix(in.Key, "in/bad") {
		return nil, asl.TaskError{Name: "DataError", Cause: "bad item"}
	}
	return json.RawMessage(`{}`), nil
}

// childMigrate is a stand-in migrate state machine: one task, the probe.
func childMigrate(t *testing.T, p *concurrencyProbe) *asl.Executor {
	t.Helper()
	sm, err := asl.Parse([]byte(`{"StartAt":"Probe","States":{"Probe":{"Type":"Task","Resource":"arn:aws:states:::test:probe","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return asl.NewExecutor(sm, asl.WithResource("arn:aws:states:::test:probe", p.child))
}

// eightItems is a source bucket "src" of eight objects under in/, one of
// which (in/bad.tif) the probe fails, and a results bucket "ops".
func eightItems(t *testing.T) *dirstore.Store {
	t.Helper()
	src := t.TempDir()
	for i := range 8 {
		name := fmt.Sprintf("ok%d.tif", i)
		if i == 7 {
			name = "bad.tif" // one item of eight fails: 12.5 %
		}
		if err := os.MkdirAll(filepath.Join(src, "in"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "in", name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("ops", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestBackfillReadsThePolicyDocument runs backfill.asl.json in the local
// executor with the policy read stood in for by a file: the Map runs with
// the input's max_concurrency and tolerated_failure_percentage, else the
// document's, else 100 and 100, and a missing or unusable document never
// fails the backfill; the output says what was read.
func TestBackfillReadsThePolicyDocument(t *testing.T) {
	store := eightItems(t)
	dir := t.TempDir()
	file := func(content string) policy.Fetcher {
		p := filepath.Join(dir, fmt.Sprintf("policy-%d.json", time.Now().UnixNano()))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return policy.File{Path: p}
	}
	for _, tc := range []struct {
		name   string
		doc    policy.Fetcher
		input  string
		peak   int // child executions at once: the Map's MaxConcurrency (8 items)
		status string
		err    string // the error of a failed backfill
		// in the output: the values the Map ran with, and what the policy read left
		maxConc, tolerated float64
		policyHas          string
	}{
		{"document's concurrency", file(`{"version": 1, "backfill": {"max_concurrency": 3}}`), `{"prefix":"in/"}`,
			3, "SUCCEEDED", "", 3, 100, `"document":{"backfill":{"max_concurrency":3}`},
		{"input wins over the document", file(`{"version": 1, "backfill": {"max_concurrency": 3}}`), `{"prefix":"in/","max_concurrency":2}`,
			2, "SUCCEEDED", "", 2, 100, `"max_concurrency":3`},
		{"document's tolerated percentage stops the map", file(`{"version": 1, "backfill": {"max_concurrency": 4, "tolerated_failure_percentage": 10}}`), `{"prefix":"in/"}`,
			4, "FAILED", "States.ExceedToleratedFailureThreshold", 4, 10, ""},
		{"input's tolerated percentage wins", file(`{"version": 1, "backfill": {"max_concurrency": 4, "tolerated_failure_percentage": 10}}`), `{"prefix":"in/","tolerated_failure_percentage":20}`,
			4, "SUCCEEDED", "", 4, 20, ""},
		{"document with a trailing newline", file("{\"version\": 1, \"backfill\": {\"max_concurrency\": 5}}\n"), `{"prefix":"in/"}`,
			5, "SUCCEEDED", "", 5, 100, `"max_concurrency":5`},
		{"no parameter: defaults", nil, `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"Error":"Ssm.ParameterNotFoundException"`},
		{"file gone: defaults", policy.File{Path: filepath.Join(dir, "absent.json")}, `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"Error":"Ssm.ParameterNotFoundException"`},
		{"not JSON: defaults", file(`max_concurrency = 3`), `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"problem":"the parameter's value is not a JSON object`},
		// The one document that fails the backfill, at its start before any
		// item runs: braces around text that is not JSON. States.StringToJson
		// raises States.Runtime, which no Catch takes; only `geomigrate
		// policy put`, which validates, keeps it out of the parameter.
		{"braces around text that is not JSON: fails at the start", file(`{max_concurrency: 3}`), `{"prefix":"in/"}`,
			0, "FAILED", "States.Runtime", 0, 0, ""},
		{"no backfill member: defaults", file(`{"version": 1, "alarms": {"transient_rate": 0.2}}`), `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"transient_rate":0.2`},
		{"out of the schema's bounds: defaults", file(`{"version": 1, "backfill": {"max_concurrency": 0, "tolerated_failure_percentage": 101}}`), `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"max_concurrency":0`},
		{"not numbers: defaults", file(`{"version": 1, "backfill": {"max_concurrency": "3", "tolerated_failure_percentage": null}}`), `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"max_concurrency":"3"`},
		{"backfill not an object: defaults", file(`{"version": 1, "backfill": 3}`), `{"prefix":"in/"}`,
			8, "SUCCEEDED", "", 100, 100, `"backfill":3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := newProbe(tc.peak, 8)
			bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: childMigrate(t, probe), Policy: tc.doc})
			if err != nil {
				t.Fatal(err)
			}
			res, outs, err := bf.Run(context.Background(), "policy", json.RawMessage(tc.input))
			t.Cleanup(func() { outs.Close() })
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("backfill %s (%s: %s), want %s", res.Status, res.Error, res.Cause, tc.status)
			}
			if probe.peak != tc.peak {
				t.Errorf("%d child executions at once, want %d", probe.peak, tc.peak)
			}
			if tc.status != "SUCCEEDED" {
				if res.Error != tc.err {
					t.Errorf("error %s, want %s", res.Error, tc.err)
				}
				return
			}
			checkBackfillOutput(t, res.Output, tc.maxConc, tc.tolerated, tc.policyHas)
		})
	}
}

// checkBackfillOutput checks a backfill's output: the Map settings it ran
// with and what the policy read left in policy.
func checkBackfillOutput(t *testing.T, output json.RawMessage, maxConc, tolerated float64, policyHas string) {
	t.Helper()
	var out struct {
		MaxConcurrency float64         `json:"max_concurrency"`
		Tolerated      float64         `json:"tolerated_failure_percentage"`
		Policy         json.RawMessage `json:"policy"`
	}
	if err := json.Unmarshal(output, &out); err != nil {
		t.Fatal(err)
	}
	if out.MaxConcurrency != maxConc || out.Tolerated != tolerated {
		t.Errorf("ran with max_concurrency %v, tolerated_failure_percentage %v; want %v, %v", out.MaxConcurrency, out.Tolerated, maxConc, tolerated)
	}
	if !strings.Contains(string(out.Policy), policyHas) {
		t.Errorf("output's policy %s, want it to hold %s", out.Policy, policyHas)
	}
}
