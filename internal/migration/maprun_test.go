package migration

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// expressChild is the ARN of an Express child of a backfill Map Run; the
// child's $$.Execution.Id, so the lease owner of the job it claimed.
func expressChild(n string) string {
	return "arn:aws:states:eu-west-1:123456789012:express:geomigrate-backfill/BackfillPrefix:run1:" + n
}

// childEntry is one entry of a result file as the ResultWriter writes it:
// the child's input as JSON text.
func childEntry(exec, status, errName, key string, start any) map[string]any {
	input, _ := json.Marshal(map[string]string{"bucket": "src", "key": key, "key_encoding": "plain", "dataset_id": "src"})
	e := map[string]any{"ExecutionArn": exec, "Input": string(input), "InputDetails": map[string]bool{"Included": true},
		"Name": exec[strings.LastIndex(exec, ":")+1:], "Status": status, "StartDate": start}
	if errName != "" {
		e["Error"], e["Cause"] = errName, "the child ended"
	}
	return e
}

func putJSON(t *testing.T, store objectstore.Store, key string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(context.Background(), objectstore.PutRequest{Bucket: "dest", Key: key, Body: strings.NewReader(string(b)), Size: int64(len(b))}); err != nil {
		t.Fatal(err)
	}
}

// TestCloseMapRunClosesOnlyTheUnfinishedChildren: the EXPRESS backfill's
// pass over a Map Run's results closes the job of the child that timed
// out (quarantined, staging deleted, one dead-letter message), and leaves
// alone a job that completed, a routed failure, and whatever the
// succeeded file names. A second pass sends nothing.
func TestCloseMapRunClosesOnlyTheUnfinishedChildren(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, k := range []string{"a/timed.img", "a/done.img", "a/routed.img", "a/ok.img"} {
		f.put(t, k, "raster-bytes-"+k)
	}
	timedOut, _ := f.stage(t, expressChild("c1"), "a/timed.img")
	done := f.migrate(t, expressChild("c2"), "a/done.img").Job
	routed := f.check(t, expressChild("c3"), "a/routed.img").Job
	// Still PROCESSING under its child: were the succeeded file read, this
	// job would be closed.
	succeeded := f.check(t, expressChild("c4"), "a/ok.img").Job

	start := time.Now().Add(-10 * time.Minute)
	dir := "backfill-results/run1/"
	putJSON(t, f.store, dir+"FAILED_0.json", []any{
		childEntry(expressChild("c1"), ExecutionTimedOutStatus, "States.Timeout", "a/timed.img", start.UTC().Format(time.RFC3339Nano)),
		childEntry(expressChild("c2"), ExecutionFailedStatus, "States.Timeout", "a/done.img", start.UnixMilli()),
		childEntry(expressChild("c3"), ExecutionFailedStatus, "Routed.DeadLetter", "a/routed.img", start.UnixMilli()),
	})
	putJSON(t, f.store, dir+"SUCCEEDED_0.json", []any{childEntry(expressChild("c4"), "SUCCEEDED", "", "a/ok.img", start.UnixMilli())})
	putJSON(t, f.store, dir+"manifest.json", map[string]any{"DestinationBucket": "dest",
		"MapRunArn": "arn:aws:states:eu-west-1:123456789012:mapRun:geomigrate-backfill/BackfillPrefix:run1",
		"ResultFiles": map[string]any{
			"FAILED":    []any{map[string]any{"Key": dir + "FAILED_0.json", "Size": 1}},
			"PENDING":   []any{},
			"SUCCEEDED": []any{map[string]any{"Key": dir + "SUCCEEDED_0.json", "Size": 1}},
		}})

	q := &sentQueue{}
	h := NewExecutionFailed(f.cfg, f.store, f.tracker, q, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn)
	payload := json.RawMessage(`{"ResultWriterDetails":{"Bucket":"dest","Key":"` + dir + `manifest.json"}}`)
	out, err := h.HandleInvocation(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(MapRunClosed)
	if got.Children != 3 || got.Outcomes[EndedClosed] != 1 || got.Outcomes[EndedLeftAlone] != 1 || got.Outcomes[EndedIgnored] != 1 {
		t.Fatalf("outcomes %+v, want 3 children: 1 closed, 1 left alone, 1 ignored", got)
	}
	if len(q.msgs) != 1 || q.msgs[0].JobID != timedOut.ID || q.msgs[0].Execution != expressChild("c1") || q.msgs[0].Replay.Key != "a/timed.img" {
		t.Fatalf("dead-letter messages %+v, want one for %s", q.msgs, timedOut.ID)
	}
	for id, want := range map[string]statestore.Status{timedOut.ID: statestore.Quarantined, done.ID: statestore.Completed,
		routed.ID: statestore.Processing, succeeded.ID: statestore.Processing} {
		rec, err := f.tracker.Get(ctx, id)
		if err != nil || rec.Status != want {
			t.Errorf("job %s: %s %v, want %s", id, rec.Status, err, want)
		}
	}
	if left := staged(f); len(left) != 0 {
		t.Errorf("staging left: %v", left)
	}

	// A retried pass (the Task's Retry, a redriven backfill) sends nothing.
	again, err := h.CloseMapRun(ctx, MapRunResults{ResultWriterDetails: struct {
		Bucket string `json:"Bucket"`
		Key    string `json:"Key"`
	}{"dest", dir + "manifest.json"}})
	if err != nil || len(q.msgs) != 1 || again.Outcomes[EndedAlreadyHandled] != 1 {
		t.Fatalf("second pass %+v %v, %d messages", again, err, len(q.msgs))
	}
}

// TestHandleInvocationStillTakesStatusEvents: the function's one handler
// takes the EventBridge events as before.
func TestHandleInvocationStillTakesStatusEvents(t *testing.T) {
	f := newFixture(t)
	f.put(t, "a/dem.img", "raster-bytes")
	f.check(t, execArn, "a/dem.img")
	q := &sentQueue{}
	h := NewExecutionFailed(f.cfg, f.store, f.tracker, q, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn)
	ev, _ := json.Marshal(statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/dem.img")))
	out, err := h.HandleInvocation(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := out.(ExecutionFailedOutput); !ok || o.Outcome != EndedClosed || len(q.msgs) != 1 {
		t.Fatalf("%+v, %d messages", out, len(q.msgs))
	}
	if _, err := h.HandleInvocation(context.Background(), json.RawMessage(`{"ResultWriterDetails":{}}`)); err == nil {
		t.Fatal("results without a manifest were accepted")
	}
}
