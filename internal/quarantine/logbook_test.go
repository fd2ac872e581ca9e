package quarantine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/quarantine"
)

// TestLogBook: records of an execution are kept whatever the wrapped
// handler's level, in order, with the attributes of With and WithGroup;
// the wrapped handler still gets what it asked for.
func TestLogBook(t *testing.T) {
	var out bytes.Buffer
	book := quarantine.NewLogBook(slog.LevelInfo)
	base := slog.New(book.Handler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})))
	a := base.With(slog.String("execution", "e1"), slog.Int("attempt", 2))
	a.Debug("below the book's level")
	a.Info("hashcheck", slog.String("decision", "convert"))
	a.WithGroup("g").Warn("convert failed", slog.Any("error", errors.New("boom")))
	base.Info("routed", slog.String("execution", "e2"))
	base.Info("no execution")
	a.Error("shown", slog.String("state", "Classify"))

	lines, dropped := book.Take("e1")
	if dropped != 0 || len(lines) != 3 {
		t.Fatalf("kept %d lines (dropped %d): %q", len(lines), dropped, lines)
	}
	tests := []struct {
		line int
		want map[string]any
	}{
		{0, map[string]any{"msg": "hashcheck", "level": "INFO", "execution": "e1", "attempt": 2.0, "decision": "convert"}},
		{1, map[string]any{"msg": "convert failed", "level": "WARN", "g.error": "boom"}},
		{2, map[string]any{"msg": "shown", "level": "ERROR", "state": "Classify"}},
	}
	for _, tt := range tests {
		var got map[string]any
		if err := json.Unmarshal(lines[tt.line], &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", tt.line, k, got[k], v, lines[tt.line])
			}
		}
	}
	if again, _ := book.Take("e1"); again != nil {
		t.Errorf("Take forgets: got %q", again)
	}
	if l, _ := book.Take("e2"); len(l) != 1 {
		t.Errorf("e2: %q", l)
	}
	if s := out.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, "shown") {
		t.Errorf("the wrapped handler got %q, want the error line only", s)
	}
}

// TestLogBookIsBounded: a ring keeps the newest lines of an execution and
// counts the dropped ones; the oldest executions are forgotten first.
func TestLogBookIsBounded(t *testing.T) {
	book := quarantine.NewLogBook(nil)
	log := slog.New(book.Handler(slog.DiscardHandler))
	n := quarantine.DefaultLinesPerExecution + 7
	for i := range n {
		log.Info(fmt.Sprint(i), slog.String("execution", "e"))
	}
	lines, dropped := book.Take("e")
	if len(lines) != quarantine.DefaultLinesPerExecution || dropped != 7 {
		t.Fatalf("%d lines, %d dropped", len(lines), dropped)
	}
	if !strings.Contains(string(lines[0]), `"msg":"7"`) || !strings.Contains(string(lines[len(lines)-1]), fmt.Sprintf(`"msg":"%d"`, n-1)) {
		t.Errorf("not the newest lines in order: %s … %s", lines[0], lines[len(lines)-1])
	}
	for i := range quarantine.DefaultExecutions + 1 {
		log.Info("x", slog.String("execution", fmt.Sprint("e", i)))
	}
	if l, _ := book.Take("e0"); l != nil {
		t.Errorf("the oldest execution was kept beyond the bound")
	}
	if l, _ := book.Take(fmt.Sprint("e", quarantine.DefaultExecutions)); len(l) != 1 {
		t.Errorf("the newest execution was lost")
	}
}

// TestLogBookBoundsBytes: past DefaultMaxBytes over all executions, the
// oldest executions are forgotten, never the one being written.
func TestLogBookBoundsBytes(t *testing.T) {
	book := quarantine.NewLogBook(nil)
	log := slog.New(book.Handler(slog.DiscardHandler))
	big := strings.Repeat("x", 100<<10)
	n := quarantine.DefaultMaxBytes/len(big) + 10
	for i := range n {
		log.Info("line", slog.String("execution", fmt.Sprint("e", i)), slog.String("payload", big))
	}
	if l, _ := book.Take("e0"); l != nil {
		t.Error("the oldest execution outlived the byte bound")
	}
	if l, _ := book.Take(fmt.Sprint("e", n-1)); len(l) != 1 {
		t.Error("the newest execution was forgotten")
	}
}
