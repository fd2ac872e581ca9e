package localrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// Totals counts outcomes and bytes.
type Totals struct {
	Files       int `json:"files"`
	Completed   int `json:"completed"`
	Skipped     int `json:"skipped"`
	Remediation int `json:"remediation"`
	DeadLetter  int `json:"dlq"`
	Failed      int `json:"failed"`
	Ignored     int `json:"ignored"`
	NotStarted  int `json:"not_started"`
	// Warned counts files whose conversion reported warnings.
	Warned   int   `json:"warned"`
	Retries  int   `json:"retries"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Add counts one outcome.
func (t *Totals) Add(o Outcome) {
	t.Files++
	t.Retries += o.Retries
	t.BytesIn += o.BytesIn
	t.BytesOut += o.BytesOut
	if len(o.Warnings) > 0 {
		t.Warned++
	}
	switch o.Status {
	case StatusCompleted:
		t.Completed++
	case StatusSkipped:
		t.Skipped++
	case StatusRemediation:
		t.Remediation++
	case StatusDeadLetter:
		t.DeadLetter++
	case StatusIgnored:
		t.Ignored++
	case StatusNotStarted:
		t.NotStarted++
	default:
		t.Failed++
	}
}

// ReportSchemaVersion is the version of the report's shape that
// docs/report-schema.json documents. It goes up when a field changes
// meaning, type or goes away; a new optional field keeps it.
const ReportSchemaVersion = 1

// Report is the JSON run report: one entry per input, in input order.
type Report struct {
	// SchemaVersion is ReportSchemaVersion when the report was written (0
	// or absent: a report from before the schema was versioned).
	SchemaVersion int `json:"schema_version"`

	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Seconds  float64   `json:"seconds"`
	Backend  string    `json:"backend"`
	Dest     string    `json:"dest"`
	Workers  int       `json:"workers"`
	Recipe   string    `json:"recipe"`
	Totals   Totals    `json:"totals"`
	Files    []Outcome `json:"files"`
	// Signals are the run's fallback rates (routed / jobs that ended) per
	// tier, dataset type and format, the recovery latencies of the files
	// it completed after an earlier routing, and the dead-letter queue
	// after it (internal/signals). Absent from reports of older versions.
	Signals *signals.Signals `json:"signals,omitempty"`

	// spool holds the files instead of Files when the outcomes were
	// spooled (backfill, migrate): read back from it, never all in memory.
	spool *Outcomes
}

// EachFile calls fn with every file's outcome, in report order.
func (r *Report) EachFile(fn func(Outcome) error) error {
	if r.spool != nil {
		return r.spool.Each(fn)
	}
	for _, o := range r.Files {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// each is EachFile for readers that cannot fail: a spool read error is
// reported by Write, which reads the same file.
func (r *Report) each(fn func(Outcome)) {
	_ = r.EachFile(func(o Outcome) error { fn(o); return nil })
}

// AddSignals computes the run's signals from its files against th, with
// the recoveries and dead-letter queue given (nil: not read).
func (r *Report) AddSignals(th signals.Thresholds, recovered []signals.Latency, deadLetter *signals.QueueAge) {
	var ends []signals.End
	r.each(func(o Outcome) { ends = appendEnd(ends, o) })
	s := signals.Compute(ends, recovered, th)
	s.DeadLetter = deadLetter
	r.Signals = &s
}

// NewReport builds the report of a finished run.
func NewReport(started time.Time, outcomes []Outcome) *Report {
	if outcomes == nil {
		outcomes = []Outcome{} // "files": [], not null
	}
	r := &Report{SchemaVersion: ReportSchemaVersion, Started: started.UTC(), Finished: time.Now().UTC(), Files: outcomes}
	r.Seconds = r.Finished.Sub(r.Started).Seconds()
	for i, o := range outcomes {
		outcomes[i] = WithHint(o)
		r.Totals.Add(o)
	}
	return r
}

// NewSpooledReport builds the report of a finished run whose outcomes were
// spooled: its files are read back from the spool when it is written or
// printed.
func NewSpooledReport(started time.Time, outcomes *Outcomes) *Report {
	r := &Report{SchemaVersion: ReportSchemaVersion, Started: started.UTC(), Finished: time.Now().UTC(), Totals: outcomes.Totals(), spool: outcomes}
	r.Seconds = r.Finished.Sub(r.Started).Seconds()
	return r
}

// WithHint gives a routed outcome without a hint HintUnclassified: the
// message ClassifyFailed sends carries the raw error and no hint.
func WithHint(o Outcome) Outcome {
	if (o.Status == StatusRemediation || o.Status == StatusDeadLetter) && o.Hint == "" {
		o.Hint = HintUnclassified
	}
	return o
}

// HintUnclassified is the hint of a routed file whose queue message has
// none: classification itself failed.
const HintUnclassified = "Classification failed: the queue message holds the raw error. Inspect it and the execution history, then replay."

// Write stores the report as JSON at path, atomically.
func (r *Report) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	tmp := path + ".tmp"
	if r.spool != nil {
		if err := r.writeSpooled(tmp); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("report.Write: %w", err)
		}
		return os.Rename(tmp, path)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	return os.Rename(tmp, path)
}

// filesMember is how json.MarshalIndent writes an empty files list in a
// report: at the top level, so no string in the report can hold it (a
// JSON string has no raw newline).
const filesMember = "\n  \"files\": []"

// writeSpooled writes the report to path with its files streamed from the
// spool, one at a time, byte for byte what Write writes for the same
// files held in memory.
func (r *Report) writeSpooled(path string) error {
	head := *r
	head.Files, head.spool = []Outcome{}, nil
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return err
	}
	at := bytes.Index(b, []byte(filesMember))
	if at < 0 {
		return fmt.Errorf("no files member in the report")
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	cut := at + len(filesMember) - 1 // before the list's "]"
	w.Write(b[:cut])
	n := 0
	err = r.spool.Each(func(o Outcome) error {
		sep := ",\n    "
		if n == 0 {
			sep = "\n    "
		}
		n++
		ob, err := json.MarshalIndent(o, "    ", "  ")
		if err != nil {
			return err
		}
		w.WriteString(sep)
		_, err = w.Write(ob)
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		w.WriteString("\n  ")
	}
	w.Write(b[cut:])
	if err := w.WriteByte('\n'); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// PrintSummary writes the human summary: what needs attention first, then
// the totals table, its tables fitted to width display columns (0: no
// limit; termtable.Width).
func (r *Report) PrintSummary(w io.Writer, width int) {
	attention := termtable.New("  ",
		termtable.Column{Key: true},
		termtable.Column{Fit: termtable.Middle, Key: true},
		termtable.Column{Fit: termtable.Wrap})
	r.each(func(o Outcome) {
		switch o.Status {
		case StatusCompleted, StatusSkipped, StatusIgnored, StatusNotStarted:
			return
		}
		what := o.Error
		if o.Code != "" {
			what = o.Code
		}
		attention.Add(string(o.Status), o.Bucket+"/"+objectstore.QuoteKey(o.Key), what+": "+OneLine(o.Message, 160))
		if o.Bundle != "" {
			// A path to copy: whole, on its own line.
			attention.Note(1, "bundle: "+o.Bundle)
		}
	})
	if attention.Len() > 0 {
		fmt.Fprintln(w, "\nNeeds attention:")
		_ = attention.Write(w, width)
	}
	r.printList(w, width, "With conversion warnings (outputs written; see files[].warnings in the report):", func(o Outcome) string {
		if len(o.Warnings) == 0 {
			return ""
		}
		more := ""
		if len(o.Warnings) > 1 {
			more = fmt.Sprintf(" (+%d more)", len(o.Warnings)-1)
		}
		return OneLine(o.Warnings[0], 140) + more
	})
	r.printList(w, width, "Ignored (not geospatial, or not followed):", func(o Outcome) string {
		if o.Status != StatusIgnored && !(o.Status == StatusSkipped && o.Execution == "") {
			return ""
		}
		return o.Reason
	})
	t := r.Totals
	if t.NotStarted > 0 {
		reason, found := "", false
		r.each(func(o Outcome) {
			if !found && o.Status == StatusNotStarted {
				reason, found = o.Reason, true
			}
		})
		fmt.Fprintln(w)
		termtable.WriteText(w, fmt.Sprintf("Not started: %d file(s), %s; the next run takes them.", t.NotStarted, OneLine(reason, 200)), "", width)
	}
	if r.Signals != nil {
		PrintSignals(w, *r.Signals, width)
	}
	fmt.Fprintln(w)
	var cols []termtable.Column
	for _, h := range []string{"completed", "skipped", "ignored", "remediation", "dlq", "failed", "not started", "files", "warned", "retries", "bytes in", "bytes out", "time"} {
		cols = append(cols, termtable.Column{Header: h, Right: true})
	}
	tt := termtable.New("  ", cols...)
	tt.Add(strconv.Itoa(t.Completed), strconv.Itoa(t.Skipped), strconv.Itoa(t.Ignored), strconv.Itoa(t.Remediation), strconv.Itoa(t.DeadLetter), strconv.Itoa(t.Failed),
		strconv.Itoa(t.NotStarted), strconv.Itoa(t.Files), strconv.Itoa(t.Warned), strconv.Itoa(t.Retries), HumanBytes(t.BytesIn), HumanBytes(t.BytesOut), time.Duration(r.Seconds*float64(time.Second)).Round(time.Millisecond).String())
	_ = tt.Write(w, width)
}

// printList prints a titled list of the files for which line is not "".
func (r *Report) printList(w io.Writer, width int, title string, line func(Outcome) string) {
	list := termtable.New("  ", termtable.Column{Fit: termtable.Middle, Key: true}, termtable.Column{Fit: termtable.Wrap})
	r.each(func(o Outcome) {
		if l := line(o); l != "" {
			list.Add(o.Bucket+"/"+objectstore.QuoteKey(o.Key), l)
		}
	})
	if list.Len() > 0 {
		fmt.Fprintln(w)
		termtable.WriteText(w, title, "  ", width)
		_ = list.Write(w, width)
	}
}

// HumanBytes formats a byte count with binary units.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// OneLine folds a message onto one line of at most n runes.
func OneLine(s string, n int) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
		if len(out) >= n {
			out = append(out, '…')
			break
		}
	}
	return string(out)
}
