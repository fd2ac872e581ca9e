//go:build integration

package sfn_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/statemachine"
)

// containerMachine is the migrate definition's ConvertInContainer state in
// a machine of its own: its Next is Done, its catchers go to Waited
// (BreakerOpenError) and Caught (States.ALL), which keep the caught error.
func containerMachine(t *testing.T) []byte {
	t.Helper()
	def, err := localrun.MigrateDefinition()
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ States map[string]map[string]any }
	if err := json.Unmarshal(def, &m); err != nil {
		t.Fatal(err)
	}
	st := m.States["ConvertInContainer"]
	st["Next"] = "Done"
	for _, c := range st["Catch"].([]any) {
		c := c.(map[string]any)
		if slices.Contains(c["ErrorEquals"].([]any), any("BreakerOpenError")) {
			c["Next"] = "Waited"
		} else {
			c["Next"] = "Caught"
		}
	}
	out, err := json.Marshal(map[string]any{
		"StartAt": "ConvertInContainer",
		"States": map[string]any{
			"ConvertInContainer": st,
			"Done":               map[string]any{"Type": "Succeed"},
			"Caught":             map[string]any{"Type": "Pass", "End": true},
			"Waited":             map[string]any{"Type": "Pass", "End": true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// containerScript is one scenario: RunConvertTask's answers and the
// result objects ReadConvertResult reads, in order.
type containerScript struct {
	Tasks   []map[string]string         `json:"tasks"`
	Results []migration.ContainerResult `json:"results"`
}

// containerRun is what one engine made of a scenario.
type containerRun struct {
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      string          `json:"error"`
	Tasks      int             `json:"tasks"`
	Reads      int             `json:"reads"`
	ResultKeys []string        `json:"resultKeys"`
}

func runContainerGo(t *testing.T, def []byte, input []byte, sc containerScript) containerRun {
	t.Helper()
	sm, err := asl.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	var run containerRun
	ex := asl.NewExecutor(sm, asl.WithRand(func() float64 { return 0 }),
		asl.WithResource(statemachine.ResourceECSRunTaskSync, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			var p struct {
				Overrides struct {
					ContainerOverrides []struct{ Environment []struct{ Value string } }
				}
			}
			_ = json.Unmarshal(params, &p)
			var in migration.ContainerTaskInput
			_ = json.Unmarshal([]byte(p.Overrides.ContainerOverrides[0].Environment[0].Value), &in)
			run.ResultKeys = append(run.ResultKeys, in.Result.Key)
			var answer map[string]string
			if run.Tasks < len(sc.Tasks) {
				answer = sc.Tasks[run.Tasks]
			}
			run.Tasks++
			if answer["fail"] != "" {
				return nil, asl.TaskError{Name: answer["fail"], Cause: "scripted failure"}
			}
			return json.RawMessage(`{"Tasks":[{"LastStatus":"STOPPED","Containers":[{"ExitCode":0}]}]}`), nil
		}),
		asl.WithResource(statemachine.ResourceS3GetObject, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			body, _ := json.Marshal(sc.Results[run.Reads])
			run.Reads++
			return json.Marshal(map[string]string{"Body": string(body)})
		}))
	res, err := ex.Run(context.Background(), "e1", input)
	if err != nil {
		t.Fatal(err)
	}
	run.Status, run.Output, run.Error = res.Status, res.Output, res.Error
	return run
}

func runContainerNode(t *testing.T, node, dir string, def, input []byte, sc containerScript) containerRun {
	t.Helper()
	job := map[string]any{"definition": string(def), "input": json.RawMessage(input), "tasks": sc.Tasks, "results": sc.Results}
	return runNodeScript[containerRun](t, node, dir, "container.mjs", job, time.Minute)
}

// TestEnginesAgreeOnTheContainerPath: the project's executor and
// aws-local-stepfunctions run ConvertInContainer alike: the task's typed
// error, read back from its result object and raised by a Fail state
// (ErrorPath), reaches the Parallel's Retry and Catch under its own name; a
// TransientError runs a new task with a new result key; an ECS capacity
// error is retried on the task itself; a success passes the outputs and
// the result key on to Promote.
func TestEnginesAgreeOnTheContainerPath(t *testing.T) {
	_, node, dir := secondEngine(t)
	def := containerMachine(t)
	input := []byte(`{"job":{"id":"ds:abc:r1","dest_bucket":"dest","staging_prefix":"_staging/abc-r1/"},"route":{"ephemeral_gib":42}}`)
	lambdaErr := func(err error) migration.ContainerResult {
		return migration.ContainerResult{Error: migration.LambdaError(fault.WithAttempt(err, 1))}
	}
	converted := migration.ContainerResult{Outputs: []migration.Artifact{{DestKey: "a.tif", StagingKey: "_staging/abc-r1/a.tif"}}}
	transient := lambdaErr(fault.Transient("test", errors.New("slow down")))
	for _, c := range []struct {
		name   string
		script containerScript
		status string
		error  string // the caught error's name, for Caught and Waited
		end    string // Done, Caught or Waited
		tasks  int
		keys   int // distinct result keys: one per attempt of the Parallel
	}{
		{"converted", containerScript{Results: []migration.ContainerResult{converted}}, asl.StatusSucceeded, "", "Done", 1, 1},
		{"data error", containerScript{Results: []migration.ContainerResult{lambdaErr(fault.Data(fault.MissingCRS, "no CRS"))}}, asl.StatusSucceeded, "DataError", "Caught", 1, 1},
		{"transient, then converted", containerScript{Results: []migration.ContainerResult{transient, converted}}, asl.StatusSucceeded, "", "Done", 2, 2},
		{"transient every time", containerScript{Results: []migration.ContainerResult{transient, transient, transient, transient, transient}}, asl.StatusSucceeded, "TransientError", "Caught", 5, 5},
		{"breaker open", containerScript{Results: []migration.ContainerResult{{Error: migration.LambdaError(&fault.BreakerOpenError{Dependency: "s3://dest", RetryAfterSeconds: 30})}}}, asl.StatusSucceeded, "BreakerOpenError", "Waited", 1, 1},
		{"no capacity, then converted", containerScript{Tasks: []map[string]string{{"fail": "AmazonECS.Unknown"}}, Results: []migration.ContainerResult{converted}}, asl.StatusSucceeded, "", "Done", 2, 1},
		{"task failed", containerScript{Tasks: []map[string]string{{"fail": "States.TaskFailed"}}}, asl.StatusSucceeded, "States.TaskFailed", "Caught", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			for engine, run := range map[string]containerRun{
				"go":   runContainerGo(t, def, input, c.script),
				"node": runContainerNode(t, node, dir, def, input, c.script),
			} {
				var out struct {
					Error     *migration.CaughtError   `json:"error"`
					Breaker   *migration.CaughtError   `json:"breaker"`
					Converted *migration.ConvertOutput `json:"converted"`
				}
				_ = json.Unmarshal(run.Output, &out)
				end, caught := "Done", ""
				switch {
				case out.Breaker != nil:
					end, caught = "Waited", out.Breaker.Error
				case out.Error != nil:
					end, caught = "Caught", out.Error.Error
				}
				if run.Status != c.status || end != c.end || caught != c.error || run.Tasks != c.tasks {
					t.Errorf("%s: %s at %s (caught %q) after %d task(s), want %s at %s (caught %q) after %d; output %s",
						engine, run.Status, end, caught, run.Tasks, c.status, c.end, c.error, c.tasks, run.Output)
				}
				// A new attempt of the Parallel is a new task with a new
				// result key; RunConvertTask's own retry (the task never
				// started) keeps its key.
				if keys := slices.Compact(slices.Sorted(slices.Values(run.ResultKeys))); len(keys) != c.keys {
					t.Errorf("%s: %d distinct result keys %v, want %d", engine, len(keys), run.ResultKeys, c.keys)
				}
				for _, k := range run.ResultKeys {
					if !strings.HasPrefix(k, "_staging/abc-r1/"+migration.ContainerResultPrefix) || !strings.HasSuffix(k, ".json") {
						t.Errorf("%s: result key %s", engine, k)
					}
				}
				if end == "Done" && (out.Converted == nil || len(out.Converted.Outputs) != 1 || out.Converted.ResultKey != run.ResultKeys[len(run.ResultKeys)-1]) {
					t.Errorf("%s: converted %+v, want the outputs and the last result key %v", engine, out.Converted, run.ResultKeys)
				}
			}
		})
	}
}
