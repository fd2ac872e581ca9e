// Package jsonlqueue is a queue in an append-only JSON Lines file, the local
// stand-in for the SQS remediation and dead-letter queues. Each message is
// one line {"id","sent_at","body"}; deleting (acknowledging) a received
// message appends a line {"deleted":"<id>","at":…}, so an acknowledgement is
// as durable as a send and the file stays append-only. Readers skip deleted
// messages.
//
// Receive follows SQS (see package queue): a received message is hidden for
// its visibility timeout and comes back unless deleted. Visibility is kept by
// the Queue value, not in the file: another process (or a later run) sees
// every message not deleted. The local backends admit one process per state
// directory, so one consumer at a time is what happens.
//
// Send appends under a mutex (goroutines) and an flock (processes) on a file
// opened O_APPEND, and fsyncs before returning, so an acknowledged message
// survives a crash and concurrent senders never interleave. A sender that
// crashed mid-line leaves a torn line; the next Send terminates it first so
// it cannot swallow the next message, and readers skip it and count it.
package jsonlqueue

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/filelock"
	"github.com/geomigrate/geomigrate/internal/queue"
)

// Queue is one JSONL file. It is safe for concurrent use, and several
// processes may send to the same file.
type Queue struct {
	path string
	now  func() time.Time

	mu       sync.Mutex
	f        *os.File
	hidden   map[string]time.Time // message ID → visible again at
	receives map[string]int       // message ID → receipts by this Queue
}

var (
	_ queue.Queue  = (*Queue)(nil)
	_ queue.Reader = (*Queue)(nil)
)

// Open opens (creating, with its directory, when needed) the queue file.
func Open(path string) (*Queue, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fault.FromOS("jsonlqueue.Open: "+path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fault.FromOS("jsonlqueue.Open: "+path, err)
	}
	return &Queue{path: path, f: f, now: time.Now, hidden: map[string]time.Time{}, receives: map[string]int{}}, nil
}

// Path returns the queue file.
func (q *Queue) Path() string { return q.path }

// Close closes the file; Send fails afterwards, ReadAll still works.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f == nil {
		return nil
	}
	err := q.f.Close()
	q.f = nil
	if err != nil {
		return fmt.Errorf("jsonlqueue.Close: %s: %w", q.path, err)
	}
	return nil
}

// Send appends a message and returns its ID once it is on disk.
func (q *Queue) Send(ctx context.Context, body string) (string, error) {
	where := "jsonlqueue.Send: " + q.path
	msg := queue.Message{ID: newUUID(), SentAt: q.now().UTC(), Body: body}
	if err := q.append(ctx, where, msg); err != nil {
		return "", err
	}
	return msg.ID, nil
}

// deletion is the line that acknowledges a message.
type deletion struct {
	Deleted string    `json:"deleted"`
	At      time.Time `json:"at"`
}

// append writes v as one line, under the file lock, and fsyncs.
func (q *Queue) append(ctx context.Context, where string, v any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("%s: %w", where, err)
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f == nil {
		return fault.Systemic(where, errors.New("queue is closed"))
	}
	if err := filelock.Lock(ctx, q.f); err != nil {
		return fault.FromOS(where+": lock", err)
	}
	defer filelock.Unlock(q.f) //nolint:errcheck // closing releases it anyway
	if err := terminateTornLine(q.f); err != nil {
		return fault.FromOS(where, err)
	}
	if _, err := q.f.Write(buf.Bytes()); err != nil {
		return fault.FromOS(where, err)
	}
	if err := q.f.Sync(); err != nil {
		return fault.FromOS(where, err)
	}
	return nil
}

// Receive returns up to max messages, oldest first, that are neither
// deleted nor hidden by an earlier Receive of this Queue, and hides them for
// visibility.
func (q *Queue) Receive(ctx context.Context, max int, visibility time.Duration) ([]queue.Delivery, error) {
	where := "jsonlqueue.Receive: " + q.path
	if max < 1 || max > queue.MaxReceive {
		return nil, fmt.Errorf("%s: max %d: want 1 to %d", where, max, queue.MaxReceive)
	}
	if visibility < 0 {
		return nil, fmt.Errorf("%s: negative visibility %s", where, visibility)
	}
	var out []queue.Delivery
	errFull := errors.New("full")
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	_, err := Scan(ctx, q.path, func(m queue.Message) error {
		if until, ok := q.hidden[m.ID]; ok && now.Before(until) {
			return nil
		}
		q.receives[m.ID]++
		q.hidden[m.ID] = now.Add(visibility)
		out = append(out, queue.Delivery{Message: m, Receipt: receipt(m.ID, q.receives[m.ID]), ReceiveCount: q.receives[m.ID]})
		if len(out) == max {
			return errFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, err
	}
	return out, nil
}

// receipt is the message ID and which receipt this is: like SQS's receipt
// handles, one per receive.
func receipt(id string, n int) string { return fmt.Sprintf("%s#%d", id, n) }

func messageID(where, r string) (string, error) {
	i := strings.LastIndexByte(r, '#')
	if i <= 0 {
		return "", fmt.Errorf("%s: %q is not a receipt of this queue", where, r)
	}
	return r[:i], nil
}

// Delete acknowledges a received message durably (an fsynced line); it is
// never delivered again, by this Queue or any other on the file.
func (q *Queue) Delete(ctx context.Context, r string) error {
	where := "jsonlqueue.Delete: " + q.path
	id, err := messageID(where, r)
	if err != nil {
		return err
	}
	if err := q.append(ctx, where, deletion{Deleted: id, At: q.now().UTC()}); err != nil {
		return err
	}
	q.mu.Lock()
	delete(q.hidden, id)
	q.mu.Unlock()
	return nil
}

// ChangeVisibility hides a received message for d from now (zero: visible
// at once).
func (q *Queue) ChangeVisibility(ctx context.Context, r string, d time.Duration) error {
	where := "jsonlqueue.ChangeVisibility: " + q.path
	id, err := messageID(where, r)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("%s: negative visibility %s", where, d)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if d == 0 {
		delete(q.hidden, id)
	} else {
		q.hidden[id] = q.now().Add(d)
	}
	return nil
}

// Depth counts the messages not deleted: in flight are those this Queue
// received and still hides.
func (q *Queue) Depth(ctx context.Context) (queue.Depth, error) {
	var d queue.Depth
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	_, err := Scan(ctx, q.path, func(m queue.Message) error {
		if until, ok := q.hidden[m.ID]; ok && now.Before(until) {
			d.InFlight++
		} else {
			d.Visible++
		}
		return nil
	})
	return d, err
}

// terminateTornLine appends '\n' when the file does not end with one (a
// sender died mid-line), so the torn fragment stays a line of its own.
func terminateTornLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

// Stats describes what a read found.
type Stats struct {
	Messages int // delivered to the callback
	Deleted  int // skipped: acknowledged by Delete
	// Torn counts lines skipped because they are not a whole message: an
	// unterminated last line (a crashed or still-writing sender) or a
	// line that does not decode (a torn line a later Send terminated).
	Torn int
}

// ReadAll calls fn for every whole message in file order, skipping torn
// lines. An error from fn stops the read and is returned as is.
func (q *Queue) ReadAll(ctx context.Context, fn func(queue.Message) error) error {
	_, err := q.Scan(ctx, fn)
	return err
}

// Scan is ReadAll that also reports how many messages it delivered and how
// many torn lines it skipped.
func (q *Queue) Scan(ctx context.Context, fn func(queue.Message) error) (Stats, error) {
	return Scan(ctx, q.path, fn)
}

// Scan reads the queue file at path without opening it for writing (for
// `geomigrate status` and replay), delivering the messages not deleted. A
// missing file is an empty queue. It reads the file twice: deletions follow
// the messages they acknowledge.
func Scan(ctx context.Context, path string, fn func(queue.Message) error) (Stats, error) {
	deleted := map[string]bool{}
	st, err := scanLines(ctx, path, func(l line) error {
		if l.Deleted != "" {
			deleted[l.Deleted] = true
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	st = Stats{}
	return scanLines(ctx, path, func(l line) error {
		switch {
		case l.Deleted != "":
			return nil
		case deleted[l.ID]:
			st.Deleted++
			return nil
		}
		st.Messages++
		return fn(l.Message)
	}, &st)
}

// line is either a message or a deletion.
type line struct {
	queue.Message
	Deleted string `json:"deleted,omitempty"`
}

// scanLines calls fn for every whole line, counting torn ones into the
// Stats it returns (or into into[0] when given).
func scanLines(ctx context.Context, path string, fn func(line) error, into ...*Stats) (Stats, error) {
	where := "jsonlqueue.ReadAll: " + path
	st := &Stats{}
	if len(into) > 0 {
		st = into[0]
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return *st, nil // nothing was ever sent
	}
	if err != nil {
		return *st, fault.FromOS(where, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return *st, fmt.Errorf("%s: %w", where, err)
		}
		raw, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(raw)) > 0 {
				st.Torn++ // unterminated: not (yet) a whole message
			}
			return *st, nil
		}
		if err != nil {
			return *st, fault.FromOS(where, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l line
		if json.Unmarshal(raw, &l) != nil || (l.ID == "" && l.Deleted == "") {
			st.Torn++
			continue
		}
		if err := fn(l); err != nil {
			return *st, err
		}
	}
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
