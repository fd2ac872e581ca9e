package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

const (
	migrateArn = "arn:aws:states:eu-west-1:123456789012:stateMachine:geomigrate-migrate"
	execArn    = "arn:aws:states:eu-west-1:123456789012:execution:geomigrate-migrate:e1"
)

type sentQueue struct {
	mu   sync.Mutex
	msgs []RouteMessage
}

func (q *sentQueue) Send(_ context.Context, body string) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var m RouteMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return "", err
	}
	q.msgs = append(q.msgs, m)
	return "msg-" + string(rune('0'+len(q.msgs))), nil
}

// countedMetrics keeps the total of each metric by name and dimensions.
type countedMetrics struct {
	mu sync.Mutex
	by map[string]float64
}

func (c *countedMetrics) Count(name string, v float64, _ string, dims ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]float64{}
	}
	c.by[name+fmt.Sprint(dims)] += v
}

func (c *countedMetrics) get(key string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[key]
}

func statusEvent(status, errName, input string) ExecutionStatusChange {
	stop := time.Now().UnixMilli()
	ev := ExecutionStatusChange{Version: "0", DetailType: ExecutionStatusChangeDetailType, Source: ExecutionStatusChangeSource,
		Detail: ExecutionStatusDetail{ExecutionArn: execArn, StateMachineArn: migrateArn, Name: "e1", Status: status,
			StartDate: stop - 60_000, StopDate: &stop, Input: &input}}
	if errName != "" {
		ev.Detail.Error = &errName
	}
	return ev
}

func manualInput(key string) string { return `{"bucket":"src","key":"` + key + `","dataset_id":"src"}` }

func TestExecutionFailedClosesTheJobOnce(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		setup       func(t *testing.T, f *fixture) string // returns the job ID to look at ("" none)
		event       ExecutionStatusChange
		want        string
		wantStatus  statestore.Status
		wantMessage bool
	}{
		{"timed out while converting: quarantined, staging deleted, one message", func(t *testing.T, f *fixture) string {
			job, _ := f.stage(t, execArn, "a/dem.img")
			return job.ID
		}, statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/dem.img")), EndedClosed, statestore.Quarantined, true},
		{"aborted in HashCheck's retry: the claim is closed", func(t *testing.T, f *fixture) string {
			return f.check(t, execArn, "a/dem.img").Job.ID
		}, statusEvent(ExecutionAbortedStatus, "", `{"detail":{"bucket":{"name":"src"},"object":{"key":"a/dem.img"}}}`), EndedClosed, statestore.Quarantined, true},
		{"routed failures are Classify's", func(t *testing.T, f *fixture) string {
			return f.check(t, execArn, "a/dem.img").Job.ID
		}, statusEvent(ExecutionFailedStatus, "Routed.DeadLetter", manualInput("a/dem.img")), EndedIgnored, statestore.Processing, false},
		{"a completed job is never overridden", func(t *testing.T, f *fixture) string {
			return f.migrate(t, execArn, "a/dem.img").Job.ID
		}, statusEvent(ExecutionFailedStatus, "States.Runtime", manualInput("a/dem.img")), EndedLeftAlone, statestore.Completed, false},
		{"a job another execution took over is left alone", func(t *testing.T, f *fixture) string {
			id := f.check(t, execArn, "a/dem.img").Job.ID
			if err := f.tracker.Release(ctx, id, execArn, "test"); err != nil {
				t.Fatal(err)
			}
			f.check(t, "arn:other", "a/dem.img")
			return id
		}, statusEvent(ExecutionTimedOutStatus, "States.Timeout", manualInput("a/dem.img")), EndedUnclaimed, statestore.Processing, true},
		{"classified but the queue never took the message: sent to the DLQ", func(t *testing.T, f *fixture) string {
			hc := f.check(t, execArn, "a/dem.img")
			if _, err := f.classify.Handle(ctx, ClassifyInput{Source: hc.Source, Job: hc.Job, Context: inv(execArn, 0),
				Error: CaughtError{"DataError", lambdaCauseOf(t, "DataError", "MissingCRS: none [attempt 1]")}}); err != nil {
				t.Fatal(err)
			}
			return hc.Job.ID
		}, statusEvent(ExecutionFailedStatus, "Routing.Failed", manualInput("a/dem.img")), EndedRouted, statestore.Remedial, true},
		{"ended before any claim: the source gets a record and a message", func(t *testing.T, f *fixture) string {
			return "src:unhashed:src/a/dem.img"
		}, statusEvent(ExecutionAbortedStatus, "", `{"Records":[{"s3":{"bucket":{"name":"src"},"object":{"key":"a/dem.img"}}}]}`), EndedUnclaimed, statestore.Quarantined, true},
		{"another state machine's execution", func(t *testing.T, f *fixture) string { return "" },
			func() ExecutionStatusChange {
				ev := statusEvent(ExecutionTimedOutStatus, "", manualInput("a/dem.img"))
				ev.Detail.StateMachineArn = migrateArn + "-other"
				return ev
			}(), EndedIgnored, "", false},
		{"an input that names no source", func(t *testing.T, f *fixture) string { return "" },
			statusEvent(ExecutionFailedStatus, "Input.Unrecognized", `{"key":"k"}`), EndedIgnored, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			bundles := bundleWriter(t, f.store)
			f.classify.WithStagingCleanup(f.store, f.cfg).WithQuarantine(bundles)
			f.put(t, "a/dem.img", "raster-bytes")
			id := tt.setup(t, f)
			q := &sentQueue{}
			metrics := &countedMetrics{}
			h := NewExecutionFailed(f.cfg, f.store, f.tracker, q, slog.New(slog.DiscardHandler)).ForStateMachine(migrateArn).WithQuarantine(bundles).WithMetrics(metrics)
			out, err := h.Handle(ctx, tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != tt.want {
				t.Fatalf("outcome %s (%s), want %s", out.Outcome, out.Reason, tt.want)
			}
			if got := len(q.msgs) == 1; got != tt.wantMessage || len(q.msgs) > 1 {
				t.Fatalf("%d messages, want message: %v", len(q.msgs), tt.wantMessage)
			}
			if tt.wantMessage {
				m := q.msgs[0]
				if m.Execution != execArn || m.Route != RouteDeadLetter || m.Replay.Key != "a/dem.img" || m.Replay.Bucket != "src" || m.Version != 1 || m.Hint == "" {
					t.Errorf("message %+v", m)
				}
				if tt.want != EndedUnclaimed && m.JobID != id {
					t.Errorf("message job %s, want %s", m.JobID, id)
				}
				man := readManifest(t, f.store, m.Bundle)
				if man.JobID != m.JobID || man.Error.Route != RouteDeadLetter || man.Error.Error != m.Error ||
					!man.Copied || man.Input.Key != "a/dem.img" || out.Bundle != m.Bundle {
					t.Errorf("bundle %s: %+v (output %+v)", m.Bundle, man, out)
				}
			}
			if id != "" {
				rec, err := f.tracker.Get(ctx, id)
				if err != nil || rec.Status != tt.wantStatus {
					t.Fatalf("record %s: %+v %v, want %s", id, rec.Status, err, tt.wantStatus)
				}
				if rec.Status.Terminal() && !rec.LeaseUntil.IsZero() {
					t.Errorf("lease still held until %s", rec.LeaseUntil)
				}
			}
			if tt.want == EndedClosed {
				if left := staged(f); len(left) != 0 {
					t.Errorf("staging left: %v", left)
				}
			}
			// The same event again: nothing more.
			again, err := h.Handle(ctx, tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.msgs) > 1 {
				t.Fatalf("second delivery (%s) sent another message", again.Outcome)
			}
			if tt.wantMessage && again.Outcome != EndedAlreadyHandled {
				t.Errorf("second delivery: %s, want %s", again.Outcome, EndedAlreadyHandled)
			}
			// A dead-lettered job ends once in the fallback rates, under
			// its message's tier; nothing else counts, nor a job Classify
			// routed (and counted) before its message was lost.
			ended, routed := metrics.get(MetricJobsEnded+"[]"), 0.0
			if tt.wantMessage {
				routed = metrics.get(MetricJobsRouted + "[Tier " + q.msgs[0].Tier + "]")
				if out.Tier != q.msgs[0].Tier {
					t.Errorf("output tier %q, message tier %q", out.Tier, q.msgs[0].Tier)
				}
			}
			if want := map[bool]float64{true: 1, false: 0}[tt.wantMessage && tt.want != EndedRouted]; ended != want || routed != want {
				t.Errorf("JobsEnded %v, JobsRouted %v, want %v each", ended, routed, want)
			}
		})
	}
}

// TestExecutionFailedNeverClosesAFreshClaim: an event that names a job by
// ID (the local runner) but whose lease is another execution's now.
func TestExecutionFailedKnownJobOfAnotherHolder(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, "x.img", "x")
	id := f.check(t, "arn:other", "x.img").Job.ID
	q := &sentQueue{}
	h := NewExecutionFailed(f.cfg, f.store, f.tracker, q, nil)
	out, err := h.Close(ctx, EndedExecution{Execution: execArn, Status: ExecutionAbortedStatus, Source: Source{Bucket: "src", Key: "x.img"}, JobID: id, StoppedAt: time.Now()})
	if err != nil || out.Outcome != EndedLeftAlone || len(q.msgs) != 0 {
		t.Fatalf("%+v %v, %d messages", out, err, len(q.msgs))
	}
	if rec, _ := f.tracker.Get(ctx, id); rec.Status != statestore.Processing || rec.LeaseOwner != "arn:other" {
		t.Fatalf("record changed: %+v", rec)
	}
}

func TestSourceFromExecutionInput(t *testing.T) {
	for in, want := range map[string]Source{
		`{"detail":{"bucket":{"name":"b"},"object":{"key":"dir/a+b%C3%BC.tif"}}}`:  {Bucket: "b", Key: "dir/a bü.tif", KeyEncoding: "plain", DatasetID: "b"},
		`{"Records":[{"s3":{"bucket":{"name":"b"},"object":{"key":"x+y.gpkg"}}}]}`: {Bucket: "b", Key: "x y.gpkg", KeyEncoding: "plain", DatasetID: "b"},
		`{"bucket":"b","key":"a+b.tif","dataset_id":"ds"}`:                         {Bucket: "b", Key: "a+b.tif", KeyEncoding: "plain", DatasetID: "ds"},
	} {
		got, ok := SourceFromExecutionInput([]byte(in))
		if !ok || got != want {
			t.Errorf("%s → %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{`{}`, `{"key":"k"}`, `not json`, `{"Records":[]}`} {
		if _, ok := SourceFromExecutionInput([]byte(in)); ok {
			t.Errorf("%s accepted", in)
		}
	}
}
