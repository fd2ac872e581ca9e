//go:build integration

package functions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/events"
	"github.com/geomigrate/geomigrate/functions/lambdatest"
	"github.com/geomigrate/geomigrate/internal/migration"
)

const (
	srcBucket  = "geo-archive-src" // the buckets the samples in events/ name
	destBucket = "geo-archive-cog"
)

// bootstrap is the host-arch bootstrap of name (make build-native).
func bootstrap(t testing.TB, name string) string {
	t.Helper()
	return lambdatest.NativeBootstrap(t, name)
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := events.Files.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func samplesOf(kind events.Kind) []string {
	var out []string
	for name, k := range events.Kinds {
		if k == kind {
			out = append(out, name)
		}
	}
	return out
}

// stack is the four functions under rie over fresh buckets and a fresh table.
type stack struct {
	srv   *lambdatest.Servers
	env   map[string]string
	funcs map[string]*lambdatest.Function
}

func newStack(t *testing.T, rie string) *stack {
	t.Helper()
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, srcBucket)
	srv.CreateBucket(t, destBucket)
	table := srv.CreateTable(t, fmt.Sprintf("jobs-rie-%d", time.Now().UnixNano()%1e9))
	for _, f := range []string{"elevation.asc", "elevation.prj"} {
		b, err := os.ReadFile(filepath.Join("..", "events", "testdata", "sources", f))
		if err != nil {
			t.Fatal(err)
		}
		srv.PutObject(t, srcBucket, "dem/"+f, b)
	}
	env := srv.Env(destBucket, table)
	env["GEOMIGRATE_WORK_DIR"] = t.TempDir()
	s := &stack{srv: srv, env: env, funcs: map[string]*lambdatest.Function{}}
	for _, name := range lambdatest.Functions {
		s.funcs[name] = lambdatest.Start(t, rie, name, bootstrap(t, name), env)
	}
	return s
}

func invoke(t *testing.T, f *lambdatest.Function, payload []byte) lambdatest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := f.Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("invoke %s: %v\n%s", f.Name, err, f.Output())
	}
	if r.Status != http.StatusOK {
		t.Fatalf("invoke %s: HTTP %d %s\n%s", f.Name, r.Status, r.Body, f.Output())
	}
	return r
}

func decode[T any](t *testing.T, r lambdatest.Response) T {
	t.Helper()
	var v T
	if r.ErrorType != "" {
		t.Fatalf("function error %s: %s", r.ErrorType, r.ErrorMessage)
	}
	dec := json.NewDecoder(strings.NewReader(string(r.Body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response %s is not a %T: %v", r.Body, v, err)
	}
	return v
}

// TestBootstrapsAnswerEverySample posts every function sample in events/ to
// its bootstrap under rie, in pipeline order, and checks each response.
func TestBootstrapsAnswerEverySample(t *testing.T) {
	rie := lambdatest.RIE(t)
	s := newStack(t, rie)

	// hashcheck-input.json: the claim; its job is exactly the one the
	// convert and promote samples carry.
	r := invoke(t, s.funcs["hashcheck"], sample(t, "hashcheck-input.json"))
	hc := decode[migration.HashCheckOutput](t, r)
	if hc.Decision != migration.DecisionConvert {
		t.Fatalf("hashcheck decision %q (%s), want convert", hc.Decision, hc.Reason)
	}
	var convertIn migration.ConvertInput
	if err := json.Unmarshal(sample(t, "convert-input.json"), &convertIn); err != nil {
		t.Fatal(err)
	}
	// The source's Last-Modified is this run's upload time; the sample's is fixed.
	produced := hc.Job
	produced.SourceModified = convertIn.Job.SourceModified
	if a, b := mustJSON(t, produced), mustJSON(t, convertIn.Job); a != b {
		t.Errorf("events/convert-input.json's job differs from what HashCheck produced (go test ./events -update regenerates it):\n got %s\nfile %s", a, b)
	}

	// hashcheck-missing-source.json: a data error, SourceNotFound.
	r = invoke(t, s.funcs["hashcheck"], sample(t, "hashcheck-missing-source.json"))
	if r.ErrorType != "DataError" || !strings.HasPrefix(r.ErrorMessage, "SourceNotFound: ") {
		t.Errorf("missing source: errorType %q message %q, want DataError SourceNotFound", r.ErrorType, r.ErrorMessage)
	}

	// convert-input.json: the real GDAL conversion, staged.
	r = invoke(t, s.funcs["convert"], sample(t, "convert-input.json"))
	cv := decode[migration.ConvertOutput](t, r)
	var promoteIn migration.PromoteInput
	if err := json.Unmarshal(sample(t, "promote-input.json"), &promoteIn); err != nil {
		t.Fatal(err)
	}
	if len(cv.Outputs) != 1 || cv.Outputs[0].StagingKey != promoteIn.Converted.Outputs[0].StagingKey || cv.Outputs[0].Format != "COG" || cv.Outputs[0].Size == 0 {
		t.Fatalf("convert outputs %+v, want one COG staged at %s", cv.Outputs, promoteIn.Converted.Outputs[0].StagingKey)
	}

	// promote-input.json: staging → final key with metadata.
	r = invoke(t, s.funcs["promote"], sample(t, "promote-input.json"))
	pr := decode[migration.PromoteOutput](t, r)
	if len(pr.Outputs) != 1 || pr.Outputs[0].DestKey != "dem/elevation.tif" {
		t.Fatalf("promote outputs %+v", pr.Outputs)
	}
	head, err := s.srv.S3Client(t).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: ptr(destBucket), Key: ptr("dem/elevation.tif")})
	if err != nil {
		t.Fatalf("final object: %v", err)
	}
	if head.Metadata["src-sha256"] != convertIn.Job.SourceSHA256 || head.Metadata["recipe"] != convertIn.Job.RecipeHash {
		t.Errorf("final object metadata %v", head.Metadata)
	}
	// Promoting twice is harmless.
	r = invoke(t, s.funcs["promote"], sample(t, "promote-input.json"))
	decode[migration.PromoteOutput](t, r)

	// classify-*.json: every Step Functions error payload gets a tier and route.
	wantRoute := map[string][2]string{
		"classify-data-error.json":           {"data_specific", migration.RouteRemediation},
		"classify-transient-exhausted.json":  {"transient", migration.RouteDeadLetter},
		"classify-lambda-service-error.json": {"transient", migration.RouteDeadLetter},
	}
	for _, name := range samplesOf(events.KindClassify) {
		w, ok := wantRoute[name]
		if !ok {
			t.Errorf("%s: no expectation", name)
			continue
		}
		r = invoke(t, s.funcs["classify"], sample(t, name))
		out := decode[migration.ClassifyOutput](t, r)
		if out.Tier != w[0] || out.Route != w[1] || out.Message.JobID == "" || out.Message.Version != 1 {
			t.Errorf("%s: tier %s route %s message %+v, want %v", name, out.Tier, out.Route, out.Message, w)
		}
	}

	// executionfailed-timed-out.json names the execution that just
	// completed the job above: the function finds the job through the
	// status index (records updated since the execution started) and,
	// the job being COMPLETED, leaves it alone and sends nothing (so no
	// SQS endpoint is needed here).
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	env["GEOMIGRATE_DEAD_LETTER_QUEUE_URL"] = "http://127.0.0.1:9/000000000000/unused-dlq"
	env["GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN"] = "arn:aws:states:eu-west-1:123456789012:stateMachine:geomigrate-migrate"
	ef := lambdatest.Start(t, rie, "executionfailed", bootstrap(t, "executionfailed"), env)
	r = invoke(t, ef, sample(t, "executionfailed-timed-out.json"))
	if out := decode[migration.ExecutionFailedOutput](t, r); out.Outcome != migration.EndedLeftAlone || out.JobID != convertIn.Job.ID {
		t.Errorf("executionfailed on a completed job: %+v, want %s of %s", out, migration.EndedLeftAlone, convertIn.Job.ID)
	}

	// Every function sample was posted.
	for name, k := range events.Kinds {
		if k == events.KindStateMachine {
			continue
		}
		if _, ok := wantRoute[name]; !ok && !strings.HasPrefix(name, "hashcheck-") && name != "convert-input.json" && name != "promote-input.json" && k != events.KindExecutionFailed {
			t.Errorf("%s was not posted to its function", name)
		}
	}

	// Logs: JSON with execution, state, attempt and key on every handler
	// line; EMF documents beside them.
	for name, f := range s.funcs {
		checkLogs(t, name, f.Output())
	}
}

// checkLogs reads a function's stdout as rie prints it.
func checkLogs(t *testing.T, name, out string) {
	t.Helper()
	handlerLines, emfLines := 0, 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue // rie's own lines, aws-lambda-go's error echo
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("%s: a JSON-looking line is not JSON: %s", name, line)
			continue
		}
		if _, ok := m["_aws"]; ok {
			emfLines++
			continue
		}
		if _, ok := m["errorType"]; ok {
			continue
		}
		handlerLines++
		for _, k := range []string{"timestamp", "level", "message", "execution", "state", "attempt", "key", "requestId"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: log line without %q: %s", name, k, line)
			}
		}
	}
	if handlerLines == 0 {
		t.Errorf("%s wrote no JSON log lines:\n%s", name, out)
	}
	if name == "classify" && emfLines == 0 {
		t.Errorf("classify wrote no EMF lines:\n%s", out)
	}
	t.Logf("%s: %d log lines, %d EMF lines", name, handlerLines, emfLines)
}

// TestTransientErrorUnderRIE: an S3 endpoint answering 503 SlowDown makes
// HashCheck fail with errorType TransientError (the SDK gives up after
// GEOMIGRATE_AWS_MAX_ATTEMPTS=1; the state machine owns the back-off).
func TestTransientErrorUnderRIE(t *testing.T) {
	rie := lambdatest.RIE(t)
	srv := lambdatest.RequireServers(t)
	var hits sync.Map
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.Method+" "+r.URL.Path, true)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>TEST</RequestId></Error>`)
	}))
	t.Cleanup(slow.Close)
	env := srv.Env(destBucket, "unused-table")
	env["AWS_ENDPOINT_URL_S3"] = slow.URL
	env["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "server" // no probe against the failing endpoint
	env["GEOMIGRATE_AWS_MAX_ATTEMPTS"] = "1"
	f := lambdatest.Start(t, rie, "hashcheck", bootstrap(t, "hashcheck"), env)
	r := invoke(t, f, sample(t, "hashcheck-input.json"))
	if r.ErrorType != "TransientError" {
		t.Fatalf("errorType %q (%s), want TransientError", r.ErrorType, r.Body)
	}
	if !strings.Contains(r.ErrorMessage, "[attempt 1]") {
		t.Errorf("message %q lacks the attempt marker", r.ErrorMessage)
	}
	if _, ok := hits.Load("HEAD /geo-archive-src/dem/elevation.asc"); !ok {
		t.Errorf("the function did not reach the 503 endpoint")
	}
}

// TestSystemicErrorUnderRIE: a destination bucket that does not exist is
// the deployment's fault: SystemicError (NoSuchBucket), not retried.
func TestSystemicErrorUnderRIE(t *testing.T) {
	rie := lambdatest.RIE(t)
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, srcBucket)
	srv.PutObject(t, srcBucket, "dem/elevation.asc", []byte("ncols 1\n"))
	table := srv.CreateTable(t, fmt.Sprintf("jobs-rie-sys-%d", time.Now().UnixNano()%1e9))
	env := srv.Env("no-such-bucket-geomigrate", table)
	env["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "client"
	f := lambdatest.Start(t, rie, "hashcheck", bootstrap(t, "hashcheck"), env)
	r := invoke(t, f, sample(t, "hashcheck-input.json"))
	if r.ErrorType != "SystemicError" {
		t.Fatalf("errorType %q (%s), want SystemicError", r.ErrorType, r.Body)
	}
}

// BenchmarkColdStart measures the first invoke of a fresh rie + bootstrap
// (process start, Go runtime init, config.LoadLambda and awsapp.New building the clients,
// GDAL registration for convert, the handler) and a warm invoke after it.
// Each iteration starts a new rie. The payload is a cheap one per function:
// classify with the Lambda service error sample, the others with input the
// handler rejects early (so the number is start-up, not work).
func BenchmarkColdStart(b *testing.B) {
	rie := lambdatest.RIE(b)
	srv := lambdatest.RequireServers(b)
	srv.CreateBucket(b, srcBucket)
	srv.CreateBucket(b, destBucket)
	table := srv.CreateTable(b, fmt.Sprintf("jobs-bench-%d", time.Now().UnixNano()%1e9))
	payloads := map[string][]byte{
		"hashcheck": sample(b, "hashcheck-missing-source.json"),
		"convert":   []byte(`{"job":{},"context":{"execution":"bench","state":"Convert"}}`),
		"promote":   []byte(`{"job":{},"converted":{"outputs":[]},"context":{"execution":"bench","state":"Promote"}}`),
		"classify":  sample(b, "classify-lambda-service-error.json"),
	}
	for _, name := range lambdatest.Functions {
		b.Run(name, func(b *testing.B) {
			bin := bootstrap(b, name)
			env := srv.Env(destBucket, table)
			env["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "client"
			var first, total, warm time.Duration
			for b.Loop() {
				f := lambdatest.Start(b, rie, name, bin, env)
				ctx := context.Background()
				r, err := f.Invoke(ctx, payloads[name])
				if err != nil || r.Status != http.StatusOK {
					b.Fatalf("cold invoke: %v %d %s\n%s", err, r.Status, r.Body, f.Output())
				}
				first += r.Duration
				total += time.Since(f.Started)
				r, err = f.Invoke(ctx, payloads[name])
				if err != nil || r.Status != http.StatusOK {
					b.Fatalf("warm invoke: %v", err)
				}
				warm += r.Duration
				f.Stop()
			}
			n := float64(b.N)
			b.ReportMetric(float64(first.Microseconds())/n/1000, "ms-first-invoke")
			b.ReportMetric(float64(total.Microseconds())/n/1000, "ms-rie-start-to-first-response")
			b.ReportMetric(float64(warm.Microseconds())/n/1000, "ms-warm-invoke")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr(s string) *string { return &s }
