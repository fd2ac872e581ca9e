package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// sfnStandIn answers DescribeExecution and RedriveExecution as Step
// Functions' JSON protocol does (X-Amz-Target AWSStepFunctions.*), from a
// table of executions: their error and redrive status.
type sfnStandIn struct {
	mu        sync.Mutex
	execs     map[string]map[string]any
	redriven  []string
	notRedriv map[string]bool // RedriveExecution answers ExecutionNotRedrivable
}

func (s *sfnStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	var in struct {
		ExecutionArn string `json:"executionArn"`
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.0") || json.Unmarshal(body, &in) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fail := func(code, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.states#" + code, "message": msg})
	}
	e, ok := s.execs[in.ExecutionArn]
	if !ok {
		fail("ExecutionDoesNotExist", "Execution Does Not Exist: '"+in.ExecutionArn+"'")
		return
	}
	switch r.Header.Get("X-Amz-Target") {
	case "AWSStepFunctions.DescribeExecution":
		out := map[string]any{"executionArn": in.ExecutionArn, "stateMachineArn": "arn:aws:states:eu-west-1:1:stateMachine:geomigrate-migrate", "startDate": 1.7645e9}
		for k, v := range e {
			out[k] = v
		}
		_ = json.NewEncoder(w).Encode(out)
	case "AWSStepFunctions.RedriveExecution":
		if s.notRedriv[in.ExecutionArn] {
			fail("ExecutionNotRedrivable", "Execution is RUNNING and cannot be redriven")
			return
		}
		s.redriven = append(s.redriven, in.ExecutionArn)
		_ = json.NewEncoder(w).Encode(map[string]any{"redriveDate": 1.7646e9})
	default:
		fail("UnknownOperationException", r.Header.Get("X-Amz-Target"))
	}
}

func TestRedrive(t *testing.T) {
	const arn = "arn:aws:states:eu-west-1:1:execution:geomigrate-migrate:"
	tests := []struct {
		name      string
		exec      map[string]any
		notRedriv bool
		wantOut   string
		redriven  bool
	}{
		{"a timed-out execution", map[string]any{"status": "TIMED_OUT", "error": "States.Timeout", "redriveStatus": "REDRIVABLE", "redriveCount": 0},
			false, "redriven " + arn + "e1 at 2025-12-01T14:40:00Z (redrive 1)", true},
		{"a routed failure", map[string]any{"status": "FAILED", "error": "Routed.DeadLetter", "redriveStatus": "REDRIVABLE"},
			false, "its failure was routed (Routed.DeadLetter): the queue message is the record; use `geomigrate replay`", false},
		{"older than 14 days", map[string]any{"status": "FAILED", "error": "Routing.Failed", "redriveStatus": "NOT_REDRIVABLE", "redriveStatusReason": "Execution is older than 14 days"},
			false, "FAILED, not redrivable: Execution is older than 14 days; use `geomigrate replay` or migrate the file again", false},
		{"refused by Step Functions", map[string]any{"status": "FAILED", "error": "States.TaskFailed", "redriveStatus": "REDRIVABLE"},
			true, "not redriven " + arn + "e1: Execution is RUNNING and cannot be redriven", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sfn := &sfnStandIn{execs: map[string]map[string]any{arn + "e1": tt.exec}, notRedriv: map[string]bool{arn + "e1": tt.notRedriv}}
			srv := httptest.NewServer(sfn)
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			t.Setenv("AWS_REGION", "eu-west-1")
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			out, stderr, err := run(t, "redrive", arn+"e1", "--backend", "aws", "--endpoint-url", srv.URL)
			if (err == nil) != tt.redriven {
				t.Fatalf("redrive: %v\n%s\n%s", err, out, stderr)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output %q lacks %q", out, tt.wantOut)
			}
			if got := len(sfn.redriven) == 1; got != tt.redriven {
				t.Errorf("RedriveExecution called: %v, want %v", sfn.redriven, tt.redriven)
			}
		})
	}
	if _, _, err := run(t, "redrive", arn+"e1"); err == nil || !strings.Contains(err.Error(), "run `geomigrate replay` for the dead-letter queue") {
		t.Errorf("a local redrive: %v, want a refusal pointing at replay", err)
	}
}
