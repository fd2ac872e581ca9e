package localrun

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"
)

// Totals counts outcomes and bytes.
type Totals struct {
	Files       int   `json:"files"`
	Completed   int   `json:"completed"`
	Skipped     int   `json:"skipped"`
	Remediation int   `json:"remediation"`
	DeadLetter  int   `json:"dlq"`
	Failed      int   `json:"failed"`
	Retries     int   `json:"retries"`
	BytesIn     int64 `json:"bytes_in"`
	BytesOut    int64 `json:"bytes_out"`
}

// Add counts one outcome.
func (t *Totals) Add(o Outcome) {
	t.Files++
	t.Retries += o.Retries
	t.BytesIn += o.BytesIn
	t.BytesOut += o.BytesOut
	switch o.Status {
	case StatusCompleted:
		t.Completed++
	case StatusSkipped:
		t.Skipped++
	case StatusRemediation:
		t.Remediation++
	case StatusDeadLetter:
		t.DeadLetter++
	default:
		t.Failed++
	}
}

// Report is the JSON run report: one entry per input, in input order.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Seconds  float64   `json:"seconds"`
	Backend  string    `json:"backend"`
	Dest     string    `json:"dest"`
	Workers  int       `json:"workers"`
	Recipe   string    `json:"recipe"`
	Totals   Totals    `json:"totals"`
	Files    []Outcome `json:"files"`
}

// NewReport builds the report of a finished run.
func NewReport(started time.Time, outcomes []Outcome) *Report {
	r := &Report{Started: started.UTC(), Finished: time.Now().UTC(), Files: outcomes}
	r.Seconds = r.Finished.Sub(r.Started).Seconds()
	for _, o := range outcomes {
		r.Totals.Add(o)
	}
	return r
}

// Write stores the report as JSON at path, atomically.
func (r *Report) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report.Write: %w", err)
	}
	return os.Rename(tmp, path)
}

// PrintSummary writes the human summary: what needs attention first, then
// the totals table.
func (r *Report) PrintSummary(w io.Writer) {
	attention := 0
	for _, o := range r.Files {
		if o.Status == StatusCompleted || o.Status == StatusSkipped {
			continue
		}
		if attention == 0 {
			fmt.Fprintln(w, "\nNeeds attention:")
		}
		attention++
		what := o.Error
		if o.Code != "" {
			what = o.Code
		}
		fmt.Fprintf(w, "  %-11s %s/%s  %s: %s\n", o.Status, o.Bucket, o.Key, what, OneLine(o.Message, 160))
	}
	t := r.Totals
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "completed\tskipped\tremediation\tdlq\tfailed\tfiles\tretries\tbytes in\tbytes out\ttime\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", t.Completed, t.Skipped, t.Remediation, t.DeadLetter, t.Failed,
		t.Files, t.Retries, HumanBytes(t.BytesIn), HumanBytes(t.BytesOut), time.Duration(r.Seconds*float64(time.Second)).Round(time.Millisecond))
	tw.Flush()
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
