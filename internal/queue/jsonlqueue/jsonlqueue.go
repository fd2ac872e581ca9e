// Package jsonlqueue is a queue in an append-only JSON Lines file, the local
// stand-in for the SQS remediation and dead-letter queues. Each message is
// one line {"id","sent_at","body"}.
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

	mu sync.Mutex
	f  *os.File
}

var (
	_ queue.Sender = (*Queue)(nil)
	_ queue.Reader = (*Queue)(nil)
)

// Open opens (creating, with its directory, when needed) the queue file.
func Open(path string) (*Queue, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fault.FromOS("jsonlqueue.Open "+path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fault.FromOS("jsonlqueue.Open "+path, err)
	}
	return &Queue{path: path, f: f, now: time.Now}, nil
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
		return fmt.Errorf("jsonlqueue.Close %s: %w", q.path, err)
	}
	return nil
}

// Send appends a message and returns its ID once it is on disk.
func (q *Queue) Send(ctx context.Context, body string) (string, error) {
	where := "jsonlqueue.Send " + q.path
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	msg := queue.Message{ID: newUUID(), SentAt: q.now().UTC(), Body: body}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil { // Encode ends the line with '\n'
		return "", fmt.Errorf("%s: %w", where, err)
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.f == nil {
		return "", fault.Systemic(where, errors.New("queue is closed"))
	}
	if err := filelock.Lock(ctx, q.f); err != nil {
		return "", fault.FromOS(where+": lock", err)
	}
	defer filelock.Unlock(q.f) //nolint:errcheck // closing releases it anyway
	if err := terminateTornLine(q.f); err != nil {
		return "", fault.FromOS(where, err)
	}
	if _, err := q.f.Write(buf.Bytes()); err != nil {
		return "", fault.FromOS(where, err)
	}
	if err := q.f.Sync(); err != nil {
		return "", fault.FromOS(where, err)
	}
	return msg.ID, nil
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
// `geomigrate status` and replay). A missing file is an empty queue.
func Scan(ctx context.Context, path string, fn func(queue.Message) error) (Stats, error) {
	where := "jsonlqueue.ReadAll " + path
	var st Stats
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil // nothing was ever sent
	}
	if err != nil {
		return st, fault.FromOS(where, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("%s: %w", where, err)
		}
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				st.Torn++ // unterminated: not (yet) a whole message
			}
			return st, nil
		}
		if err != nil {
			return st, fault.FromOS(where, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m queue.Message
		if json.Unmarshal(line, &m) != nil || m.ID == "" {
			st.Torn++
			continue
		}
		st.Messages++
		if err := fn(m); err != nil {
			return st, err
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
