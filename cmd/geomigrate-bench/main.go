// Command geomigrate-bench prints the performance figures of geomigrate
// against their anchors (make bench): each figure is measured alternately
// with its anchor in the same run, A, B, A, B …, and reported as the median
// ratio with its range and a check against its goal. Inputs are generated
// into a temporary directory and removed afterwards.
//
//	geomigrate-bench [run] [-quick] [-only cog,sha256] [-runs N] [-json results.json] [-include other.json]
//
// The figures are listed in one place, experiments() in figures.go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/geomigrate/geomigrate/internal/benchpair"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/gdal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "geomigrate-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "run" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	b := &bench{}
	quickEnv, _ := strconv.ParseBool(os.Getenv("BENCH_QUICK"))
	fs.BoolVar(&b.quick, "quick", quickEnv, "smaller inputs and fewer runs (also BENCH_QUICK=1)")
	fs.IntVar(&b.runs, "runs", 0, "pairs per figure (0: each figure's default)")
	only := fs.String("only", "", "comma-separated experiment names to run (default: all)")
	fs.StringVar(&b.cli, "cli", "bin/geomigrate", "the geomigrate CLI to measure (make cli)")
	fs.StringVar(&b.localrunTest, "localrun-test", "bin/bench/localrun.test", "internal/localrun's test binary (go test -c)")
	fs.StringVar(&b.sha256File, "sha256file", "bin/bench/sha256file", "the SHA-256 figure's subject (./cmd/geomigrate-bench/sha256file)")
	fs.StringVar(&b.convertFloor, "convertfloor", "bin/bench/convertfloor", "the tiny-files figures' conversion floor (./cmd/geomigrate-bench/convertfloor)")
	fs.StringVar(&b.pixelCompare, "pixel-compare", "scripts/bench-cog/pixel_compare.py", "the verified COG anchor's outside pixel comparison")
	fs.StringVar(&b.geoparquetTest, "geoparquet-test", "bin/bench/geoparquet.test", "internal/geoparquet's test binary (go test -c)")
	fs.StringVar(&b.gpq, "gpq", "bin/bench/gpq", "planetlabs/gpq, the GeoParquet anchor (make bench-gpq)")
	tmp := fs.String("tmp", "", "where inputs are generated (default: $TMPDIR); removed afterwards")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	var includes multiFlag
	fs.Var(&includes, "include", "a JSON report (or list of figures) written by another benchmark, put first in the table (repeatable)")
	list := fs.Bool("list", false, "list the experiments and exit")
	note := fs.String("note", "", "a remark added to the report's mode (where the figures of -include come from, …)")
	backfill := fs.String("backfill", "", "BenchmarkBackfillOverhead sub-benchmarks to run, a -test.bench pattern such as '^items=(100|1000)$' (default: all three sizes, or 100 files in quick mode)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sz := b.sizes()
	if *backfill != "" {
		sz.backfill = *backfill
	}
	exps := experiments(sz)
	if *list {
		for _, e := range exps {
			fmt.Printf("%-20s %s\n", e.name, e.title)
		}
		return nil
	}
	selected, err := selectExperiments(exps, *only)
	if err != nil {
		return err
	}
	for _, p := range []*string{&b.cli, &b.localrunTest, &b.geoparquetTest, &b.sha256File, &b.gpq, &b.convertFloor, &b.pixelCompare} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if _, err := os.Stat(timeCmd); err != nil {
		return fmt.Errorf("GNU time measures peak memory: install it (apt-get install time): %w", err)
	}
	engine, err := gdal.New()
	if err != nil {
		return err
	}
	b.gdalConfig = engine.Config()
	dir, err := os.MkdirTemp(*tmp, "geomigrate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	rep := benchpair.Report{Mode: b.mode(), Started: time.Now().UTC(), Host: benchpair.Host{
		CPUs: runtime.NumCPU(), GDAL: engine.Version(), Go: runtime.Version(), Revision: buildinfo.Revision, LoadStart: benchpair.ReadLoadAvg(),
	}}
	if *backfill != "" {
		rep.Mode += ", orchestration sub-benchmarks " + *backfill
	}
	if *note != "" {
		rep.Mode += "; " + *note
	}
	// Other benchmarks' figures come first, so that partial reports keep them.
	for _, p := range includes {
		exps, figs, err := readFigures(p)
		if err != nil {
			return err
		}
		rep.Experiments = append(rep.Experiments, exps...)
		rep.Figures = append(rep.Figures, figs...)
	}
	for i, e := range selected {
		ex, figs := b.measure(ctx, e, filepath.Join(dir, e.name))
		rep.Experiments = append(rep.Experiments, ex)
		rep.Figures = append(rep.Figures, figs...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A long run leaves what it measured so far, marked partial.
		if *jsonOut != "" && i < len(selected)-1 {
			partial := rep
			partial.Mode += fmt.Sprintf(", partial: %d of %d experiments", i+1, len(selected))
			partial.Seconds, partial.Host.LoadEnd = time.Since(rep.Started).Seconds(), benchpair.ReadLoadAvg()
			if err := partial.WriteJSON(*jsonOut); err != nil {
				return err
			}
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Host.LoadEnd = benchpair.ReadLoadAvg()
	fmt.Println()
	if err := rep.WriteText(os.Stdout); err != nil {
		return err
	}
	if *jsonOut != "" {
		return rep.WriteJSON(*jsonOut)
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func selectExperiments(all []experiment, only string) ([]experiment, error) {
	if only == "" {
		return all, nil
	}
	var out []experiment
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, e := range all {
			if e.name == strings.TrimSpace(name) {
				out, found = append(out, e), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-only: no experiment %q (see -list)", name)
		}
	}
	return out, nil
}

// readFigures reads another benchmark's pairs and figures: a
// benchpair.Report, or a JSON list of benchpair.Figure (no pairs).
func readFigures(path string) ([]benchpair.Experiment, []benchpair.Figure, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-include: %w", err)
	}
	var figs []benchpair.Figure
	var exps []benchpair.Experiment
	if strings.HasPrefix(strings.TrimSpace(string(b)), "[") {
		err = jsonUnmarshal(b, &figs)
	} else {
		var r benchpair.Report
		err = jsonUnmarshal(b, &r)
		exps, figs = r.Experiments, r.Figures
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-include %s: %w", path, err)
	}
	return exps, figs, nil
}
