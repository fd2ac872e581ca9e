package jsonlqueue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/queue/queuetest"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("JSONLQUEUE_HELPER"); path != "" {
		os.Exit(helperMain(path))
	}
	os.Exit(m.Run())
}

func openQueue(t *testing.T) (*jsonlqueue.Queue, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queues", "dlq.jsonl")
	q, err := jsonlqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q, path
}

func readAll(t *testing.T, q *jsonlqueue.Queue) ([]queue.Message, jsonlqueue.Stats) {
	t.Helper()
	var msgs []queue.Message
	st, err := q.Scan(context.Background(), func(m queue.Message) error {
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return msgs, st
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRoundTrip(t *testing.T) {
	q, path := openQueue(t)
	ctx := context.Background()
	bodies := []string{
		`{"source":{"bucket":"raw","key":"a.tif"},"tier":"data_specific","error":"DataError","cause":"MissingCRS: no CRS"}`,
		"multi\nline\r\nbody with \"quotes\" and <html> & ünïcødé",
		"",
		strings.Repeat("x", 1<<20), // longer than the reader's buffer
	}
	before := time.Now().Add(-time.Second)
	var ids []string
	for _, b := range bodies {
		id, err := q.Send(ctx, b)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if !uuidV4.MatchString(id) {
			t.Errorf("ID %q is not a UUIDv4", id)
		}
		ids = append(ids, id)
	}
	msgs, st := readAll(t, q)
	if st.Messages != len(bodies) || st.Torn != 0 || len(msgs) != len(bodies) {
		t.Fatalf("read %d messages, stats %+v; want %d", len(msgs), st, len(bodies))
	}
	for i, m := range msgs {
		if m.ID != ids[i] || m.Body != bodies[i] {
			t.Errorf("message %d = %s %.40q, want %s %.40q", i, m.ID, m.Body, ids[i], bodies[i])
		}
		if m.SentAt.Before(before) || m.SentAt.After(time.Now().Add(time.Second)) || m.SentAt.Location() != time.UTC {
			t.Errorf("message %d sent_at = %v", i, m.SentAt)
		}
	}
	// The file holds one JSON object per line with exactly the documented keys.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != len(bodies) {
		t.Fatalf("%d lines for %d messages", len(lines), len(bodies))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[0]), &fields); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(fields))
	if !slices.Equal(keys, []string{"body", "id", "sent_at"}) {
		t.Errorf("line keys = %v", keys)
	}
	// Reopening appends after what is there.
	q.Close()
	q2, err := jsonlqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q2.Close()
	if _, err := q2.Send(ctx, "after reopen"); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := readAll(t, q2); len(msgs) != len(bodies)+1 || msgs[len(bodies)].Body != "after reopen" {
		t.Errorf("after reopen: %d messages", len(msgs))
	}
}

func TestTornLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail string // what a crashed sender left
	}{
		{"half a message", `{"id":"4b1c`},
		{"whole message without newline", `{"id":"x","sent_at":"2025-01-01T00:00:00Z","body":"b"}`},
		{"garbage", "\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, path := openQueue(t)
			ctx := context.Background()
			if _, err := q.Send(ctx, "one"); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tc.tail)
			f.Close()

			msgs, st := readAll(t, q)
			if len(msgs) != 1 || st.Torn != 1 || st.Messages != 1 {
				t.Errorf("with a torn tail: %d messages, stats %+v; want 1 message, 1 torn", len(msgs), st)
			}
			// The next Send terminates the torn line instead of joining it.
			if _, err := q.Send(ctx, "two"); err != nil {
				t.Fatal(err)
			}
			msgs, st = readAll(t, q)
			got := []string{}
			for _, m := range msgs {
				got = append(got, m.Body)
			}
			want := []string{"one", "two"}
			wantTorn := 1
			if strings.HasSuffix(tc.tail, "}") { // a whole message, now terminated, counts
				want, wantTorn = []string{"one", "b", "two"}, 0
			}
			if !slices.Equal(got, want) || st.Torn != wantTorn {
				t.Errorf("after the next Send: %q, stats %+v; want %q with %d torn", got, st, want, wantTorn)
			}
		})
	}
}

func TestReadStopsOnError(t *testing.T) {
	q, _ := openQueue(t)
	for i := range 3 {
		if _, err := q.Send(context.Background(), strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := q.ReadAll(context.Background(), func(queue.Message) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("ReadAll = %v after %d, want the callback's error after 1", err, n)
	}
}

func TestMissingFileIsEmpty(t *testing.T) {
	st, err := jsonlqueue.Scan(context.Background(), filepath.Join(t.TempDir(), "none.jsonl"), func(queue.Message) error {
		t.Error("callback called")
		return nil
	})
	if err != nil || st != (jsonlqueue.Stats{}) {
		t.Errorf("Scan of a missing file = %+v, %v", st, err)
	}
}

func TestSendAfterCloseFails(t *testing.T) {
	q, _ := openQueue(t)
	q.Close()
	if _, err := q.Send(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "jsonlqueue.Send") {
		t.Errorf("Send after Close = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q2, _ := openQueue(t)
	if _, err := q2.Send(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Send with a cancelled context = %v", err)
	}
}

// check verifies that every sent body arrived exactly once and IDs are
// unique.
func check(t *testing.T, msgs []queue.Message, want map[string]bool) {
	t.Helper()
	ids := map[string]bool{}
	got := map[string]bool{}
	for _, m := range msgs {
		if ids[m.ID] {
			t.Errorf("duplicate ID %s", m.ID)
		}
		ids[m.ID] = true
		if got[m.Body] {
			t.Errorf("duplicate body %s", m.Body)
		}
		got[m.Body] = true
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct messages, want %d", len(got), len(want))
	}
	for b := range want {
		if !got[b] {
			t.Errorf("lost %s", b)
		}
	}
}

func TestConcurrentSenders(t *testing.T) {
	q, _ := openQueue(t)
	const senders, each = 16, 40
	var wg sync.WaitGroup
	want := map[string]bool{}
	for s := range senders {
		for i := range each {
			want[fmt.Sprintf("s%02d-m%02d %s", s, i, strings.Repeat("p", 2000))] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := q.Send(context.Background(), fmt.Sprintf("s%02d-m%02d %s", s, i, strings.Repeat("p", 2000))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	msgs, st := readAll(t, q)
	if st.Torn != 0 {
		t.Errorf("%d torn lines from concurrent senders", st.Torn)
	}
	check(t, msgs, want)
}

func TestCrossProcessSenders(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	_, path := openQueue(t)
	const procs, each = 4, 50
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "JSONLQUEUE_HELPER="+path, fmt.Sprintf("HELPER_ID=%d", p), fmt.Sprintf("HELPER_N=%d", each))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("sender process %d: %v: %s", i, err, outs[i])
		}
	}
	want := map[string]bool{}
	for p := range procs {
		for i := range each {
			want[helperBody(p, i)] = true
		}
	}
	var msgs []queue.Message
	st, err := jsonlqueue.Scan(context.Background(), path, func(m queue.Message) error {
		msgs = append(msgs, m)
		return nil
	})
	if err != nil || st.Torn != 0 {
		t.Fatalf("Scan = %+v, %v", st, err)
	}
	check(t, msgs, want)
}

func helperBody(p, i int) string {
	return fmt.Sprintf("proc%d-msg%03d-%s", p, i, strings.Repeat("z", 5000))
}

func helperMain(path string) int {
	q, err := jsonlqueue.Open(path)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer q.Close()
	p, _ := strconv.Atoi(os.Getenv("HELPER_ID"))
	n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
	for i := range n {
		if _, err := q.Send(context.Background(), helperBody(p, i)); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	return 0
}

func TestConformance(t *testing.T) {
	queuetest.RunQueueTests(t, queuetest.Harness{
		New: func(t *testing.T) queue.Queue {
			q, err := jsonlqueue.Open(filepath.Join(t.TempDir(), "q.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q.Close() })
			return q
		},
		Reopen: func(t *testing.T, q queue.Queue) queue.Queue {
			r, err := jsonlqueue.Open(q.(*jsonlqueue.Queue).Path())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		},
	})
}

// TestDeleteAppendsADurableLine: an acknowledgement is a line of its own in
// the file; readers skip the deleted message (and count it), a torn line
// stays torn, and a receipt from elsewhere is refused.
func TestDeleteAppendsADurableLine(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.jsonl")
	q, err := jsonlqueue.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	keep, _ := q.Send(ctx, "keep")
	gone, _ := q.Send(ctx, "gone")
	ds, err := q.Receive(ctx, 10, time.Minute)
	if err != nil || len(ds) != 2 {
		t.Fatalf("Receive = %v, %v", ds, err)
	}
	for _, d := range ds {
		if d.ID == gone {
			if err := q.Delete(ctx, d.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"torn","bo`) // a sender that died mid-line
	f.Close()

	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], `"deleted":"`+gone+`"`) {
		t.Fatalf("file lines %q, want two messages, a deletion, a torn line", lines)
	}
	var ids []string
	st, err := jsonlqueue.Scan(ctx, path, func(m queue.Message) error { ids = append(ids, m.ID); return nil })
	if err != nil || !slices.Equal(ids, []string{keep}) || st.Messages != 1 || st.Deleted != 1 || st.Torn != 1 {
		t.Errorf("Scan = %v %+v %v, want only %s, one deleted, one torn", ids, st, err, keep)
	}
	for _, bad := range []string{"", "no-hash", "#1"} {
		if err := q.Delete(ctx, bad); err == nil {
			t.Errorf("Delete(%q) accepted", bad)
		}
	}
}
