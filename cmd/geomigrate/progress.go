package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

// progress shows a one-line bar on a terminal and a log line per file
// otherwise (CI logs, pipes), where carriage returns would be noise.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	total  int
	bar    bool
	totals localrun.Totals
	start  time.Time
}

func newProgress(w io.Writer, total int, bar bool) *progress {
	return &progress{w: w, total: total, bar: bar, start: time.Now()}
}

func (p *progress) done(o localrun.Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals.Add(o)
	t := p.totals
	if !p.bar {
		detail := o.Reason
		switch {
		case o.Status == localrun.StatusCompleted:
			detail = strings.Join(o.Outputs, ", ") + " (" + localrun.HumanBytes(o.BytesOut) + ")"
		case o.Code != "":
			detail = o.Code + ": " + o.Message
		case o.Error != "":
			detail = o.Error + ": " + o.Message
		}
		detail = localrun.OneLine(detail, 200)
		if n := len(o.Warnings); n > 0 {
			// At the default log level the handlers' warnings are not
			// shown: the count (and the first) is, the report has them all.
			detail += fmt.Sprintf("  warnings: %d (%s)", n, localrun.OneLine(o.Warnings[0], 120))
		}
		fmt.Fprintf(p.w, "[%d/%d] %-11s %s/%s %s %s\n", t.Files, p.total, o.Status, o.Bucket, localrun.QuoteKey(o.Key), detail, o.Duration.Round(time.Millisecond))
		return
	}
	const width = 30
	filled := 0
	if p.total > 0 {
		filled = width * t.Files / p.total
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  completed %d  skipped %d  ignored %d  remediation %d  dlq %d  failed %d  warned %d  %s ",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), t.Files, p.total,
		t.Completed, t.Skipped, t.Ignored, t.Remediation, t.DeadLetter, t.Failed, t.Warned, time.Since(p.start).Round(time.Second))
}

func (p *progress) finish() {
	if p.bar {
		fmt.Fprintln(p.w)
	}
}
