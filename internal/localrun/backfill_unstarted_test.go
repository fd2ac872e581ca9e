package localrun_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// sentMessages is a queue.Sender that keeps what it is sent.
type sentMessages struct {
	mu     sync.Mutex
	bodies []string
}

func (s *sentMessages) Send(_ context.Context, body string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	return "m", nil
}

// TestBackfillItemNotStartedIsDeadLettered: an item whose StartExecution is
// still throttled after the task's retries is named in the dead-letter queue
// (replayable) and still recorded as a failed item; a child that ran and
// failed is not (its own routes name it), and neither is a started item.
func TestBackfillItemNotStartedIsDeadLettered(t *testing.T) {
	store := eightItems(t)
	var mu sync.Mutex
	attempts := map[string]int{}
	start := func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Input struct{ Key string } `json:"Input"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts[p.Input.Key]++
		mu.Unlock()
		switch p.Input.Key {
		case "in/bad.tif":
			return nil, &asl.TaskError{Name: "StepFunctions.ExecutionLimitExceededException", Cause: "Rate exceeded"}
		case "in/ok3.tif":
			return nil, &asl.TaskError{Name: "States.TaskFailed", Cause: `{"Status":"FAILED","Error":"Routed.DeadLetter"}`}
		}
		return json.RawMessage(`{"Status":"SUCCEEDED","ExecutionArn":"arn:child","Output":"{}"}`), nil
	}
	for _, tc := range []struct {
		name string
		dlq  *sentMessages
	}{{"with the queue", &sentMessages{}}, {"no queue", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			clear(attempts)
			cfg := localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: childMigrate(t, &concurrencyProbe{})}
			if tc.dlq != nil {
				cfg.DeadLetter = tc.dlq
			}
			bf, err := localrun.NewBackfill(cfg,
				asl.WithRetryScale(1e-6),
				asl.WithResource("arn:aws:states:::states:startExecution.sync:2", start))
			if err != nil {
				t.Fatal(err)
			}
			res, outs, err := bf.Run(context.Background(), "backfill-throttled", json.RawMessage(`{"prefix":"in/","max_concurrency":2}`))
			t.Cleanup(func() { outs.Close() })
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCEEDED" {
				t.Fatalf("backfill %s: %s %s", res.Status, res.Error, res.Cause)
			}
			if attempts["in/bad.tif"] != 5 {
				t.Errorf("throttled start tried %d times, want 5 (1 + 4 retries)", attempts["in/bad.tif"])
			}
			var mapRun struct {
				MapRun struct{ ResultWriterDetails struct{ Key string } } `json:"map_run"`
			}
			if err := json.Unmarshal(res.Output, &mapRun); err != nil {
				t.Fatal(err)
			}
			failed := readResultFile(t, store, strings.TrimSuffix(mapRun.MapRun.ResultWriterDetails.Key, "manifest.json")+"FAILED_0.json")
			if !strings.Contains(failed, "StepFunctions.ExecutionLimitExceededException") || !strings.Contains(failed, "Routed.DeadLetter") {
				t.Errorf("FAILED_0.json does not record both failed items:\n%s", failed)
			}
			if tc.dlq == nil {
				return
			}
			if len(tc.dlq.bodies) != 1 {
				t.Fatalf("%d dead-letter messages, want 1: %q", len(tc.dlq.bodies), tc.dlq.bodies)
			}
			var m struct {
				Bucket, Key, Error, Cause, Tier, Route string
				Replay                                 struct{ Bucket, Key string }
			}
			if err := json.Unmarshal([]byte(tc.dlq.bodies[0]), &m); err != nil {
				t.Fatalf("message %s: %v", tc.dlq.bodies[0], err)
			}
			if m.Bucket != "src" || m.Key != "in/bad.tif" || m.Replay.Bucket != "src" || m.Replay.Key != "in/bad.tif" ||
				m.Error != "StepFunctions.ExecutionLimitExceededException" || m.Cause != "Rate exceeded" || m.Tier != "systemic" || m.Route != "dlq" {
				t.Errorf("message = %s", tc.dlq.bodies[0])
			}
		})
	}
}

func readResultFile(t *testing.T, store objectstore.Store, key string) string {
	t.Helper()
	rc, err := store.Open(context.Background(), "ops", key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
