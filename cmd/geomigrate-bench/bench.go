package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/geomigrate/geomigrate/internal/benchpair"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// bench is one make bench run: the binaries it measures and where.
type bench struct {
	quick          bool
	runs           int
	cli            string // bin/geomigrate
	sha256File     string // bin/bench/sha256file
	convertFloor   string // bin/bench/convertfloor
	pixelCompare   string // scripts/bench-cog/pixel_compare.py
	localrunTest   string
	geoparquetTest string
	gpq            string // bin/bench/gpq, the GeoParquet anchor (make bench-gpq)
	gdalConfig     gdal.Config
}

func (b *bench) mode() string {
	if b.quick {
		return "quick"
	}
	return "full"
}

// experiment is one pair of commands (or one command) run alternately, and
// the figures its measurements give.
type experiment struct {
	name, title string
	runs, quick int // pairs in full and in quick mode
	// goal is the main figure's, shown on the row of an experiment that
	// could not be measured.
	goal *benchpair.Goal
	// unlike, when set, says why the anchor side's times are no
	// yardstick for geomigrate's (benchpair.Experiment.Unlike).
	unlike string
	// settle: the runs start inodeSettle after the inputs are written
	// and the file system synced, and their sides keep what they write
	// until the experiment ends. On ext4 without a journal (this
	// machine's disk) the inode allocator skips, reading each one, every
	// inode freed in the last 30 s (35 while its block is unwritten):
	// a file created then cost about forty times its CPU, and the
	// figures measured the last clean-up, not the two sides
	// (docs/decisions/0119).
	settle bool
	// setup writes the inputs into dir and returns the sides and how their
	// measurements become figures.
	setup func(ctx context.Context, b *bench, dir string) (*setup, error)
}

type setup struct {
	a, b    benchpair.Side // b nil: no anchor command
	figures func(as, bs []benchpair.Measurement) []benchpair.Figure
	// subject and anchor name the two sides in the table of pairs; by
	// default, the first figure's subject and the first paired anchor's
	// name.
	subject, anchor string
}

// inodeSettle outlasts ext4's memory of a freed inode (30 s, 35 while the
// inode's block is dirty; see experiment.settle).
const inodeSettle = 40 * time.Second

// measure runs one experiment and returns the pair as it ran (wall and CPU
// of each side, the load average before and after) and its figures, or
// one row saying why it has none. A figure whose values the run did not
// give (a metric missing from the output) becomes such a row too.
func (b *bench) measure(ctx context.Context, e experiment, dir string) (benchpair.Experiment, []benchpair.Figure) {
	ex := benchpair.Experiment{Key: e.name, Title: e.title, Unlike: e.unlike, LoadStart: benchpair.ReadLoadAvg()}
	fail := func(err error) (benchpair.Experiment, []benchpair.Figure) {
		progress("%s: %v", e.name, err)
		ex.Error, ex.LoadEnd = err.Error(), benchpair.ReadLoadAvg()
		return ex, []benchpair.Figure{{Key: e.name, Title: e.title, Goal: e.goal, Error: err.Error()}}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	progress("%s: preparing inputs", e.name)
	s, err := e.setup(ctx, b, dir)
	if err != nil {
		return fail(err)
	}
	n := e.runs
	if b.quick {
		n = e.quick
	}
	if b.runs > 0 {
		n = b.runs
	}
	progress("%s: inputs ready in %s; %d run(s) of each side", e.name, time.Since(start).Round(time.Second), n)
	if e.settle {
		syscall.Sync()
		progress("%s: waiting %s for the file system to forget the inodes freed before (experiment.settle)", e.name, inodeSettle)
		select {
		case <-time.After(inodeSettle):
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	// The load average is read after the inputs are written: it is the
	// load the runs saw.
	ex.LoadStart = benchpair.ReadLoadAvg()
	as, bs, err := benchpair.Alternate(ctx, n, logged(e.name+" A", s.a), logged(e.name+" B", s.b))
	if err != nil {
		return fail(err)
	}
	ex.LoadEnd = benchpair.ReadLoadAvg()
	progress("%s: done in %s; load average %s → %s", e.name, time.Since(start).Round(time.Second), ex.LoadStart, ex.LoadEnd)
	figs := s.figures(as, bs)
	for i := range figs {
		figs[i] = produced(figs[i])
	}
	ex.A, ex.Subject, ex.Anchor = benchpair.RunsOf(as), s.subject, s.anchor
	if s.b != nil {
		runs := benchpair.RunsOf(bs)
		ex.B = &runs
	}
	for _, f := range figs {
		if ex.Subject == "" {
			ex.Subject = f.Subject
		}
		if ex.Anchor == "" && ex.B != nil && f.Anchor != nil && len(f.Anchor.Values) > 0 {
			ex.Anchor = f.Anchor.Name
		}
	}
	if ex.B != nil && ex.Anchor == "" {
		ex.Anchor = "the anchor command"
	}
	return ex, figs
}

// produced is f, or f turned into a row saying it was not measured when
// the run did not give all of it (benchpair.Report.Check's rule).
func produced(f benchpair.Figure) benchpair.Figure {
	if err := f.Check(); err != nil {
		return benchpair.Figure{Key: f.Key, Title: f.Title, Unit: f.Unit, Subject: f.Subject, Goal: f.Goal, Error: "the run did not give it: " + err.Error()}
	}
	return f
}

func logged(name string, s benchpair.Side) benchpair.Side {
	if s == nil {
		return nil
	}
	return func(ctx context.Context, run int) (benchpair.Measurement, error) {
		m, err := s(ctx, run)
		if err == nil {
			progress("  %s run %d: %.2f s wall, %.2f s CPU, %d MiB peak RSS", name, run+1, m.Wall.Seconds(), m.CPU.Seconds(), m.MaxRSS>>20)
		}
		return m, err
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

// timeCmd is GNU time, which reports the peak resident set of the command
// it runs. The kernel's own figure for a child of this process is no use:
// Go starts a child sharing this process's address space until the exec,
// and Linux carries that address space's high-water mark over the exec,
// so every child would count this process's hundred-odd MiB (measured:
// `true` at 310 MiB under a parent holding 300 MiB, 1 MiB under GNU time,
// which forks a small copy of itself).
const timeCmd = "/usr/bin/time"

// child runs a command and measures it: wall time, the CPU time of its
// process tree, and the peak resident set GNU time reports for it.
func child(ctx context.Context, env []string, name string, args ...string) (benchpair.Measurement, []byte, error) {
	return childIn(ctx, "", env, name, args...)
}

// childIn is child run in directory dir ("" for the current one).
//
// CPU time is the user + system time wait4 reports for GNU time, which
// waits for the command, which waits for its own children: the rusage of a
// waited-for child includes that of every descendant it waited for, so it
// is the whole process tree's (GNU time's own millisecond included),
// counted by the kernel to the microsecond. Peak memory is GNU time's %M,
// the command's own high-water mark (see timeCmd).
func childIn(ctx context.Context, dir string, env []string, name string, args ...string) (benchpair.Measurement, []byte, error) {
	usage, err := os.CreateTemp("", "geomigrate-bench-usage-")
	if err != nil {
		return benchpair.Measurement{}, nil, err
	}
	usage.Close()
	defer os.Remove(usage.Name())
	cmd := exec.CommandContext(ctx, timeCmd, append([]string{"-f", "%M", "-o", usage.Name(), name}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	// GNU time and the command it runs form a process group of their own,
	// stopped together when the benchmark is (Ctrl-C): killing time alone
	// would leave the command running, holding the output pipes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return benchpair.Measurement{}, nil, fmt.Errorf("%s: %w: %s", filepath.Base(name), err, msg)
	}
	m := benchpair.Measurement{Wall: wall}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return m, nil, fmt.Errorf("%s: no resource usage from wait4", filepath.Base(name))
	}
	m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	raw, err := os.ReadFile(usage.Name())
	if err != nil {
		return m, nil, err
	}
	var kib int64
	if _, err := fmt.Sscan(string(raw), &kib); err != nil {
		return m, nil, fmt.Errorf("%s: %q: %w", timeCmd, raw, err)
	}
	m.MaxRSS = kib << 10
	return m, stdout.Bytes(), nil
}

// childMeasure is child without its output.
func childMeasure(ctx context.Context, env []string, name string, args ...string) (benchpair.Measurement, error) {
	m, _, err := child(ctx, env, name, args...)
	return m, err
}

// runReport is the part of geomigrate's run report the benchmarks read.
type runReport struct {
	Totals struct {
		Files     int   `json:"files"`
		Completed int   `json:"completed"`
		BytesOut  int64 `json:"bytes_out"`
	} `json:"totals"`
	Files []struct {
		Key     string `json:"key"`
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"files"`
}

// migrate is geomigrate's side: `geomigrate migrate SRC --workers 1` into a
// fresh destination (its own state store) each run, so that every run does
// the whole work: hash, checks, conversion, fidelity check, staging,
// promotion; flags are added to the command line. A file that does not
// complete fails the run, with its reason.
func (b *bench) migrate(src, work string, flags ...string) benchpair.Side {
	return b.migrateThen(src, work, nil, flags...)
}

// migrateKeeping is migrate with each run's destination left in work, for
// the experiment's clean-up to remove (experiment.settle says why).
func (b *bench) migrateKeeping(src, work string) benchpair.Side {
	return b.migrateSide(src, work, true, nil)
}

// migrateThen is migrate, and inspect (when not nil) is handed the
// measurement and the first output file before the destination is removed.
func (b *bench) migrateThen(src, work string, inspect func(m *benchpair.Measurement, output string) error, flags ...string) benchpair.Side {
	return b.migrateSide(src, work, false, inspect, flags...)
}

func (b *bench) migrateSide(src, work string, keep bool, inspect func(m *benchpair.Measurement, output string) error, flags ...string) benchpair.Side {
	return func(ctx context.Context, run int) (benchpair.Measurement, error) {
		dest := filepath.Join(work, fmt.Sprintf("dest-%d", run))
		report := filepath.Join(work, fmt.Sprintf("report-%d.json", run))
		if !keep {
			defer os.RemoveAll(dest)
			defer os.Remove(report)
		}
		args := append([]string{"migrate", src, "--dest", dest, "--workers", "1", "--progress", "plain", "--report", report}, flags...)
		m, _, err := child(ctx, nil, b.cli, args...)
		if err != nil {
			return m, err
		}
		raw, err := os.ReadFile(report)
		if err != nil {
			return m, err
		}
		var rep runReport
		if err := json.Unmarshal(raw, &rep); err != nil {
			return m, fmt.Errorf("run report: %w", err)
		}
		if rep.Totals.Files == 0 || rep.Totals.Completed != rep.Totals.Files {
			var why []string
			for _, f := range rep.Files {
				if f.Status != "completed" {
					why = append(why, strings.TrimSpace(fmt.Sprintf("%s %s %s %s: %s", f.Key, f.Status, f.Reason, f.Code, f.Message)))
				}
			}
			return m, fmt.Errorf("%d of %d files completed: %s", rep.Totals.Completed, rep.Totals.Files, strings.Join(why, "; "))
		}
		m.Metrics = map[string]float64{"bytes_out": float64(rep.Totals.BytesOut)}
		if inspect == nil {
			return m, nil
		}
		var output string
		err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err == nil && output == "" && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
				output = p
			}
			return err
		})
		if err == nil && output == "" {
			err = fmt.Errorf("no .parquet output under %s", dest)
		}
		if err != nil {
			return m, err
		}
		return m, inspect(&m, output)
	}
}

// cogArgs are the gdal_translate arguments of the anchor: the switches
// COGOptions gives the engine for a continuous raster under the default
// recipe, and every GDAL configuration option the engine sets.
func (b *bench) cogArgs(src, dst string) []string {
	args := []string{"-q"}
	settings := b.gdalConfig.Settings()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--config", k, settings[k])
	}
	args = append(args, gdal.COGOptions(recipe.Recipe{}, false, b.gdalConfig.NumThreads)...)
	return append(args, src, dst)
}

// gdalTranslate is the anchor's side: gdal_translate -of COG with cogArgs.
func (b *bench) gdalTranslate(src, work string) benchpair.Side {
	return func(ctx context.Context, run int) (benchpair.Measurement, error) {
		dst := filepath.Join(work, fmt.Sprintf("gdal_translate-%d.tif", run))
		defer os.Remove(dst)
		m, _, err := child(ctx, nil, "gdal_translate", b.cogArgs(src, dst)...)
		if err != nil {
			return m, err
		}
		fi, err := os.Stat(dst)
		if err != nil {
			return m, err
		}
		m.Metrics = map[string]float64{"bytes_out": float64(fi.Size())}
		return m, nil
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
