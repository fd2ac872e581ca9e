//go:build integration

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// TestBackfillUnstartedItemOnMotoSQS: the local backfill whose child start
// is throttled past its retries sends the dead-letter message through the
// SQS adapter (moto), and `replay` reads the object back from it.
func TestBackfillUnstartedItemOnMotoSQS(t *testing.T) {
	m := motoServer(t)
	dlq := m.queue(t, "backfill-unstarted-dlq")
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.tif", "throttled.tif"} {
		if err := os.WriteFile(filepath.Join(src, "in", name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("ops", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	child, err := asl.Parse([]byte(`{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	start := func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Input struct{ Key string } `json:"Input"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		if p.Input.Key == "in/throttled.tif" {
			return nil, &asl.TaskError{Name: "StepFunctions.ExecutionLimitExceededException", Cause: "Rate exceeded"}
		}
		return json.RawMessage(`{"Status":"SUCCEEDED","ExecutionArn":"arn:child","Output":"{}"}`), nil
	}
	bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: asl.NewExecutor(child), DeadLetter: dlq},
		asl.WithRetryScale(1e-6), asl.WithResource("arn:aws:states:::states:startExecution.sync:2", start))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, outs, err := bf.Run(ctx, "moto-unstarted", json.RawMessage(`{"prefix":"in/"}`))
	t.Cleanup(func() { outs.Close() })
	if err != nil || res.Status != "SUCCEEDED" {
		t.Fatalf("backfill: %v %+v", err, res)
	}
	got, err := dlq.Receive(ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d dead-letter messages on SQS, want 1", len(got))
	}
	var msg struct{ Error, Cause string }
	if err := json.Unmarshal([]byte(got[0].Body), &msg); err != nil || msg.Error != "StepFunctions.ExecutionLimitExceededException" || msg.Cause != "Rate exceeded" {
		t.Errorf("message %s (%v)", got[0].Body, err)
	}
	s, err := replaySource(got[0].Body)
	if err != nil || s.Bucket != "src" || s.Key != "in/throttled.tif" {
		t.Errorf("replay reads %+v, %v from %s", s, err, got[0].Body)
	}
}
