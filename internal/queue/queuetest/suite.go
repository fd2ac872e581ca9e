// Package queuetest is the conformance suite every queue adapter runs: the
// SQS semantics package queue documents (receive hides, delete
// acknowledges, what is not deleted comes back), which replay relies on.
package queuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/queue"
)

// Harness opens the queues under test.
type Harness struct {
	// New returns an empty queue.
	New func(t *testing.T) queue.Queue
	// Reopen returns another handle on q's queue, as a new process would
	// open it (jsonlqueue: Open of the same file; SQS: a new client).
	Reopen func(t *testing.T, q queue.Queue) queue.Queue
}

// Visibility timeouts are whole seconds on SQS.
const shortVisibility = time.Second

// RunQueueTests runs the suite.
func RunQueueTests(t *testing.T, h Harness) {
	t.Run("SendReceiveDelete", func(t *testing.T) { testSendReceiveDelete(t, h) })
	t.Run("UnacknowledgedComeBack", func(t *testing.T) { testUnacknowledgedComeBack(t, h) })
	t.Run("AcknowledgementIsDurable", func(t *testing.T) { testAcknowledgementIsDurable(t, h) })
	t.Run("Depth", func(t *testing.T) { testDepth(t, h) })
	t.Run("BatchLimits", func(t *testing.T) { testBatchLimits(t, h) })
}

// receiveAll receives until want messages arrived (SQS may return fewer
// than asked per call) or a receive comes back empty.
func receiveAll(t *testing.T, q queue.Queue, want int, visibility time.Duration) []queue.Delivery {
	t.Helper()
	var got []queue.Delivery
	for len(got) < want {
		ds, err := q.Receive(context.Background(), min(queue.MaxReceive, want-len(got)), visibility)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(ds) == 0 {
			break
		}
		got = append(got, ds...)
	}
	return got
}

func send(t *testing.T, q queue.Queue, bodies ...string) []string {
	t.Helper()
	ids := make([]string, len(bodies))
	for i, b := range bodies {
		id, err := q.Send(context.Background(), b)
		if err != nil || id == "" {
			t.Fatalf("Send %q = %q, %v", b, id, err)
		}
		ids[i] = id
	}
	return ids
}

func depth(t *testing.T, q queue.Queue) queue.Depth {
	t.Helper()
	d, err := q.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	return d
}

func testSendReceiveDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	q := h.New(t)
	bodies := []string{`{"key":"a.tif","note":"line\nbreak"}`, "zürich ✓", `{"replay":{"bucket":"b","key":"c d.shp"}}`}
	ids := send(t, q, bodies...)
	got := receiveAll(t, q, len(bodies), time.Minute)
	if len(got) != len(bodies) {
		t.Fatalf("received %d messages, want %d", len(got), len(bodies))
	}
	for _, d := range got {
		i := slices.Index(ids, d.ID)
		if i < 0 {
			t.Errorf("received ID %q, sent %v", d.ID, ids)
			continue
		}
		if d.Body != bodies[i] {
			t.Errorf("body %q, sent %q", d.Body, bodies[i])
		}
		if d.Receipt == "" || d.ReceiveCount != 1 {
			t.Errorf("delivery %+v: want a receipt and receive count 1", d)
		}
		if d.SentAt.IsZero() || time.Since(d.SentAt) > time.Hour {
			t.Errorf("sent at %v", d.SentAt)
		}
	}
	// Received messages are hidden from other receives.
	if again := receiveAll(t, q, 1, time.Minute); len(again) != 0 {
		t.Errorf("received %d hidden message(s)", len(again))
	}
	for _, d := range got {
		if err := q.Delete(ctx, d.Receipt); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if d := depth(t, q); d != (queue.Depth{}) {
		t.Errorf("depth after deleting everything = %+v", d)
	}
	// Deleting twice is not an error (a retried acknowledgement).
	if err := q.Delete(ctx, got[0].Receipt); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func testUnacknowledgedComeBack(t *testing.T, h Harness) {
	ctx := context.Background()
	q := h.New(t)
	ids := send(t, q, "m")
	first := receiveAll(t, q, 1, shortVisibility)
	if len(first) != 1 || first[0].ID != ids[0] {
		t.Fatalf("first receive %+v", first)
	}
	if d := depth(t, q); d != (queue.Depth{InFlight: 1}) {
		t.Errorf("depth while in flight = %+v", d)
	}
	time.Sleep(shortVisibility + 500*time.Millisecond)
	second := receiveAll(t, q, 1, time.Minute)
	if len(second) != 1 || second[0].ID != ids[0] {
		t.Fatalf("after the visibility timeout received %+v, want the message again", second)
	}
	if second[0].ReceiveCount != 2 {
		t.Errorf("receive count %d, want 2", second[0].ReceiveCount)
	}
	// Visibility zero: back at once.
	if err := q.ChangeVisibility(ctx, second[0].Receipt, 0); err != nil {
		t.Fatal(err)
	}
	third := receiveAll(t, q, 1, time.Minute)
	if len(third) != 1 || third[0].ID != ids[0] || third[0].ReceiveCount != 3 {
		t.Fatalf("after ChangeVisibility 0 received %+v", third)
	}
	if err := q.Delete(ctx, third[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if d := depth(t, q); d != (queue.Depth{}) {
		t.Errorf("depth after delete = %+v", d)
	}
}

func testAcknowledgementIsDurable(t *testing.T, h Harness) {
	ctx := context.Background()
	q := h.New(t)
	ids := send(t, q, "keep", "ack")
	got := receiveAll(t, q, 2, time.Minute)
	if len(got) != 2 {
		t.Fatalf("received %d, want 2", len(got))
	}
	for _, d := range got {
		var err error
		if d.ID == ids[1] {
			err = q.Delete(ctx, d.Receipt)
		} else {
			err = q.ChangeVisibility(ctx, d.Receipt, 0) // left for another consumer
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	other := h.Reopen(t, q)
	left := receiveAll(t, other, 2, time.Minute)
	if len(left) != 1 || left[0].ID != ids[0] || left[0].Body != "keep" {
		t.Fatalf("another consumer received %+v, want only the unacknowledged message", left)
	}
}

func testDepth(t *testing.T, h Harness) {
	ctx := context.Background()
	q := h.New(t)
	if d := depth(t, q); d != (queue.Depth{}) {
		t.Errorf("empty queue depth %+v", d)
	}
	send(t, q, "1", "2", "3")
	if d := depth(t, q); d != (queue.Depth{Visible: 3}) {
		t.Errorf("depth after three sends %+v", d)
	}
	got := receiveAll(t, q, 1, time.Minute)
	if len(got) != 1 {
		t.Fatalf("received %d, want 1", len(got))
	}
	if d := depth(t, q); d != (queue.Depth{Visible: 2, InFlight: 1}) {
		t.Errorf("depth with one in flight %+v", d)
	}
	if err := q.Delete(ctx, got[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if d := depth(t, q); d != (queue.Depth{Visible: 2}) {
		t.Errorf("depth after delete %+v", d)
	}
}

func testBatchLimits(t *testing.T, h Harness) {
	ctx := context.Background()
	q := h.New(t)
	for _, bad := range []int{0, queue.MaxReceive + 1} {
		if _, err := q.Receive(ctx, bad, time.Minute); err == nil {
			t.Errorf("Receive(max %d) accepted", bad)
		}
	}
	send(t, q, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")
	ds, err := q.Receive(ctx, queue.MaxReceive, time.Minute)
	if err != nil || len(ds) == 0 || len(ds) > queue.MaxReceive {
		t.Fatalf("Receive(10) of 12 = %d messages, %v", len(ds), err)
	}
	rest := receiveAll(t, q, 12-len(ds), time.Minute)
	if len(ds)+len(rest) != 12 {
		t.Errorf("received %d of 12", len(ds)+len(rest))
	}
	seen := map[string]bool{}
	for _, d := range append(ds, rest...) {
		if seen[d.ID] {
			t.Errorf("message %s delivered twice while hidden", d.ID)
		}
		seen[d.ID] = true
	}
}
