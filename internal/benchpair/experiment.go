package benchpair

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// LoadAvg is the kernel's run-queue averages over 1, 5 and 15 minutes
// (/proc/loadavg): how much other work shared the machine.
type LoadAvg struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
}

// ParseLoadAvg reads the first three fields of /proc/loadavg's line
// ("0.52 0.58 0.59 1/467 12345").
func ParseLoadAvg(s string) (LoadAvg, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return LoadAvg{}, fmt.Errorf("benchpair.ParseLoadAvg: %q: fewer than three fields", s)
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return LoadAvg{}, fmt.Errorf("benchpair.ParseLoadAvg: %q: field %d is not a load average", s, i+1)
		}
		v[i] = x
	}
	return LoadAvg{One: v[0], Five: v[1], Fifteen: v[2]}, nil
}

// ReadLoadAvg reads /proc/loadavg; nil where the kernel has none, so that
// a report says it was not measured rather than print a zero.
func ReadLoadAvg() *LoadAvg {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	l, err := ParseLoadAvg(string(b))
	if err != nil {
		return nil
	}
	return &l
}

func (l *LoadAvg) String() string {
	if l == nil {
		return "not measured"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", l.One, l.Five, l.Fifteen)
}

// Runs are one side's measurements in run order, in seconds: wall time
// and CPU time (user + system of the process and every descendant it
// waited for).
type Runs struct {
	Wall []float64 `json:"wall_s"`
	CPU  []float64 `json:"cpu_s"`
}

// RunsOf takes wall and CPU time out of a side's measurements.
func RunsOf(ms []Measurement) Runs {
	r := Runs{Wall: make([]float64, len(ms)), CPU: make([]float64, len(ms))}
	for i, m := range ms {
		r.Wall[i], r.CPU[i] = m.Wall.Seconds(), m.CPU.Seconds()
	}
	return r
}

// Experiment is one pair of commands as make bench ran them: both sides'
// wall and CPU time run by run, and the load average at its start and end.
// Every experiment's pair is printed in the same way, CPU first (on a
// shared machine the CPU ratio holds where the wall ratio swings), beside
// the figures its measurements give.
type Experiment struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	// Subject and Anchor name the two sides; Anchor is empty (and B nil)
	// for an experiment with one side.
	Subject string `json:"subject"`
	Anchor  string `json:"anchor,omitempty"`
	// Unlike says why B's times are no yardstick for A's (B does other
	// work: a writer alone against the whole CLI); the pair then shows
	// both sides' times and no ratio.
	Unlike    string   `json:"unlike,omitempty"`
	A         Runs     `json:"a"`
	B         *Runs    `json:"b,omitempty"`
	LoadStart *LoadAvg `json:"load_start"`
	LoadEnd   *LoadAvg `json:"load_end"`
	// Error says why the experiment has no runs.
	Error string `json:"error,omitempty"`
}

// CPURatios and WallRatios are A over B run by run (nil without B).
func (e Experiment) CPURatios() ([]float64, error) {
	if e.B == nil || e.Unlike != "" {
		return nil, nil
	}
	return PairRatios(e.A.CPU, e.B.CPU)
}

func (e Experiment) WallRatios() ([]float64, error) {
	if e.B == nil || e.Unlike != "" {
		return nil, nil
	}
	return PairRatios(e.A.Wall, e.B.Wall)
}

// errMissing marks a figure a run did not produce.
var errMissing = errors.New("benchpair: not measured")

// check says what is missing for the experiment to be printed: a run
// without its wall or CPU time, an anchor without runs, a ratio that
// cannot be formed, a load average not read.
func (e Experiment) check() error {
	if e.Error != "" {
		return nil
	}
	if e.LoadStart == nil || e.LoadEnd == nil {
		return fmt.Errorf("%s: the load average: %w", e.Key, errMissing)
	}
	sides := []*Runs{&e.A}
	if e.B != nil {
		sides = append(sides, e.B)
	}
	for _, s := range sides {
		if len(s.Wall) == 0 || len(s.Wall) != len(s.CPU) || len(s.Wall) != len(e.A.Wall) {
			return fmt.Errorf("%s: %d wall and %d CPU times against %d runs: %w", e.Key, len(s.Wall), len(s.CPU), len(e.A.Wall), errMissing)
		}
		for i := range s.Wall {
			if !(s.Wall[i] > 0) || !(s.CPU[i] > 0) || math.IsInf(s.Wall[i], 0) || math.IsInf(s.CPU[i], 0) {
				return fmt.Errorf("%s: run %d: wall %v s, CPU %v s: %w", e.Key, i+1, s.Wall[i], s.CPU[i], errMissing)
			}
		}
	}
	if (e.B == nil) != (e.Anchor == "") {
		return fmt.Errorf("%s: an anchor named %q with runs %v: %w", e.Key, e.Anchor, e.B != nil, errMissing)
	}
	return nil
}

// pairCells are an experiment's cells, shared by the text and Markdown
// tables.
type pairCells struct {
	title, cpuRatio, wallRatio, cpuA, cpuB, wallA, wallB, n, load string
}

func (e Experiment) cells() pairCells {
	c := pairCells{title: e.Title, cpuRatio: "—", wallRatio: "—", cpuB: "—", wallB: "—", n: strconv.Itoa(len(e.A.Wall)),
		load: e.LoadStart.String() + " → " + e.LoadEnd.String()}
	if e.Error != "" {
		c.cpuA, c.wallA = "not measured (why: below the table)", "—"
		return c
	}
	c.cpuA, c.wallA = withRange(Summarize(e.A.CPU), "s"), withRange(Summarize(e.A.Wall), "s")
	if e.B != nil {
		c.cpuB, c.wallB = withRange(Summarize(e.B.CPU), "s"), withRange(Summarize(e.B.Wall), "s")
		if r, err := e.CPURatios(); err == nil && r != nil {
			c.cpuRatio = withRange(Summarize(r), "")
		}
		if r, err := e.WallRatios(); err == nil && r != nil {
			c.wallRatio = withRange(Summarize(r), "")
		}
		if e.Unlike != "" {
			c.cpuRatio, c.wallRatio = "none: not the same work", "none"
		}
	}
	return c
}
