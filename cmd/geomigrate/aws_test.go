package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackfillStartsTheDeployedStateMachine checks, at the wire, what
// `geomigrate backfill --backend aws` asks Step Functions for.
func TestBackfillStartsTheDeployedStateMachine(t *testing.T) {
	var got struct {
		target string
		body   map[string]string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.target = r.Header.Get("X-Amz-Target")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"executionArn":"arn:aws:states:eu-west-1:123456789012:execution:backfill:b1","startDate":1.7e9}`)
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "eu-west-1")
	const arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:backfill"
	out, _, err := run(t, "backfill", "--backend", "aws", "--state-machine-arn", arn, "--endpoint-url", srv.URL,
		"--prefix", "incoming/", "--dataset", "tiles", "--workers", "50", "--dest", "unused")
	if err != nil {
		t.Fatal(err)
	}
	if got.target != "AWSStepFunctions.StartExecution" || got.body["stateMachineArn"] != arn {
		t.Fatalf("request %s %v", got.target, got.body)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(got.body["input"]), &input); err != nil {
		t.Fatal(err)
	}
	if input["prefix"] != "incoming/" || input["dataset_id"] != "tiles" || input["max_concurrency"] != float64(50) {
		t.Fatalf("execution input %v", input)
	}
	if _, ok := input["tolerated_failure_percentage"]; ok {
		t.Errorf("execution input %v: tolerated_failure_percentage was not given", input)
	}
	if !strings.Contains(out, "execution:backfill:b1") {
		t.Fatalf("output %q", out)
	}
	// Given neither flag nor document, the command leaves both out: the
	// state machine reads the stack's policy parameter (ReadPolicy).
	if _, _, err := run(t, "backfill", "--backend", "aws", "--state-machine-arn", arn, "--endpoint-url", srv.URL, "--prefix", "incoming/", "--dest", "unused"); err != nil {
		t.Fatal(err)
	}
	input = nil
	if err := json.Unmarshal([]byte(got.body["input"]), &input); err != nil {
		t.Fatal(err)
	}
	_, hasMax := input["max_concurrency"]
	_, hasTolerated := input["tolerated_failure_percentage"]
	if input["prefix"] != "incoming/" || hasMax || hasTolerated {
		t.Errorf("execution input %v: want the Map settings left to the state machine", input)
	}
	// Without the ARN it says what to pass.
	if _, _, err := run(t, "backfill", "--backend", "aws", "--prefix", "x/", "--dest", "unused"); err == nil || !strings.Contains(err.Error(), "state-machine-arn") {
		t.Fatalf("err = %v", err)
	}
}

// TestNoCredentialsIsOneLineWithTheNextStep: an AWS command on a
// workstation without credentials ends in one line saying what to set, not
// the SDK's credential chain; no request leaves the machine.
func TestNoCredentialsIsOneLineWithTheNextStep(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL"} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"status", []string{"status", "--backend", "aws", "--state-table", "jobs"}, nil, `run "aws configure"`},
		{"migrate", []string{"migrate", "s3://src-bucket/in/", "--backend", "aws", "--dest", "s3://dst-bucket/out/", "--state-table", "jobs"}, nil, `run "aws configure"`},
		{"plan", []string{"plan", "s3://src-bucket/in/", "--backend", "aws", "--dest", "s3://dst-bucket/out/", "--state-table", "jobs"}, nil, `run "aws configure"`},
		{"unknown profile", []string{"status", "--backend", "aws", "--state-table", "jobs"}, map[string]string{"AWS_PROFILE": "nosuch"}, `AWS profile "nosuch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, _, err := run(t, tt.args...)
			var stderr strings.Builder
			code := exitCode(err, &stderr)
			got := stderr.String()
			if code != 1 || strings.Count(got, "\n") != 1 || !strings.Contains(got, tt.want) || strings.Contains(got, "IMDS") || strings.Contains(got, "get identity") {
				t.Errorf("exit %d, stderr %q: want exit 1 and one line with %q, no SDK chain", code, got, tt.want)
			}
		})
	}
}
