package benchpair

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
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
	// LoadStart and LoadEnd are /proc/loadavg's 1-minute figure: other
	// work on the machine during the run.
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
}

// Report is one make bench run.
type Report struct {
	Mode    string    `json:"mode"` // "full" or "quick"
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Host    Host      `json:"host"`
	Figures []Figure  `json:"figures"`
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

// WriteText prints the table for a terminal: one line per figure, the
// geomigrate and anchor medians with their ranges, the median ratio.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tgeomigrate median (min–max)\tanchor\tratio\tn\tgoal\t\n")
	for _, f := range r.Figures {
		c := f.row()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.title, c.value, c.anchor, c.ratio, c.n, c.goal, c.verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Figures {
		if f.Error != "" {
			fmt.Fprintf(w, "\n%s: not measured: %s\n", f.Title, f.Error)
		}
	}
	_, err := fmt.Fprintf(w, "\nmode: %s; %.0f s, %d CPUs, GDAL %s, load average %.1f → %.1f\n",
		r.Mode, r.Seconds, r.Host.CPUs, r.Host.GDAL, r.Host.LoadStart, r.Host.LoadEnd)
	return err
}

// WriteMarkdown writes the generated part of docs/benchmarks.md (without
// its markers): the table, then how each figure was measured.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	rev := ""
	if r.Host.Revision != "" {
		rev = ", commit " + r.Host.Revision
	}
	fmt.Fprintf(&b, "Measured %s UTC by `make bench` (mode: %s; %s to run%s) on %d CPUs, GDAL %s, %s; load average %.1f at the start, %.1f at the end (other work shared the machine).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Mode, minutes(r.Seconds), rev, r.Host.CPUs, r.Host.GDAL, r.Host.Go, r.Host.LoadStart, r.Host.LoadEnd)
	b.WriteString("| figure | geomigrate, median (min–max) | anchor | ratio, median (min–max) | n | goal | |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, f := range r.Figures {
		c := f.row()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", md(c.title), md(c.value), md(c.anchor), md(c.ratio), c.n, md(c.goal), c.verdict)
	}
	b.WriteString("\nHow each figure was measured:\n\n")
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
