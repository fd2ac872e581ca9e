package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
)

// fakeSFN speaks the Step Functions JSON protocol (X-Amz-Target
// AWSStepFunctions.*) for StartExecution and DescribeExecution: it records
// every execution started, reports each RUNNING once, then as status
// with output (or error).
type fakeSFN struct {
	mu       sync.Mutex
	status   string // what an execution ends as; "RUNNING" never ends
	output   string
	errName  string
	started  []fakeExecution
	describe map[string]int
}

type fakeExecution struct {
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name"`
	Input           string `json:"input"`
}

func (s *fakeSFN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch r.Header.Get("X-Amz-Target") {
	case "AWSStepFunctions.StartExecution":
		var in fakeExecution
		if err := json.Unmarshal(body, &in); err != nil || in.StateMachineArn == "" || in.Name == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.states#InvalidArn","message":"bad request"}`)
			return
		}
		s.started = append(s.started, in)
		arn := strings.Replace(in.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
		_ = json.NewEncoder(w).Encode(map[string]any{"executionArn": arn, "startDate": 1.7e9})
	case "AWSStepFunctions.DescribeExecution":
		var in struct {
			ExecutionArn string `json:"executionArn"`
		}
		_ = json.Unmarshal(body, &in)
		if s.describe == nil {
			s.describe = map[string]int{}
		}
		s.describe[in.ExecutionArn]++
		out := map[string]any{"executionArn": in.ExecutionArn, "status": "RUNNING", "startDate": 1.7e9}
		if s.describe[in.ExecutionArn] > 1 && s.status != "RUNNING" {
			out["status"], out["stopDate"] = s.status, 1.7e9+5
			if s.output != "" {
				out["output"] = s.output
			}
			if s.errName != "" {
				out["error"], out["cause"] = s.errName, "routed"
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.states#UnknownOperationException","message":"`+r.Header.Get("X-Amz-Target")+`"}`)
	}
}

func (s *fakeSFN) executions() []fakeExecution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeExecution(nil), s.started...)
}

// normalized runs input through the migrate definition as the local
// executor runs it, up to HashCheck, and returns the source HashCheck is
// given: what every start of the state machine comes down to.
func normalized(t *testing.T, input []byte) migration.Source {
	t.Helper()
	sm, err := localrun.ParsedMigrate()
	if err != nil {
		t.Fatal(err)
	}
	var got *migration.Source
	hashcheck := func(_ context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var in migration.HashCheckInput
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, err
		}
		got = &in.Source
		return json.Marshal(map[string]any{"decision": "skip", "reason": "already_migrated", "source": in.Source, "job": map[string]any{}})
	}
	res, err := asl.NewExecutor(sm, asl.WithLambda(localrun.HashCheckFunction, hashcheck)).Run(context.Background(), "n", input)
	if err != nil || res.Status != asl.StatusSucceeded || got == nil {
		t.Fatalf("normalize %s: %v %+v", input, err, res)
	}
	return *got
}

func awsTestEnv(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "eu-west-1")
}

const testMigrateArn = "arn:aws:states:eu-west-1:123456789012:stateMachine:geomigrate-migrate"

// TestReplayAWSStartsTheDeployedStateMachine: `replay --backend aws`
// converts nothing itself: it starts one execution of the deployed migrate
// state machine per queued job, whose input comes down to exactly the
// source the S3 event of that file gave HashCheck (events/testdata), waits
// for it, and deletes the message once the execution completed the job.
func TestReplayAWSStartsTheDeployedStateMachine(t *testing.T) {
	for _, golden := range []string{"eventbridge-object-created.golden.json", "s3-put-notification.golden.json", "console-start.golden.json"} {
		t.Run(golden, func(t *testing.T) {
			awsTestEnv(t)
			event, err := os.ReadFile(filepath.Join("..", "..", "events", "testdata", golden))
			if err != nil {
				t.Fatal(err)
			}
			want := normalized(t, event)
			// The dead-letter message Classify wrote for that execution.
			dir := t.TempDir()
			q, err := jsonlqueue.Open(pathsFor(".", dir).deadLetter)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := json.Marshal(migration.RouteMessage{Bucket: want.Bucket, Key: want.Key, Replay: want, Tier: "systemic"})
			if _, err := q.Send(context.Background(), string(msg)); err != nil {
				t.Fatal(err)
			}
			q.Close()

			sfn := &fakeSFN{status: "SUCCEEDED", output: `{"status":"completed","job":{"id":"j1"},"outputs":[],"outputs_count":1,"outputs_size":10}`}
			srv := httptest.NewServer(sfn)
			defer srv.Close()
			args := []string{"replay", "--backend", "aws", "--queue", "dlq", "--endpoint-url", srv.URL, "--state-dir", dir}
			out, stderr, err := run(t, append(args, "--state-machine-arn", testMigrateArn)...)
			if err != nil {
				t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
			}
			started := sfn.executions()
			if len(started) != 1 || started[0].StateMachineArn != testMigrateArn {
				t.Fatalf("executions started: %+v", started)
			}
			if got := normalized(t, []byte(started[0].Input)); got != want {
				t.Errorf("the replayed execution gives HashCheck %+v; the S3 event gave it %+v", got, want)
			}
			r := lastReport(t, out)
			if len(r.Files) != 1 || r.Files[0].Status != localrun.StatusCompleted || !strings.HasSuffix(r.Files[0].Execution, started[0].Name) {
				t.Errorf("report: %+v", r.Files)
			}
			if !strings.Contains(out, "1 deleted, 0 left") {
				t.Errorf("the message was not settled:\n%s", out)
			}
			out, _, err = run(t, append(args, "--state-machine-arn", testMigrateArn)...)
			if err != nil || !strings.Contains(out, "nothing to replay") || len(sfn.executions()) != 1 {
				t.Errorf("second replay: %v\n%s", err, out)
			}
		})
	}
}

// TestReplayAWSLeavesJobsThatDidNotEnd: an execution still running when
// the messages' visibility runs out leaves its message in the queue, as
// does an execution that failed without routing the job; one routed again
// deletes it (the new message carries the job on). Without a state machine
// the replay is refused with a pointer to --local.
func TestReplayAWSLeavesJobsThatDidNotEnd(t *testing.T) {
	for _, c := range []struct {
		name, status, errName, output, want string
	}{
		{"running past the visibility timeout", "RUNNING", "", "", "0 deleted, 1 left"},
		{"failed unrouted", "FAILED", "States.Runtime", "", "0 deleted, 1 left"},
		{"routed again", "FAILED", "Routed.DeadLetter", "", "1 deleted, 0 left"},
	} {
		t.Run(c.name, func(t *testing.T) {
			awsTestEnv(t)
			dir := t.TempDir()
			q, err := jsonlqueue.Open(pathsFor(".", dir).deadLetter)
			if err != nil {
				t.Fatal(err)
			}
			src := migration.Source{Bucket: "b", Key: "a b.tif", KeyEncoding: "plain"}
			msg, _ := json.Marshal(migration.RouteMessage{Bucket: src.Bucket, Key: src.Key, Replay: src})
			if _, err := q.Send(context.Background(), string(msg)); err != nil {
				t.Fatal(err)
			}
			q.Close()
			sfn := &fakeSFN{status: c.status, errName: c.errName, output: c.output}
			srv := httptest.NewServer(sfn)
			defer srv.Close()
			t.Setenv(envMigrateStateMachine, testMigrateArn)
			out, stderr, err := run(t, "replay", "--backend", "aws", "--endpoint-url", srv.URL, "--state-dir", dir, "--visibility-timeout", "2s")
			if err != nil {
				t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
			}
			if len(sfn.executions()) != 1 || !strings.Contains(out, c.want) {
				t.Errorf("%d executions; want %q in\n%s", len(sfn.executions()), c.want, out)
			}
		})
	}
	t.Run("no state machine", func(t *testing.T) {
		awsTestEnv(t)
		t.Setenv(envMigrateStateMachine, "")
		_, _, err := run(t, "replay", "--backend", "aws", "--state-dir", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "--local") || !strings.Contains(err.Error(), envMigrateStateMachine) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestBackfillAWSStartsTheDeployedStateMachine: `backfill --backend aws`
// starts the deployed backfill state machine named by the environment
// when --state-machine-arn is not given, with the prefix as its input.
func TestBackfillAWSStartsTheDeployedStateMachine(t *testing.T) {
	awsTestEnv(t)
	const arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:geomigrate-backfill"
	sfn := &fakeSFN{status: "SUCCEEDED"}
	srv := httptest.NewServer(sfn)
	defer srv.Close()
	t.Setenv(envBackfillStateMachine, arn)
	out, stderr, err := run(t, "backfill", "--backend", "aws", "--endpoint-url", srv.URL, "--prefix", "survey/", "--dataset", "d1")
	if err != nil {
		t.Fatalf("backfill: %v\n%s\n%s", err, out, stderr)
	}
	started := sfn.executions()
	if len(started) != 1 || started[0].StateMachineArn != arn {
		t.Fatalf("executions started: %+v", started)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(started[0].Input), &input); err != nil || input["prefix"] != "survey/" || input["dataset_id"] != "d1" {
		t.Errorf("backfill input %s (%v)", started[0].Input, err)
	}
}
