package benchpair

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseLoadAvg(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    LoadAvg
		wantErr bool
	}{
		{"0.52 0.58 0.59 1/467 12345\n", LoadAvg{0.52, 0.58, 0.59}, false},
		{"12.00 7.25 3.10 9/1021 77", LoadAvg{12, 7.25, 3.1}, false},
		{"0.00 0.00 0.00", LoadAvg{}, false},
		{"0.52 0.58", LoadAvg{}, true},
		{"", LoadAvg{}, true},
		{"0.52 x 0.59 1/467 1", LoadAvg{}, true},
		{"-1 0.5 0.5 1/1 1", LoadAvg{}, true},
		{"NaN 0.5 0.5 1/1 1", LoadAvg{}, true},
	} {
		got, err := ParseLoadAvg(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseLoadAvg(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	if s := (&LoadAvg{1.5, 0.25, 2}).String(); s != "1.50 / 0.25 / 2.00" {
		t.Errorf("String = %q", s)
	}
	if s := (*LoadAvg)(nil).String(); s != "not measured" {
		t.Errorf("nil String = %q", s)
	}
}

func TestRunsOf(t *testing.T) {
	got := RunsOf([]Measurement{{Wall: 2 * time.Second, CPU: 1500 * time.Millisecond}, {Wall: time.Second, CPU: 3 * time.Second}})
	if !slices.Equal(got.Wall, []float64{2, 1}) || !slices.Equal(got.CPU, []float64{1.5, 3}) {
		t.Fatalf("RunsOf = %+v", got)
	}
}

// load is a load average for the tests' experiments.
var load = &LoadAvg{1.5, 1.25, 1}

func pairOf(aWall, aCPU, bWall, bCPU []float64) Experiment {
	return Experiment{Key: "k", Title: "a pair", Subject: "geomigrate", Anchor: "tool", A: Runs{Wall: aWall, CPU: aCPU},
		B: &Runs{Wall: bWall, CPU: bCPU}, LoadStart: load, LoadEnd: load}
}

func TestExperimentRatiosAndCells(t *testing.T) {
	for _, tc := range []struct {
		name                string
		e                   Experiment
		cpu, wall           []float64
		cpuCell, wallCell   string
		cpuA, wallB, loadIn string
	}{
		{
			name: "CPU and wall ratios run by run, median and range",
			e:    pairOf([]float64{2, 3, 4}, []float64{1, 2, 6}, []float64{1, 1, 2}, []float64{1, 1, 4}),
			cpu:  []float64{1, 2, 1.5}, wall: []float64{2, 3, 2},
			cpuCell: "1.50 (1.00–2.00)", wallCell: "2.00 (2.00–3.00)",
			cpuA: "2.00 s (1.00–6.00)", wallB: "1.00 s (1.00–2.00)", loadIn: "1.50 / 1.25 / 1.00 → 1.50 / 1.25 / 1.00",
		},
		{
			name: "an anchor doing other work: both sides' times, no ratio",
			e: func() Experiment {
				e := pairOf([]float64{2, 3, 4}, []float64{1, 2, 6}, []float64{1, 1, 2}, []float64{1, 1, 4})
				e.Unlike = "the writer alone"
				return e
			}(),
			cpuCell: "none: not the same work", wallCell: "none",
			cpuA: "2.00 s (1.00–6.00)", wallB: "1.00 s (1.00–2.00)", loadIn: "→ 1.50 / 1.25 / 1.00",
		},
		{
			name:    "one side: no ratio, its own times",
			e:       Experiment{Key: "k", Title: "alone", A: Runs{Wall: []float64{4, 2}, CPU: []float64{3, 1}}, LoadStart: load, LoadEnd: &LoadAvg{3, 2, 1}},
			cpuCell: "—", wallCell: "—", cpuA: "2.00 s (1.00–3.00)", wallB: "—", loadIn: "→ 3.00 / 2.00 / 1.00",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, err := tc.e.CPURatios()
			if err != nil || !slices.Equal(cpu, tc.cpu) {
				t.Fatalf("CPURatios = %v, %v; want %v", cpu, err, tc.cpu)
			}
			wall, err := tc.e.WallRatios()
			if err != nil || !slices.Equal(wall, tc.wall) {
				t.Fatalf("WallRatios = %v, %v; want %v", wall, err, tc.wall)
			}
			c := tc.e.cells()
			if c.cpuRatio != tc.cpuCell || c.wallRatio != tc.wallCell || c.cpuA != tc.cpuA || c.wallB != tc.wallB || !strings.Contains(c.load, tc.loadIn) {
				t.Fatalf("cells = %+v", c)
			}
		})
	}
}

// complete is a report with every figure the run gave.
func complete() Report {
	return Report{Mode: "quick", Started: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), Seconds: 60,
		Host:        Host{CPUs: 2, GDAL: "3.6.2", Go: "go1.26", LoadStart: &LoadAvg{2.5, 2, 1.75}, LoadEnd: &LoadAvg{3, 2.25, 1.8}},
		Experiments: []Experiment{pairOf([]float64{2, 4}, []float64{1.5, 3}, []float64{1, 2}, []float64{1, 2})},
		Figures: []Figure{{Key: "f", Title: "a figure", Unit: "s", Values: []float64{2, 4}, Anchor: &Anchor{Name: "tool", Values: []float64{1, 2}}},
			{Key: "g", Title: "bytes", Unit: "MB", Values: []float64{5}, Anchor: &Anchor{Name: "gpq", Published: 4.3}, Note: "Info: an Inflate step."},
			{Key: "h", Title: "refused", Error: "the input was refused"}},
	}
}

func TestReportCheckRefusesWhatTheRunDidNotGive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Report)
		want   string // "" for a complete report
	}{
		{"complete", func(*Report) {}, ""},
		{"no load average for the run", func(r *Report) { r.Host.LoadEnd = nil }, "the run's load average"},
		{"no load average for an experiment", func(r *Report) { r.Experiments[0].LoadStart = nil }, "k: the load average"},
		{"an experiment without CPU times", func(r *Report) { r.Experiments[0].A.CPU = nil }, "0 CPU times"},
		{"an anchor's run without CPU time", func(r *Report) { r.Experiments[0].B.CPU[1] = 0 }, "run 2"},
		{"fewer anchor runs", func(r *Report) { r.Experiments[0].B.Wall, r.Experiments[0].B.CPU = []float64{1}, []float64{1} }, "against 2 runs"},
		{"an anchor name without runs", func(r *Report) { r.Experiments[0].B = nil }, "an anchor named"},
		{"a failed experiment needs no runs", func(r *Report) { r.Experiments[0] = Experiment{Key: "x", Error: "it failed"} }, ""},
		{"a figure without values", func(r *Report) { r.Figures[0].Values = nil }, "f: no value"},
		{"a value that is NaN", func(r *Report) { r.Figures[0].Values[1] = math.NaN() }, "value 2 is NaN"},
		{"an anchor value that is infinite", func(r *Report) { r.Figures[0].Anchor.Values[0] = math.Inf(1) }, "anchor value 1"},
		{"unpaired anchor values", func(r *Report) { r.Figures[0].Anchor.Values = []float64{1} }, "2 values against 1"},
		{"an anchor with neither runs nor a published figure", func(r *Report) { r.Figures[1].Anchor.Published = 0 }, "neither runs nor a published figure"},
		{"a note printing a missing metric", func(r *Report) { r.Figures[1].Note = "the writer wrote NaN MB" }, "prints a value the run did not give"},
		{"a title printing a division by zero", func(r *Report) { r.Figures[1].Title = "+Inf rows/s" }, "prints a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := complete()
			tc.change(&r)
			err := r.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errMissing) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error with %q", err, tc.want)
			}
			var b bytes.Buffer
			if err := r.WriteMarkdown(&b); err == nil || b.Len() != 0 {
				t.Fatalf("WriteMarkdown rendered an incomplete report (%v):\n%s", err, b.String())
			}
			if _, err := r.Generated(); err == nil {
				t.Fatal("Generated rendered an incomplete report")
			}
		})
	}
}

func TestMarkdownHeadlinesCPU(t *testing.T) {
	var b bytes.Buffer
	if err := complete().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		"load average (1/5/15 min) 2.50 / 2.00 / 1.75 at the start, 3.00 / 2.25 / 1.80 at the end",
		"| a pair | **1.50** | 2.00 | 2.25 s (1.50–3.00) | 1.50 s (1.00–2.00) | 3.00 s (2.00–4.00) | 1.50 s (1.00–2.00) | 2 | 1.50 / 1.25 / 1.00 → 1.50 / 1.25 / 1.00 |",
		"| a figure | 3.00 s (2.00–4.00) | tool: 1.50 s (1.00–2.00) | 2.00 | 2 |",
		"- **a pair** (pair): geomigrate Anchor: tool.",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	if cpu, wall := strings.Index(doc, "**CPU ratio**"), strings.Index(doc, "wall ratio"); cpu < 0 || wall < cpu {
		t.Errorf("the CPU ratio is not the first ratio of the pairs' table:\n%s", doc)
	}
	var text bytes.Buffer
	if err := complete().WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if s := text.String(); !strings.Contains(s, "2.50 / 2.00 / 1.75 → 3.00 / 2.25 / 1.80") || strings.Contains(s, "incomplete") {
		t.Errorf("text report:\n%s", s)
	}
	r := complete()
	r.Figures[0].Values = nil
	text.Reset()
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "make bench-doc will refuse this report") {
		t.Errorf("text report of an incomplete run does not say so (%v):\n%s", err, text.String())
	}
}
