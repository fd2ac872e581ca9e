//go:build integration

package sfn_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/statemachine"
)

// policyMachine is the backfill definition from its start (ReadPolicy) to
// the choice of item source, which becomes a Succeed state: the policy
// read and the Map settings it resolves, without the Distributed Maps
// aws-local-stepfunctions cannot run (no ItemReader).
func policyMachine(t *testing.T) []byte {
	t.Helper()
	def, err := statemachine.ExpandBackfill(statemachine.Backfill, nil)
	if err != nil {
		t.Fatal(err)
	}
	def, err = asl.Substitute(def, map[string]string{
		"MigrateStateMachineArn": "arn:aws:states:local:000000000000:stateMachine:migrate", "SourceBucket": "src", "ResultsBucket": "ops",
		statemachine.DeadLetterQueueURL: "local://dead-letter", statemachine.PolicyParameterName: statemachine.LocalPolicyParameter,
	})
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		StartAt string
		States  map[string]map[string]any
	}
	if err := json.Unmarshal(def, &m); err != nil {
		t.Fatal(err)
	}
	m.States["ChooseItemSource"] = map[string]any{"Type": "Succeed"}
	for _, name := range []string{"InvalidInput", "BackfillFromPrefix", "BackfillFromManifest", "BackfillDone", "BackfillFailed"} {
		if _, ok := m.States[name]; !ok {
			t.Fatalf("backfill has no state %s to cut", name)
		}
		delete(m.States, name)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// policyRun is what one engine made of a scenario.
type policyRun struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Reads  int             `json:"reads"`
}

// parameterAnswer is ReadPolicy's scripted answer: the parameter's value,
// or the error the SDK integration raises.
type parameterAnswer struct {
	Value string `json:"value,omitempty"`
	Fail  string `json:"fail,omitempty"`
}

func runPolicyGo(t *testing.T, def, input []byte, answer parameterAnswer) policyRun {
	t.Helper()
	sm, err := asl.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	var run policyRun
	ex := asl.NewExecutor(sm, asl.WithRetryScale(0.001),
		asl.WithResource(statemachine.ResourceSSMGetParameter, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			run.Reads++
			if answer.Fail != "" {
				return nil, asl.TaskError{Name: answer.Fail, Cause: "scripted failure"}
			}
			var p struct{ Name string }
			_ = json.Unmarshal(params, &p)
			return json.Marshal(map[string]any{"Parameter": map[string]any{"Name": p.Name, "Type": "String", "Value": answer.Value, "Version": 1}})
		}))
	res, err := ex.Run(context.Background(), "e1", input)
	if err != nil {
		t.Fatal(err)
	}
	run.Status, run.Output, run.Error = res.Status, res.Output, res.Error
	return run
}

func runPolicyNode(t *testing.T, node, dir string, def, input []byte, answer parameterAnswer) policyRun {
	t.Helper()
	job := map[string]any{"definition": string(def), "input": json.RawMessage(input), "parameter": answer}
	return runNodeScript[policyRun](t, node, dir, "backfillpolicy.mjs", job, time.Minute)
}

// TestEnginesAgreeOnTheBackfillPolicyRead: the project's executor and
// aws-local-stepfunctions resolve the backfill's Map settings alike, to the
// same output: the input's values first, then the policy document's
// (checked for presence, type and bounds), then 100 and 100, with what the
// read left in policy; a parameter that cannot be read is retried on
// Ssm.SsmException and caught. Only braces around text that is not JSON
// fail the execution, on both.
func TestEnginesAgreeOnTheBackfillPolicyRead(t *testing.T) {
	_, node, dir := secondEngine(t)
	def := policyMachine(t)
	doc := func(s string) parameterAnswer { return parameterAnswer{Value: s} }
	for _, c := range []struct {
		name      string
		input     string
		answer    parameterAnswer
		status    string
		reads     int
		maxConc   float64 // the resolved values, when SUCCEEDED
		tolerated float64
	}{
		{"document's values", `{"prefix":"in/"}`, doc(`{"version":1,"backfill":{"max_concurrency":3,"tolerated_failure_percentage":12.5}}`), asl.StatusSucceeded, 1, 3, 12.5},
		{"input's values win", `{"prefix":"in/","max_concurrency":7,"tolerated_failure_percentage":0}`, doc(`{"version":1,"backfill":{"max_concurrency":3,"tolerated_failure_percentage":50}}`), asl.StatusSucceeded, 1, 7, 0},
		{"one from each", `{"prefix":"in/","tolerated_failure_percentage":5}`, doc(`{"version":1,"backfill":{"max_concurrency":3}}`), asl.StatusSucceeded, 1, 3, 5},
		{"trailing newline", `{"prefix":"in/"}`, doc("{\"version\":1,\"backfill\":{\"max_concurrency\":9}}\n"), asl.StatusSucceeded, 1, 9, 100},
		{"no parameter", `{"prefix":"in/"}`, parameterAnswer{Fail: "Ssm.ParameterNotFoundException"}, asl.StatusSucceeded, 1, 100, 100},
		{"service error, retried then caught", `{"prefix":"in/"}`, parameterAnswer{Fail: "Ssm.SsmException"}, asl.StatusSucceeded, 4, 100, 100},
		{"not an object", `{"prefix":"in/"}`, doc(`max_concurrency = 3`), asl.StatusSucceeded, 1, 100, 100},
		{"no backfill member", `{"prefix":"in/"}`, doc(`{"version":1}`), asl.StatusSucceeded, 1, 100, 100},
		{"out of bounds", `{"prefix":"in/"}`, doc(`{"version":1,"backfill":{"max_concurrency":10001,"tolerated_failure_percentage":100.5}}`), asl.StatusSucceeded, 1, 100, 100},
		{"not numbers", `{"prefix":"in/"}`, doc(`{"version":1,"backfill":{"max_concurrency":"3","tolerated_failure_percentage":true}}`), asl.StatusSucceeded, 1, 100, 100},
		{"backfill not an object", `{"prefix":"in/"}`, doc(`{"version":1,"backfill":[3]}`), asl.StatusSucceeded, 1, 100, 100},
		{"braces around text that is not JSON", `{"prefix":"in/"}`, doc(`{max_concurrency: 3}`), asl.StatusFailed, 1, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := map[string]policyRun{
				"go":   runPolicyGo(t, def, []byte(c.input), c.answer),
				"node": runPolicyNode(t, node, dir, def, []byte(c.input), c.answer),
			}
			for engine, run := range runs {
				if run.Status != c.status || run.Reads != c.reads {
					t.Errorf("%s: %s (%s) after %d reads, want %s after %d", engine, run.Status, run.Error, run.Reads, c.status, c.reads)
				}
				if c.status != asl.StatusSucceeded {
					t.Logf("%s: failed with %s", engine, run.Error)
					continue
				}
				var out struct {
					MaxConcurrency float64 `json:"max_concurrency"`
					Tolerated      float64 `json:"tolerated_failure_percentage"`
				}
				if err := json.Unmarshal(run.Output, &out); err != nil {
					t.Fatalf("%s: output %s: %v", engine, run.Output, err)
				}
				if out.MaxConcurrency != c.maxConc || out.Tolerated != c.tolerated {
					t.Errorf("%s: max_concurrency %v, tolerated_failure_percentage %v; want %v, %v", engine, out.MaxConcurrency, out.Tolerated, c.maxConc, c.tolerated)
				}
			}
			if c.status != asl.StatusSucceeded {
				return
			}
			var goOut, nodeOut map[string]any
			_ = json.Unmarshal(runs["go"].Output, &goOut)
			_ = json.Unmarshal(runs["node"].Output, &nodeOut)
			// DefaultDatasetId (after the policy read) sets dataset_id to ""
			// with a Pass state's Result, which aws-local-stepfunctions 3.0.0
			// does not apply (it treats an empty-string Result as none).
			delete(goOut, "dataset_id")
			delete(nodeOut, "dataset_id")
			if !reflect.DeepEqual(goOut, nodeOut) {
				t.Errorf("outputs differ:\ngo:   %s\nnode: %s", runs["go"].Output, runs["node"].Output)
			}
		})
	}
}
