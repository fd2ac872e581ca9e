package cost

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Path is one way a file goes through the migrate state machine; each is
// charged differently.
type Path string

const (
	// Converted: HashCheck claims, Convert stages, Promote publishes.
	Converted Path = "converted"
	// Skipped: HashCheck finds the file migrated with this recipe (or not a
	// geospatial file by its name) and the execution succeeds there.
	Skipped Path = "skipped"
	// Remediation: Convert refuses the data (preflight, a DataError),
	// Classify routes it, the message goes to the remediation queue.
	Remediation Path = "remediation"
	// Rejected: HashCheck itself refuses the source (a DataError: the
	// object is gone, its key is unusable, it is an output of the
	// pipeline), Classify routes it to the remediation queue.
	Rejected Path = "rejected"
)

// Paths are the paths the estimate charges, in a fixed order.
var Paths = []Path{Converted, Skipped, Remediation, Rejected}

// Walk is what one execution along a path does in Step Functions terms.
type Walk struct {
	// Transitions is the number of states entered, which is what Step
	// Functions Standard bills ("a state transition each time a step of
	// your workflow is executed"); retries would add one each and are not
	// part of a successful walk.
	Transitions int `json:"transitions"`
	// Lambdas are the Lambda task states invoked, in order.
	Lambdas []string `json:"lambdas"`
	// SQSSends is the number of SendMessage tasks.
	SQSSends int `json:"sqs_sends"`
	// States is the sequence of states entered.
	States []string `json:"states"`
}

// Walks runs a migrate definition (statemachine.Migrate, placeholders not
// yet expanded) through the project's executor once per path, with
// stand-ins for the Lambda functions that answer as the real ones do on
// that path, and records the states each execution entered. The count
// therefore follows the ASL file: a state added to it is charged.
func Walks(ctx context.Context, def []byte) (map[Path]Walk, error) {
	def, err := statemachine.ExpandMigrate(def, statemachine.DefaultTaskTimeouts)
	if err != nil {
		return nil, fmt.Errorf("cost.Walks: %w", err)
	}
	const arn = "arn:aws:lambda:local:000000000000:function:"
	fns := map[string]string{
		statemachine.HashCheckFunctionArn: arn + "hashcheck",
		statemachine.ConvertFunctionArn:   arn + "convert",
		statemachine.PromoteFunctionArn:   arn + "promote",
		statemachine.ClassifyFunctionArn:  arn + "classify",
		statemachine.RemediationQueueURL:  "local://remediation",
		statemachine.DeadLetterQueueURL:   "local://dead-letter",
		// The container path is not walked: its task and result read are
		// never reached on these paths (a job within the limits).
		statemachine.ConvertClusterArn:        "arn:aws:ecs:local:000000000000:cluster/c",
		statemachine.ConvertTaskDefinitionArn: "arn:aws:ecs:local:000000000000:task-definition/t:1",
		statemachine.ConvertSubnetIDs:         "subnet-1",
		statemachine.ConvertSecurityGroupID:   "sg-1",
	}
	def, err = asl.Substitute(def, fns)
	if err != nil {
		return nil, fmt.Errorf("cost.Walks: %w", err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("cost.Walks: %w", err)
	}
	out := map[Path]Walk{}
	for _, p := range Paths {
		w, err := walk(ctx, sm, fns, p)
		if err != nil {
			return nil, fmt.Errorf("cost.Walks: %s: %w", p, err)
		}
		out[p] = w
	}
	return out, nil
}

// walk runs one execution along path p.
func walk(ctx context.Context, sm *asl.StateMachine, fns map[string]string, p Path) (Walk, error) {
	reply := func(v any) asl.LambdaFunc {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.Marshal(v) }
	}
	decision := "convert"
	if p == Skipped {
		decision = "skip"
	}
	convert := reply(map[string]any{"outputs": []any{map[string]any{"key": "out.tif"}}, "outputs_ref": nil})
	if p == Remediation {
		convert = func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fault.Data(fault.CorruptSource, "refused by preflight")
		}
	}
	hashcheck := reply(map[string]any{
		"decision": decision, "reason": "already_migrated",
		"source": map[string]any{"bucket": "b", "key": "k.tif"}, "job": map[string]any{"id": "j"},
		// Within the container limits: the Convert Lambda path.
		"route": map[string]any{"within_budget": true, "work": map[string]any{"bytes": 1, "pixels_bands": 0, "features": 0},
			"limits": map[string]any{"bytes": 2, "pixels_bands": 2, "features": 2}},
	})
	if p == Rejected {
		hashcheck = func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fault.Data(fault.SourceNotFound, "gone")
		}
	}
	var w Walk
	exec := asl.NewExecutor(sm,
		asl.WithLambda(fns[statemachine.HashCheckFunctionArn], hashcheck),
		asl.WithLambda(fns[statemachine.ConvertFunctionArn], convert),
		asl.WithLambda(fns[statemachine.PromoteFunctionArn], reply(map[string]any{"outputs": []any{map[string]any{"key": "out.tif"}}, "outputs_count": 1, "outputs_size": 1})),
		asl.WithLambda(fns[statemachine.ClassifyFunctionArn], reply(map[string]any{"tier": "data_specific", "route": "remediation", "message": map[string]any{"m": 1}})),
		asl.WithSQS(func(context.Context, string, string) (string, error) { return "m-1", nil }),
		asl.WithHistory(func(ev asl.Event) {
			if ev.Type == asl.EventStateEntered {
				w.States = append(w.States, ev.State)
			}
		}),
	)
	res, err := exec.Run(ctx, "walk-"+string(p), json.RawMessage(`{"bucket":"b","key":"k.tif"}`))
	if err != nil {
		return Walk{}, err
	}
	want := map[Path]string{Converted: asl.StatusSucceeded, Skipped: asl.StatusSucceeded, Remediation: asl.StatusFailed, Rejected: asl.StatusFailed}[p]
	if res.Status != want {
		return Walk{}, fmt.Errorf("execution ended %s (%s: %s), want %s", res.Status, res.Error, res.Cause, want)
	}
	for _, ev := range res.History {
		if ev.Type != asl.EventTaskScheduled {
			continue
		}
		st := sm.States[ev.State]
		switch {
		case st != nil && st.Resource == asl.ResourceSQSSendMessage:
			w.SQSSends++
		default:
			w.Lambdas = append(w.Lambdas, ev.State)
		}
	}
	w.Transitions = len(w.States)
	return w, nil
}
