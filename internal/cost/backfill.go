package cost

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/statemachine"
)

// BackfillWalk is what statemachine/backfill.asl.json adds around the
// migrate executions it starts: the transitions of one backfill execution
// (the policy read, the Map settings taken from the stack's default
// policy document, the input defaults, the choice of item source, the Map
// state, its end) and
// those of each item's child workflow (its folder-marker check and the
// task that starts and waits for the item's migrate execution). Step
// Functions bills a Distributed Map's Standard child workflow executions
// in state transitions like any other.
type BackfillWalk struct {
	PerRun  int `json:"transitions_per_run"`
	PerItem int `json:"transitions_per_item"`
}

// WalkBackfill runs a backfill definition over a prefix of one and of
// three objects through the project's executor, with stand-ins for the S3
// listing, the result writer and the child migrate executions, and counts
// the states entered: the difference per item, and the rest per run.
func WalkBackfill(ctx context.Context, def []byte) (BackfillWalk, error) {
	def, err := statemachine.ExpandBackfill(def, nil)
	if err != nil {
		return BackfillWalk{}, fmt.Errorf("cost.WalkBackfill: %w", err)
	}
	def, err = asl.Substitute(def, map[string]string{
		"MigrateStateMachineArn":         "arn:aws:states:local:000000000000:stateMachine:migrate",
		"SourceBucket":                   "src",
		"ResultsBucket":                  "results",
		statemachine.DeadLetterQueueURL:  "local://dead-letter",
		statemachine.PolicyParameterName: "/geomigrate/policy",
	})
	if err != nil {
		return BackfillWalk{}, fmt.Errorf("cost.WalkBackfill: %w", err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return BackfillWalk{}, fmt.Errorf("cost.WalkBackfill: %w", err)
	}
	count := func(items int) (int, error) {
		list := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			var contents []map[string]any
			for i := range items {
				contents = append(contents, map[string]any{"Key": fmt.Sprintf("in/%d.tif", i), "Size": 1, "Etag": `"e"`, "LastModified": "2026-11-30T00:00:00Z", "StorageClass": "STANDARD"})
			}
			return json.Marshal(map[string]any{"Contents": contents})
		}
		ok := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"Status":"SUCCEEDED","Output":"{}"}`), nil
		}
		entered := 0
		exec := asl.NewExecutor(sm,
			asl.WithResource("arn:aws:states:::s3:listObjectsV2", list),
			asl.WithResource("arn:aws:states:::s3:putObject", func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{}`), nil
			}),
			asl.WithResource("arn:aws:states:::states:startExecution.sync:2", ok),
			// The parameter holds what the stack stores: the default document.
			asl.WithResource(statemachine.ResourceSSMGetParameter, func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.Marshal(map[string]any{"Parameter": map[string]any{"Name": "/geomigrate/policy", "Value": string(policy.Default().JSON()), "Version": 1}})
			}),
			asl.WithHistory(func(ev asl.Event) {
				if ev.Type == asl.EventStateEntered {
					entered++
				}
			}),
		)
		res, err := exec.Run(ctx, fmt.Sprintf("walk-%d", items), json.RawMessage(`{"prefix":"in/"}`))
		if err != nil {
			return 0, err
		}
		if res.Status != asl.StatusSucceeded {
			return 0, fmt.Errorf("backfill of %d item(s) ended %s (%s: %s)", items, res.Status, res.Error, res.Cause)
		}
		return entered, nil
	}
	one, err := count(1)
	if err != nil {
		return BackfillWalk{}, fmt.Errorf("cost.WalkBackfill: %w", err)
	}
	three, err := count(3)
	if err != nil {
		return BackfillWalk{}, fmt.Errorf("cost.WalkBackfill: %w", err)
	}
	per := (three - one) / 2
	return BackfillWalk{PerRun: one - per, PerItem: per}, nil
}

// BackfillExtra is what one backfill over files objects adds to the
// migrate executions: its transitions (PerRun + PerItem × files, child
// workflows of the default STANDARD type), and the ItemReader's listing of
// the prefix, one ListObjectsV2 page per 1,000 keys.
type BackfillExtra struct {
	Transitions  int64   `json:"transitions"`
	ListRequests int64   `json:"list_requests"`
	Cost         float64 `json:"cost_usd"`
}

// BackfillCost prices BackfillExtra for files objects with m's walk and prices.
func BackfillCost(m Model, files int64) BackfillExtra {
	x := BackfillExtra{
		Transitions:  int64(m.Backfill.PerRun) + int64(m.Backfill.PerItem)*files,
		ListRequests: max(1, (files+999)/1000),
	}
	x.Cost = float64(x.Transitions)/1000*m.Prices.StepFunctionsStandardPer1000Transitions +
		float64(x.ListRequests)/1000*m.Prices.S3PutCopyPostListPer1000
	return x
}
