package benchpair

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Figure is one row of the table: geomigrate's samples and what they are
// compared with.
type Figure struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	// Subject says how geomigrate's side was measured.
	Subject string    `json:"subject"`
	Values  []float64 `json:"values"` // in run order
	Anchor  *Anchor   `json:"anchor,omitempty"`
	Goal    *Goal     `json:"goal,omitempty"`
	Note    string    `json:"note,omitempty"`
	// Error says why the figure has no value (a refused input, a failed
	// command); the row is printed with it rather than dropped.
	Error string `json:"error,omitempty"`
}

// Anchor is what a figure is compared with: a command measured in the same
// run (Values, paired run by run with Figure.Values) or a published
// constant.
type Anchor struct {
	Name      string    `json:"name"`
	Values    []float64 `json:"values,omitempty"`
	Published float64   `json:"published,omitempty"`
}

// Value summarizes geomigrate's samples.
func (f Figure) Value() Summary { return Summarize(f.Values) }

// Ratios are geomigrate's samples over the anchor's (pair by pair, or over
// the published constant); nil without an anchor.
func (f Figure) Ratios() ([]float64, error) {
	switch {
	case f.Anchor == nil || len(f.Values) == 0:
		return nil, nil
	case len(f.Anchor.Values) > 0:
		return PairRatios(f.Values, f.Anchor.Values)
	case f.Anchor.Published != 0:
		return ConstantRatios(f.Values, f.Anchor.Published)
	}
	return nil, nil
}

// Verdict checks the goal; ok is false without a goal or a value.
func (f Figure) Verdict() (v Verdict, ok bool, err error) {
	if f.Goal == nil || len(f.Values) == 0 || f.Error != "" {
		return Verdict{}, false, nil
	}
	if f.Goal.Of == OfValue {
		return f.Goal.Check(f.Value()), true, nil
	}
	r, err := f.Ratios()
	if err != nil || r == nil {
		return Verdict{}, false, err
	}
	return f.Goal.Check(Summarize(r)), true, nil
}

// Host is the machine and the moment a report was measured on.
type Host struct {
	CPUs     int    `json:"cpus"`
	GDAL     string `json:"gdal"`
	Go       string `json:"go"`
	Revision string `json:"revision,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg at the start and end of the
	// whole run (each experiment carries its own): other work on the
	// machine.
	LoadStart *LoadAvg `json:"load_avg_start"`
	LoadEnd   *LoadAvg `json:"load_avg_end"`
}

// Report is one make bench run.
type Report struct {
	Mode    string    `json:"mode"` // "full" or "quick"
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Host    Host      `json:"host"`
	// Experiments are the pairs as they ran, wall and CPU of each side;
	// Figures what their measurements give.
	Experiments []Experiment `json:"experiments"`
	Figures     []Figure     `json:"figures"`
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("benchpair.ReadReport: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("benchpair.ReadReport: %s: %w", path, err)
	}
	return r, nil
}

// WriteJSON writes the report, indented, to path.
func (r Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("benchpair.WriteJSON: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("benchpair.WriteJSON: %w", err)
	}
	return nil
}

// row is a figure's cells, shared by the text and Markdown tables.
type row struct {
	title, value, anchor, ratio, n, goal, verdict string
}

func (f Figure) row() row {
	r := row{title: f.Title, n: strconv.Itoa(len(f.Values)), anchor: "—", ratio: "—", goal: "—", verdict: ""}
	if f.Goal != nil {
		r.goal = f.Goal.String()
		if f.Goal.Of == OfValue {
			r.goal += " " + f.Unit
		}
	}
	if f.Error != "" {
		r.value, r.verdict = "not measured (why: below the table)", "?"
		if f.Anchor != nil {
			r.anchor = f.Anchor.Name
		}
		return r
	}
	r.value = withRange(f.Value(), f.Unit)
	if f.Anchor != nil {
		switch {
		case len(f.Anchor.Values) > 0:
			r.anchor = f.Anchor.Name + ": " + withRange(Summarize(f.Anchor.Values), f.Unit)
		case f.Anchor.Published != 0:
			r.anchor = f.Anchor.Name + ": " + Number(f.Anchor.Published) + " " + f.Unit + " (published)"
		}
	}
	if rs, err := f.Ratios(); err != nil {
		r.ratio = err.Error()
	} else if rs != nil {
		r.ratio = withRange(Summarize(rs), "")
	}
	if v, ok, _ := f.Verdict(); ok {
		r.verdict = "✗ missed"
		if v.Met {
			r.verdict = "✓ met"
		}
		if v.Crossed {
			r.verdict += " (range crosses the goal)"
		}
	}
	return r
}

// withRange is "median unit (min–max)", or "value unit" for one sample or
// equal ones.
func withRange(s Summary, unit string) string {
	u := ""
	if unit != "" {
		u = " " + unit
	}
	if s.N <= 1 || s.Min == s.Max {
		return Number(s.Median) + u
	}
	return fmt.Sprintf("%s%s (%s–%s)", Number(s.Median), u, Number(s.Min), Number(s.Max))
}

// Number prints x with three significant digits or more (no exponent).
func Number(x float64) string {
	a := math.Abs(x)
	switch {
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func trim(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Check says what in r a run did not produce: a figure without values
// (and without the reason), a value that is not a number, an anchor
// without its paired runs, a note that prints a missing value, an
// experiment without its CPU and wall times or load average. A report
// that fails it is never rendered into the document.
func (r Report) Check() error {
	if r.Host.LoadStart == nil || r.Host.LoadEnd == nil {
		return fmt.Errorf("benchpair.Report.Check: the run's load average: %w", errMissing)
	}
	for _, e := range r.Experiments {
		if err := e.check(); err != nil {
			return fmt.Errorf("benchpair.Report.Check: experiment %w", err)
		}
	}
	for _, f := range r.Figures {
		if err := f.Check(); err != nil {
			return fmt.Errorf("benchpair.Report.Check: figure %w", err)
		}
	}
	return nil
}

// notANumber is how Go prints a value that was never measured (a missing
// metric turned NaN, a division by a zero time).
var notANumber = regexp.MustCompile(`\bNaN\b|[+-]Inf\b`)

// Check says what of f the run did not produce (Report.Check's rule for
// one figure); nil for a complete figure or one that says why it has no
// value.
func (f Figure) Check() error {
	if f.Error != "" {
		return nil
	}
	finite := func(what string, xs []float64) error {
		if len(xs) == 0 {
			return fmt.Errorf("%s: no %s: %w", f.Key, what, errMissing)
		}
		for i, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: %s %d is %v: %w", f.Key, what, i+1, x, errMissing)
			}
		}
		return nil
	}
	if err := finite("value", f.Values); err != nil {
		return err
	}
	if a := f.Anchor; a != nil {
		switch {
		case len(a.Values) > 0:
			if err := finite("anchor value", a.Values); err != nil {
				return err
			}
			if len(a.Values) != len(f.Values) {
				return fmt.Errorf("%s: %d values against %d of the anchor: %w", f.Key, len(f.Values), len(a.Values), errMissing)
			}
		case !(a.Published > 0) || math.IsInf(a.Published, 0):
			return fmt.Errorf("%s: anchor %q has neither runs nor a published figure: %w", f.Key, a.Name, errMissing)
		}
	}
	for _, s := range []string{f.Title, f.Subject, f.Note} {
		if notANumber.MatchString(s) {
			return fmt.Errorf("%s: %q prints a value the run did not give: %w", f.Key, s, errMissing)
		}
	}
	return nil
}

// WriteText prints the tables for a terminal: each experiment's pair, CPU
// and wall with their ranges and ratios, and the load average around it;
// then one line per figure, the geomigrate and anchor medians with their
// ranges, the median ratio.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "experiment\tCPU ratio\twall ratio\tgeomigrate CPU\tanchor CPU\tgeomigrate wall\tanchor wall\tn\tload average 1/5/15 min, start → end\t\n")
	for _, e := range r.Experiments {
		c := e.cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.title, c.cpuRatio, c.wallRatio, c.cpuA, c.cpuB, c.wallA, c.wallB, c.n, c.load)
	}
	fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t\n")
	fmt.Fprintf(tw, "figure\tgeomigrate median (min–max)\tanchor\tratio\tn\tgoal\t\n")
	for _, f := range r.Figures {
		c := f.row()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.title, c.value, c.anchor, c.ratio, c.n, c.goal, c.verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range r.Experiments {
		if e.Error != "" {
			fmt.Fprintf(w, "\n%s: not measured: %s\n", e.Title, e.Error)
		}
	}
	for _, f := range r.Figures {
		if f.Error != "" {
			fmt.Fprintf(w, "\n%s: not measured: %s\n", f.Title, f.Error)
		}
	}
	if err := r.Check(); err != nil {
		fmt.Fprintf(w, "\nincomplete: %v (make bench-doc will refuse this report)\n", err)
	}
	_, err := fmt.Fprintf(w, "\nmode: %s; %.0f s, %d CPUs, GDAL %s, load average (1/5/15 min) %s → %s\n",
		r.Mode, r.Seconds, r.Host.CPUs, r.Host.GDAL, r.Host.LoadStart, r.Host.LoadEnd)
	return err
}

// WriteMarkdown writes the generated part of docs/benchmarks.md (without
// its markers): the pairs, CPU ratio first, then the figures, then how
// each was measured. It refuses a report that fails Check: the document
// never shows a figure the run did not produce.
func (r Report) WriteMarkdown(w io.Writer) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("benchpair.WriteMarkdown: %w", err)
	}
	var b strings.Builder
	rev := ""
	if r.Host.Revision != "" {
		rev = ", commit " + r.Host.Revision
	}
	fmt.Fprintf(&b, "Measured %s UTC by `make bench` (mode: %s; %s to run%s) on %d CPUs, GDAL %s, %s; load average (1/5/15 min) %s at the start, %s at the end (other work shared the machine).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Mode, minutes(r.Seconds), rev, r.Host.CPUs, r.Host.GDAL, r.Host.Go, r.Host.LoadStart, r.Host.LoadEnd)
	if len(r.Experiments) > 0 {
		b.WriteString("Each pair as it ran: the **CPU ratio** (user + system time of each side's process tree, geomigrate ÷ anchor, median of the per-pair ratios and their range) is the headline; the wall ratio beside it swings with other work on the machine.\n\n")
		b.WriteString("| experiment | **CPU ratio** | wall ratio | geomigrate CPU | anchor CPU | geomigrate wall | anchor wall | n | load average 1/5/15 min, start → end |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for _, e := range r.Experiments {
			c := e.cells()
			cpuRatio := c.cpuRatio
			if cpuRatio != "—" && e.Unlike == "" && e.Error == "" {
				cpuRatio = "**" + cpuRatio + "**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", md(c.title), cpuRatio, c.wallRatio, c.cpuA, c.cpuB, c.wallA, c.wallB, c.n, c.load)
		}
		b.WriteString("\nThe figures these runs give:\n\n")
	}
	b.WriteString("| figure | geomigrate, median (min–max) | anchor | ratio, median (min–max) | n | goal | |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, f := range r.Figures {
		c := f.row()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", md(c.title), md(c.value), md(c.anchor), md(c.ratio), c.n, md(c.goal), c.verdict)
	}
	b.WriteString("\nHow each was measured:\n\n")
	for _, e := range r.Experiments {
		var parts []string
		if e.Subject != "" {
			parts = append(parts, md(e.Subject))
		}
		if e.Anchor != "" {
			parts = append(parts, "Anchor: "+md(e.Anchor)+".")
		}
		if e.Unlike != "" {
			parts = append(parts, "No ratio: "+md(strings.TrimSuffix(e.Unlike, "."))+".")
		}
		if e.Error != "" {
			parts = append(parts, "Not measured: "+md(strings.TrimSuffix(e.Error, "."))+".")
		}
		fmt.Fprintf(&b, "- **%s** (pair): %s\n", md(e.Title), strings.Join(parts, " "))
	}
	for _, f := range r.Figures {
		var parts []string
		if f.Subject != "" {
			parts = append(parts, md(f.Subject))
		}
		if f.Error != "" {
			parts = append(parts, "Not measured: "+md(strings.TrimSuffix(f.Error, "."))+".")
		}
		if f.Note != "" {
			parts = append(parts, md(f.Note))
		}
		fmt.Fprintf(&b, "- **%s**: %s\n", md(f.Title), strings.Join(parts, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func minutes(s float64) string {
	if s < 90 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.0f min", s/60)
}

// md keeps a cell on its table row.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
