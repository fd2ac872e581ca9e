//go:build integration

package sfn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Why the project's executor calls the bootstraps over HTTP (rather than
// the handlers in-process): both engines then drive the very same
// processes, environment and servers, so any difference in a terminal
// state, an output or a queue message is the engines' and nothing else's.

const (
	srcBucket  = "sfn-src"
	destBucket = "sfn-dest"
	table      = "sfn-jobs"
)

// faultProxy forwards to versitygw and answers 503 SlowDown to the next
// failPuts object PUTs (Convert's staging upload is the first PUT of an
// execution), so transient failures are deterministic.
type faultProxy struct {
	failPuts atomic.Int64
	failed   atomic.Int64
	proxy    *httputil.ReverseProxy
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isObjectPut := r.Method == http.MethodPut && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 && r.Header.Get("X-Amz-Copy-Source") == ""
	if isObjectPut && p.failPuts.Load() > 0 {
		p.failPuts.Add(-1)
		p.failed.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>CROSSCHECK</RequestId><HostId>crosscheck</HostId></Error>`)
		return
	}
	p.proxy.ServeHTTP(w, r) // Host is kept: the SigV4 signature covers it
}

// engineRun is what one engine did with one execution.
type engineRun struct {
	Status   string             `json:"status"`
	Output   json.RawMessage    `json:"output"`
	Error    string             `json:"error"`
	Cause    string             `json:"cause"`
	Calls    []call             `json:"calls"`
	Messages []message          `json:"messages"`
	Retries  map[string]float64 `json:"retries"`
}

type call struct {
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload"`
}

type message struct {
	State    string `json:"state"`
	QueueURL string `json:"queueUrl"`
	Body     string `json:"body"`
}

type harness struct {
	srv      *lambdatest.Servers
	proxy    *faultProxy
	urls     map[string]string // function name (as substituted) → rie URL
	node     string
	def      []byte
	sfnDir   string
	repoRoot string
	// lastRuns are runScenarios' runs, both engines', in order.
	lastRuns []engineRun
}

// newHarness starts the four bootstraps with the servers' environment
// plus extraEnv.
func newHarness(t *testing.T, extraEnv map[string]string) *harness {
	t.Helper()
	root, node, sfnDir := secondEngine(t)
	rie := lambdatest.RIE(t)
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, srcBucket)
	srv.CreateBucket(t, destBucket)
	srv.CreateTable(t, table)

	target, err := url.Parse(srv.S3)
	if err != nil {
		t.Fatal(err)
	}
	fp := &faultProxy{proxy: httputil.NewSingleHostReverseProxy(target)}
	ps := &http.Server{Handler: fp}
	ln := listen(t)
	go func() { _ = ps.Serve(ln) }()
	t.Cleanup(func() { _ = ps.Close() })

	env := srv.Env(destBucket, table)
	env["AWS_ENDPOINT_URL_S3"] = "http://" + ln.Addr().String()
	env["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "client" // versitygw ignores copy preconditions
	env["GEOMIGRATE_AWS_MAX_ATTEMPTS"] = "1"         // one 503 = one failed task attempt
	env["GEOMIGRATE_WORK_DIR"] = t.TempDir()
	for k, v := range extraEnv {
		env[k] = v
	}
	h := &harness{srv: srv, proxy: fp, urls: map[string]string{}, node: node, sfnDir: sfnDir, repoRoot: root}
	names := map[string]string{
		"hashcheck": localrun.HashCheckFunction, "convert": localrun.ConvertFunction,
		"promote": localrun.PromoteFunction, "classify": localrun.ClassifyFunction,
	}
	for _, name := range lambdatest.Functions {
		f := lambdatest.Start(t, rie, name, lambdatest.NativeBootstrap(t, name), env)
		h.urls[names[name]] = f.URL
	}
	h.def, err = localrun.MigrateDefinition()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// reset empties the destination bucket and the job table, so that each
// engine starts every scenario from the same state.
func (h *harness) reset(t *testing.T) {
	t.Helper()
	h.srv.EmptyBucket(t, destBucket)
	ctx := context.Background()
	c := h.srv.DynamoDBClient(t)
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: ptr(table), ConsistentRead: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: ptr(table), Key: map[string]types.AttributeValue{"pk": it["pk"]}}); err != nil {
			t.Fatal(err)
		}
	}
}

// runGo runs the execution on the project's executor, its lambdas posting
// to the same rie endpoints (a function error becomes asl.TaskError with
// the errorType as Error and the error document as Cause, as Step
// Functions reports it), with zero back-off (FULL jitter drawn as 0).
func (h *harness) runGo(t *testing.T, name string, input []byte) engineRun {
	t.Helper()
	var (
		mu  sync.Mutex
		run engineRun
	)
	forward := func(state, fn string) asl.LambdaFunc {
		return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			run.Calls = append(run.Calls, call{State: state, Payload: append(json.RawMessage(nil), payload...)})
			mu.Unlock()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.urls[fn]+lambdatest.InvokePath, bytes.NewReader(payload))
			if err != nil {
				return nil, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, asl.TaskError{Name: "Lambda.ServiceException", Cause: err.Error()}
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			if _, err := body.ReadFrom(resp.Body); err != nil {
				return nil, err
			}
			if resp.StatusCode != http.StatusOK {
				return nil, asl.TaskError{Name: "Lambda.Unknown", Cause: body.String()}
			}
			if et, _ := lambdatest.FunctionError(body.Bytes()); et != "" {
				return nil, asl.TaskError{Name: et, Cause: body.String()}
			}
			return body.Bytes(), nil
		}
	}
	rec := &recorder{}
	ex, err := localrun.NewExecutor(localrun.Handlers{}, localrun.Queues{Remediation: rec.sender(localrun.RemediationQueueURL), DeadLetter: rec.sender(localrun.DeadLetterQueueURL)},
		// These replace the in-process handlers NewExecutor binds (later
		// options win; the zero Handlers are never called).
		asl.WithLambda(localrun.HashCheckFunction, forward("HashCheck", localrun.HashCheckFunction)),
		asl.WithLambda(localrun.ConvertFunction, forward("Convert", localrun.ConvertFunction)),
		asl.WithLambda(localrun.PromoteFunction, forward("Promote", localrun.PromoteFunction)),
		asl.WithLambda(localrun.ClassifyFunction, forward("Classify", localrun.ClassifyFunction)),
		asl.WithRand(func() float64 { return 0 }),
	)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ex.Run(context.Background(), name, input)
	if err != nil {
		t.Fatal(err)
	}
	run.Status, run.Output, run.Error, run.Cause = res.Status, res.Output, res.Error, res.Cause
	if res.Status != asl.StatusSucceeded {
		run.Output = nil
	}
	run.Retries = map[string]float64{}
	for _, ev := range res.History {
		if ev.Type == asl.EventRetryScheduled {
			run.Retries[ev.State]++
		}
	}
	run.Messages = rec.messages
	// The executor names the state in its history; the queue recorder
	// knows only the URL. Map URL → sending state as the definition does.
	for i := range run.Messages {
		switch run.Messages[i].QueueURL {
		case localrun.RemediationQueueURL:
			run.Messages[i].State = "SendToRemediation"
		case localrun.DeadLetterQueueURL:
			run.Messages[i].State = "SendToDeadLetter"
		}
	}
	return run
}

type recorder struct {
	mu       sync.Mutex
	messages []message
}

type senderFunc func(ctx context.Context, body string) (string, error)

func (f senderFunc) Send(ctx context.Context, body string) (string, error) { return f(ctx, body) }

func (r *recorder) sender(queueURL string) senderFunc {
	return func(_ context.Context, body string) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.messages = append(r.messages, message{QueueURL: queueURL, Body: body})
		return fmt.Sprintf("msg-%d", len(r.messages)), nil
	}
}

// runNode runs the execution on aws-local-stepfunctions through run.mjs.
func (h *harness) runNode(t *testing.T, name string, input []byte) engineRun {
	t.Helper()
	run := runNodeScript[engineRun](t, h.node, h.sfnDir, "run.mjs", map[string]any{
		"definition":      string(h.def),
		"input":           json.RawMessage(input),
		"executionName":   name,
		"executionArn":    "arn:aws:states:local:000000000000:execution:StateMachine:" + name,
		"lambdas":         h.urls,
		"retryIntervalMs": 0,
	}, 3*time.Minute)
	if run.Retries == nil {
		run.Retries = map[string]float64{}
	}
	return run
}

// timesRE matches the timestamps each engine takes from its own clock: a
// routed job's failed_at and the execution's start time ($$.Execution.StartTime).
var timesRE = regexp.MustCompile(`"(failed_at|started)":"[^"]*"`)

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	b, _ := json.Marshal(v) // sorted keys
	return timesRE.ReplaceAllString(string(b), `"$1":"…"`)
}

func (h *harness) upload(t *testing.T, key, file string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.repoRoot, "events", "testdata", "sources", file))
	if err != nil {
		t.Fatal(err)
	}
	h.srv.PutObject(t, srcBucket, key, b)
}

// TestEnginesAgree runs four scenarios on both engines and requires the
// same terminal state, output, Lambda payloads, queue messages and retries.
func TestEnginesAgree(t *testing.T) {
	// These scenarios pin retries and routing without the circuit breaker:
	// with it, a store failing every call opens the breaker and the job
	// waits (TestEnginesAgreeOnTheBreakerWait) instead of reaching the DLQ.
	h := newHarness(t, map[string]string{"GEOMIGRATE_BREAKER_THRESHOLD": "0"})
	h.upload(t, "ok/elevation.asc", "elevation.asc")
	h.upload(t, "ok/elevation.prj", "elevation.prj")
	h.upload(t, "retry/elevation.asc", "elevation.asc")
	h.upload(t, "retry/elevation.prj", "elevation.prj")
	h.upload(t, "exhausted/elevation.asc", "elevation.asc")
	h.upload(t, "exhausted/elevation.prj", "elevation.prj")
	h.upload(t, "nocrs/elevation.asc", "elevation.asc") // no .prj: MissingCRS

	h.runScenarios(t, []scenario{
		{"success", "ok/elevation.asc", 0, asl.StatusSucceeded, "", map[string]float64{}},
		{"transient-then-success", "retry/elevation.asc", 2, asl.StatusSucceeded, "", map[string]float64{"Convert": 2}},
		{"data-error-remediation", "nocrs/elevation.asc", 0, asl.StatusFailed, statemachine.ErrorRoutedRemediation, map[string]float64{}},
		{"transient-exhausted-dlq", "exhausted/elevation.asc", 1000, asl.StatusFailed, statemachine.ErrorRoutedDeadLetter, map[string]float64{"Convert": 4}},
	})
}

// TestEnginesAgreeOnTheBreakerWait: with the circuit breaker on (5
// failures, 1 s cooldown) six failed PUTs open it during Convert's fifth
// attempt; the job then waits in WaitForBreaker (no retry spent, no queue
// message), probes once more (the sixth 503 opens it again), waits again
// and completes. Both engines must walk the same path.
func TestEnginesAgreeOnTheBreakerWait(t *testing.T) {
	h := newHarness(t, map[string]string{"GEOMIGRATE_BREAKER_THRESHOLD": "5", "GEOMIGRATE_BREAKER_COOLDOWN_SECONDS": "1"})
	h.upload(t, "outage/elevation.asc", "elevation.asc")
	h.upload(t, "outage/elevation.prj", "elevation.prj")
	h.runScenarios(t, []scenario{
		{"breaker-wait-then-success", "outage/elevation.asc", 6, asl.StatusSucceeded, "", map[string]float64{"Convert": 4}},
	})
	for _, r := range h.lastRuns {
		hashChecks := 0
		for _, c := range r.Calls {
			if c.State == "HashCheck" {
				hashChecks++
			}
		}
		if hashChecks != 3 {
			t.Errorf("HashCheck ran %d times, want 3 (twice more after a WaitForBreaker)", hashChecks)
		}
	}
}

type scenario struct {
	name     string
	key      string
	failPuts int64
	status   string
	error    string
	retries  map[string]float64
}

// runScenarios runs each scenario on both engines and requires the same
// terminal state, output, Lambda payloads, queue messages and retries.
func (h *harness) runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	h.lastRuns = nil
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			input := []byte(fmt.Sprintf(`{"bucket":%q,"key":%q,"dataset_id":"crosscheck"}`, srcBucket, sc.key))
			runs := map[string]engineRun{}
			for _, engine := range []string{"asl", "aws-local-stepfunctions"} {
				h.reset(t)
				h.proxy.failPuts.Store(sc.failPuts)
				h.proxy.failed.Store(0)
				start := time.Now()
				var r engineRun
				if engine == "asl" {
					r = h.runGo(t, "crosscheck-"+sc.name, input)
				} else {
					r = h.runNode(t, "crosscheck-"+sc.name, input)
				}
				h.proxy.failPuts.Store(0)
				t.Logf("%s: %s %s in %v, %d lambda calls, %d 503s, retries %v", engine, r.Status, r.Error, time.Since(start).Round(time.Millisecond), len(r.Calls), h.proxy.failed.Load(), r.Retries)
				if r.Status != sc.status || r.Error != sc.error {
					t.Errorf("%s: %s %s (%s), want %s %s", engine, r.Status, r.Error, r.Cause, sc.status, sc.error)
				}
				if !reflect.DeepEqual(r.Retries, sc.retries) {
					t.Errorf("%s: retries %v, want %v", engine, r.Retries, sc.retries)
				}
				runs[engine] = r
				h.lastRuns = append(h.lastRuns, r)
			}
			a, b := runs["asl"], runs["aws-local-stepfunctions"]
			if a.Status != b.Status || a.Error != b.Error || a.Cause != b.Cause {
				t.Errorf("terminal state differs: asl %s %s %q, aws-local-stepfunctions %s %s %q", a.Status, a.Error, a.Cause, b.Status, b.Error, b.Cause)
			}
			if ca, cb := canonical(t, a.Output), canonical(t, b.Output); ca != cb {
				t.Errorf("output differs:\n asl %s\n als %s", ca, cb)
			}
			if len(a.Calls) != len(b.Calls) {
				t.Errorf("lambda calls: asl %d, aws-local-stepfunctions %d", len(a.Calls), len(b.Calls))
			} else {
				for i := range a.Calls {
					if a.Calls[i].State != b.Calls[i].State || canonical(t, a.Calls[i].Payload) != canonical(t, b.Calls[i].Payload) {
						t.Errorf("call %d differs:\n asl %s %s\n als %s %s", i, a.Calls[i].State, a.Calls[i].Payload, b.Calls[i].State, b.Calls[i].Payload)
					}
				}
			}
			if len(a.Messages) != len(b.Messages) {
				t.Errorf("queue messages: asl %v, aws-local-stepfunctions %v", a.Messages, b.Messages)
			} else {
				for i := range a.Messages {
					if a.Messages[i].QueueURL != b.Messages[i].QueueURL || a.Messages[i].State != b.Messages[i].State ||
						canonical(t, []byte(a.Messages[i].Body)) != canonical(t, []byte(b.Messages[i].Body)) {
						t.Errorf("message %d differs:\n asl %+v\n als %+v", i, a.Messages[i], b.Messages[i])
					}
				}
			}
			if sc.status == asl.StatusFailed && len(a.Messages) != 1 {
				t.Errorf("a routed failure sends exactly one message, got %d", len(a.Messages))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
