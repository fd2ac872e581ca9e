package quarantine

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// ExecutionAttr is the log attribute that names the execution a record
// belongs to (migration's logFor puts it on every handler line).
const ExecutionAttr = "execution"

// Limits of a LogBook: enough for every line of a job's handlers at info
// level, small enough that a process with many executions in flight keeps a
// bounded amount.
const (
	DefaultLinesPerExecution = 500
	DefaultExecutions        = 1000
	// DefaultMaxBytes bounds the lines kept over all executions: the
	// oldest executions are forgotten first (a Lambda function keeps its
	// book across warm invocations, and only routed executions take
	// theirs).
	DefaultMaxBytes = 8 << 20
)

// LogBook keeps, per execution, the recent structured log records of the
// handlers that run in this process, so that the bundle of a routed job
// holds the lines of its own execution. It wraps the process's slog
// handler: every record still goes where it went (filtered by that
// handler's level), and records at Level or above that name an execution
// are kept as JSON lines in a ring per execution. Locally every handler
// runs in the CLI's process, so the ring holds the whole execution; in a
// Lambda function it holds that function's own records only.
type LogBook struct {
	level    slog.Leveler
	maxLines int
	maxExecs int
	maxBytes int

	mu    sync.Mutex
	rings map[string]*ring
	order []string // executions, oldest first, for eviction
	bytes int      // over all rings
}

type ring struct {
	lines   [][]byte
	next    int
	full    bool
	dropped int
	bytes   int
}

// NewLogBook returns a book keeping records at level and above (nil:
// info).
func NewLogBook(level slog.Leveler) *LogBook {
	if level == nil {
		level = slog.LevelInfo
	}
	return &LogBook{level: level, maxLines: DefaultLinesPerExecution, maxExecs: DefaultExecutions, maxBytes: DefaultMaxBytes, rings: map[string]*ring{}}
}

// Handler wraps next: records go to next as before and are kept in the
// book.
func (b *LogBook) Handler(next slog.Handler) slog.Handler {
	return &bookHandler{book: b, next: next}
}

// Take returns, oldest first, the kept lines of execution and how many
// older ones the ring dropped, and forgets them.
func (b *LogBook) Take(execution string) (lines [][]byte, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rings[execution]
	if !ok {
		return nil, 0
	}
	b.forget(execution)
	if r.full {
		lines = append(append(lines, r.lines[r.next:]...), r.lines[:r.next]...)
	} else {
		lines = r.lines
	}
	return lines, r.dropped
}

// forget drops an execution's ring (b.mu held).
func (b *LogBook) forget(execution string) {
	r, ok := b.rings[execution]
	if !ok {
		return
	}
	b.bytes -= r.bytes
	delete(b.rings, execution)
	for i, e := range b.order {
		if e == execution {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
}

func (b *LogBook) add(execution string, line []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rings[execution]
	if !ok {
		if len(b.order) >= b.maxExecs {
			b.forget(b.order[0])
		}
		r = &ring{}
		b.rings[execution] = r
		b.order = append(b.order, execution)
	}
	b.bytes += len(line)
	r.bytes += len(line)
	if !r.full {
		r.lines = append(r.lines, line)
		if len(r.lines) == b.maxLines {
			r.full, r.next = true, 0
		}
	} else {
		b.bytes -= len(r.lines[r.next])
		r.bytes -= len(r.lines[r.next])
		r.lines[r.next] = line
		r.next = (r.next + 1) % b.maxLines
		r.dropped++
	}
	// Over the byte bound: the oldest other executions go first.
	for b.bytes > b.maxBytes && len(b.order) > 1 && b.order[0] != execution {
		b.forget(b.order[0])
	}
}

type bookHandler struct {
	book   *LogBook
	next   slog.Handler
	attrs  []slog.Attr // with their group prefix applied
	groups string      // "a.b." for WithGroup("a").WithGroup("b")
}

func (h *bookHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.book.level.Level() || h.next.Enabled(ctx, l)
}

func (h *bookHandler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.next.Enabled(ctx, r.Level) {
		err = h.next.Handle(ctx, r)
	}
	if r.Level < h.book.level.Level() {
		return err
	}
	fields := map[string]any{"time": r.Time.UTC().Format(time.RFC3339Nano), "level": r.Level.String(), "msg": r.Message}
	for _, a := range h.attrs {
		put(fields, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		put(fields, h.groups, a)
		return true
	})
	execution, _ := fields[ExecutionAttr].(string)
	if execution == "" {
		return err
	}
	line, merr := json.Marshal(fields)
	if merr != nil {
		return err
	}
	h.book.add(execution, line)
	return err
}

// put flattens a into fields, groups as dotted prefixes.
func put(fields map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			put(fields, p, g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	switch v.Kind() {
	case slog.KindAny:
		if e, ok := v.Any().(error); ok {
			fields[prefix+a.Key] = e.Error()
			return
		}
		fields[prefix+a.Key] = v.Any()
	case slog.KindDuration:
		fields[prefix+a.Key] = v.Duration().String()
	case slog.KindTime:
		fields[prefix+a.Key] = v.Time().UTC().Format(time.RFC3339Nano)
	default:
		fields[prefix+a.Key] = v.Any()
	}
}

func (h *bookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		if h.groups != "" {
			a = slog.Attr{Key: h.groups + a.Key, Value: a.Value}
		}
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *bookHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.groups = h.groups + name + "."
	return &c
}
