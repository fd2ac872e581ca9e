package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/statemachine"
)

// runFlags are the flags shared by every command that runs the state
// machine over files (migrate, replay).
type runFlags struct {
	dest, stateDir, report string
	workers                int
	vectorFormat           string
	zstdLevel              int
	progress               string
	logLevel, logFormat    string
	lease                  time.Duration
	grace                  time.Duration
	// closer, when set, closes the jobs of executions that end unfinished
	// (timed out, interrupted) as the executionfailed function does on
	// AWS; without it their leases are only released.
	closer *migration.ExecutionFailed
	// halt stops the run when the disk or memory is exhausted
	// (executorOptions wires it into the executor).
	halt *localrun.Halt
	// recipes are --recipe and --co (recipe.go).
	recipes *recipeFlags
	// pre are outcomes decided before the run (links not followed,
	// non-geospatial files): reported with the others.
	pre []localrun.Outcome
}

// executorOptions are the executor options every run needs: the halt's
// history observer.
func (f *runFlags) executorOptions() []asl.Option {
	if f.halt == nil {
		f.halt = localrun.NewHalt()
	}
	return []asl.Option{asl.WithHistory(f.halt.Observe)}
}

// nothingToMigrate is the error of a run whose sources hold no candidate
// file: an empty directory is more likely a wrong path than a finished job,
// so it is not a silent success. What was ignored or skipped is listed.
func nothingToMigrate(srcs []string, pre []localrun.Outcome, stderr io.Writer) error {
	where := strings.Join(srcs, ", ")
	if len(pre) == 0 {
		return fmt.Errorf("nothing to migrate: %s holds no files", where)
	}
	for _, o := range pre {
		fmt.Fprintf(stderr, "%-11s %s/%s %s\n", o.Status, o.Bucket, localrun.QuoteKey(o.Key), o.Reason)
	}
	return fmt.Errorf("nothing to migrate: %s holds no geospatial candidate, %d file(s) ignored or skipped (listed above)", where, len(pre))
}

// minLease is the bound --lease must exceed: the longest task timeout of the
// local executor (task timeout < lease, as infra enforces for function
// timeouts), or a second execution takes a file over while its first
// attempt is still converting it.
var minLease = time.Duration(statemachine.DefaultTaskTimeouts.Longest()) * time.Second

func addRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{}
	fs.StringVar(&f.dest, "dest", "", "destination directory (the local destination bucket)")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "files migrated at once")
	fs.StringVar(&f.stateDir, "state-dir", "", "state store, queues and reports (default DEST/"+stateDirName+")")
	fs.StringVar(&f.report, "report", "", "JSON run report path (default STATE-DIR/reports/run-TIME.json)")
	fs.StringVar(&f.vectorFormat, "vector-format", "", "GeoParquet or FlatGeobuf (default GeoParquet)")
	fs.IntVar(&f.zstdLevel, "zstd-level", 0, "ZSTD level for outputs (default 9)")
	fs.StringVar(&f.progress, "progress", "auto", "auto, bar or plain")
	f.recipes = addRecipeFlags(fs)
	// Routed files are reported by the progress lines and the summary;
	// handler warnings about them would say it twice.
	fs.StringVar(&f.logLevel, "log-level", "error", "debug, info, warn or error (handler logs on stderr)")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&f.grace, "grace", defaultGrace,
		"on SIGINT/SIGTERM no new file starts and running ones get this long to finish; then (or at a second signal) they are stopped and rolled back")
	fs.DurationVar(&f.lease, "lease", migration.DefaultLease,
		"how long a file claimed by this run stays exclusive without renewal (renewed at each step); another run finding it\n"+
			"held skips it as in progress until then; leases of a process that died on this host are taken over at once (longer than the 15m task timeout)")
	return f
}

// defaultGrace fits with the report and the job closing inside the 30 s
// that systemd and Kubernetes leave between SIGTERM and SIGKILL.
const defaultGrace = 20 * time.Second

// checkLease refuses a lease too short to cover one conversion.
func (f *runFlags) checkLease() error {
	if f.lease <= minLease {
		return fmt.Errorf("--lease %s: must be longer than %s, the longest task timeout (a shorter lease lets a second run convert a file still being converted)", f.lease, minLease)
	}
	return nil
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	f := addRunFlags(fs)
	backend := fs.String("backend", "local", "local (directories, embedded state store, JSONL queues) or aws (S3, DynamoDB, SQS)")
	var a awsFlags
	a.add(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: geomigrate migrate SRC... --dest DIR [flags]
       geomigrate migrate s3://BUCKET[/PREFIX]... --backend aws --dest s3://BUCKET[/PREFIX] --state-table T [flags]

Each source file runs once through the migrate state machine.
Flags:`)
		fs.PrintDefaults()
	}
	srcs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if f.dest == "" || len(srcs) == 0 {
		fs.Usage()
		return errUsage
	}
	if err := f.checkLease(); err != nil {
		return err
	}
	switch *backend {
	case "local":
		roots, inputs, pre, err := collectSources(srcs, f.dest)
		if err != nil {
			return err
		}
		if len(inputs) == 0 {
			return nothingToMigrate(srcs, pre, stderr)
		}
		book, err := f.recipes.book(f.vectorFormat, f.zstdLevel)
		if err != nil {
			return err
		}
		if err := checkOutputCollisions(inputs, recipeOf(book, recipe.Recipe{VectorFormat: f.vectorFormat}), f.dest); err != nil {
			return err
		}
		f.pre = pre
		return f.run(ctx, roots, inputs, stdout, stderr)
	case "aws":
		h, q, tracker, inputs, closeQueues, err := f.awsRun(ctx, &a, srcs)
		if err != nil {
			return err
		}
		defer closeQueues()
		if len(inputs) == 0 {
			return nothingToMigrate(srcs, nil, stderr)
		}
		if err := checkOutputCollisions(inputs, h.HashCheck.RecipeFor, f.dest); err != nil {
			return err
		}
		exec, err := localrun.NewExecutor(h, q, f.executorOptions()...)
		if err != nil {
			return err
		}
		// No object store here: on AWS the staging lifecycle rule expires
		// what an unfinished job staged.
		f.closer = migration.NewExecutionFailed(migration.Config{}, nil, tracker, q.DeadLetter, slog.New(slog.DiscardHandler))
		paths := pathsFor(".", f.stateDir)
		return f.execute(ctx, exec, tracker, inputs, "aws", h.Recipe(), paths, stdout, stderr)
	}
	return fmt.Errorf("--backend %q: want local or aws", *backend)
}

// localPipeline is the migrate state machine wired to the embedded
// backends.
type localPipeline struct {
	paths   localPaths
	backend *localBackend
	recipe  recipe.Recipe
	exec    *asl.Executor
	cfg     migration.Config
}

// openLocalPipeline builds the GDAL engine, the embedded backends and the
// executor. roots are source buckets (remembered for replay); extra are
// other local buckets the run needs.
func (f *runFlags) openLocalPipeline(roots, extra []sourceRoot, stderr io.Writer) (*localPipeline, error) {
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return nil, err
	}
	engine, err := gdal.New()
	if err != nil {
		return nil, fmt.Errorf("GDAL: %w", err)
	}
	if err := f.checkLease(); err != nil {
		return nil, err
	}
	cfg := migration.Config{DestBucket: destBucket, WorkDir: os.TempDir(), Lease: f.lease}
	cfg.Recipe.VectorFormat, cfg.Recipe.ZSTDLevel = f.vectorFormat, f.zstdLevel
	cfg.Recipe.EngineVersion, cfg.Recipe.ToolVersion = engine.Version(), buildinfo.Version
	paths := pathsFor(f.dest, f.stateDir)
	f.recipes.fromState(paths.dir, stderr)
	if cfg.Recipes, err = f.recipes.book(f.vectorFormat, f.zstdLevel); err != nil {
		return nil, err
	}
	if err := checkCreationOptions(cfg.Recipes); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backend, err := openLocal(f.dest, paths, append(append([]sourceRoot(nil), roots...), extra...), cfg)
	if err != nil {
		return nil, err
	}
	if err := f.recipes.remember(paths.dir); err != nil {
		backend.Close()
		return nil, err
	}
	if err := saveBuckets(paths, roots); err != nil {
		backend.Close()
		return nil, err
	}
	h := newHandlers(cfg, backend, engine, log)
	exec, err := localrun.NewExecutor(h, backend.queues, f.executorOptions()...)
	if err != nil {
		backend.Close()
		return nil, err
	}
	return &localPipeline{paths: paths, backend: backend, recipe: h.Recipe(), exec: exec, cfg: cfg}, nil
}

// run migrates inputs from local directories through the local executor.
func (f *runFlags) run(ctx context.Context, roots []sourceRoot, inputs []migration.Source, stdout, stderr io.Writer) error {
	p, err := f.openLocalPipeline(roots, nil, stderr)
	if err != nil {
		return err
	}
	defer p.backend.Close()
	if n := p.backend.sweptTemps; n > 0 {
		fmt.Fprintf(stderr, "geomigrate: removed %d temporary file(s) left in %s by an interrupted run\n", n, f.dest)
	}
	f.closer = migration.NewExecutionFailed(p.cfg, p.backend.store, p.backend.tracker, p.backend.queues.DeadLetter, slog.New(slog.DiscardHandler))
	err = f.execute(ctx, p.exec, p.backend.tracker, inputs, "local", p.recipe, p.paths, stdout, stderr)
	if n, serr := sweepStaging(context.WithoutCancel(ctx), p.backend); serr != nil {
		fmt.Fprintf(stderr, "geomigrate: staging sweep: %v\n", serr)
	} else if n > 0 {
		fmt.Fprintf(stderr, "geomigrate: removed %d staged object(s) left by unfinished jobs\n", n)
	}
	return err
}

// sweepStaging removes what unfinished jobs (routed after Convert, or
// interrupted) left under the staging prefix. Safe here: the embedded state
// store admits one process at a time, and every execution of this one has
// ended. On AWS a bucket lifecycle rule expires staging objects instead.
func sweepStaging(ctx context.Context, b *localBackend) (int, error) {
	var keys []string
	err := b.store.List(ctx, destBucket, migration.DefaultStagingPrefix, func(o objectstore.Object) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := b.store.Delete(ctx, destBucket, k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// execute runs every input as one execution, shows progress, writes the
// report and prints the summary. It fails when anything went to the DLQ or
// failed outright; remediation is a data outcome, not a failed run.
func (f *runFlags) execute(ctx context.Context, exec *asl.Executor, tracker *statestore.Tracker, inputs []migration.Source, backend string, recipe recipe.Recipe, paths localPaths, stdout, stderr io.Writer) error {
	release := func(ctx context.Context, jobID, execution string) error {
		return tracker.Release(ctx, jobID, execution, "execution ended unfinished")
	}
	isTTY := false
	if file, ok := stderr.(*os.File); ok {
		isTTY = term.IsTerminal(int(file.Fd()))
	}
	prog := newProgress(stderr, len(inputs)+len(f.pre), f.progress == "bar" || (f.progress == "auto" && isTTY))
	if err := takeOverDeadLeases(ctx, tracker, f.closer, stderr); err != nil {
		return err
	}
	runner := &localrun.Runner{Executor: exec, Workers: f.workers, OnDone: prog.done, Release: release, Halt: f.halt, Grace: f.grace, Abort: abortOf(ctx)}
	stopNotice := context.AfterFunc(ctx, func() {
		fmt.Fprintf(stderr, "\ngeomigrate: %v: no new file starts; running ones get %s to finish (interrupt again to stop them now)\n", context.Cause(ctx), f.grace)
	})
	defer stopNotice()
	if f.closer != nil {
		runner.Ended = f.closer.Close
	}
	listed := ""
	if len(f.pre) > 0 {
		listed = fmt.Sprintf(" (+%d ignored or not followed)", len(f.pre))
	}
	fmt.Fprintf(stderr, "geomigrate %s: %d file(s)%s → %s (%s backend, GDAL %s, %d worker(s))\n", buildinfo.Version, len(inputs), listed, f.dest, backend, recipe.EngineVersion, f.workers)
	started := time.Now()
	for _, o := range f.pre {
		prog.done(o)
	}
	outcomes := runner.Run(ctx, inputs)
	prog.finish()

	report := localrun.NewReport(started, append(outcomes, f.pre...))
	report.Backend, report.Dest, report.Workers, report.Recipe = backend, f.dest, f.workers, recipe.CanonicalJSON()
	reportPath := f.report
	if reportPath == "" {
		reportPath = filepath.Join(paths.reports, "run-"+started.UTC().Format("20060102T150405.000")+".json")
	}
	// On a full disk the report may not fit either: the summary is
	// printed regardless.
	werr := report.Write(reportPath)
	report.PrintSummary(stdout)
	if werr != nil {
		fmt.Fprintf(stdout, "\nreport not written: %v\n", werr)
	} else {
		fmt.Fprintf(stdout, "\nreport: %s\n", reportPath)
	}
	fmt.Fprintf(stdout, "queues: %s, %s\n", paths.remediation, paths.deadLetter)
	if reason := f.halt.Reason(); reason != "" {
		return fmt.Errorf("run stopped, %s: %d file(s) not started; free the resource and run again (finished files are skipped)", reason, report.Totals.NotStarted)
	}
	if werr != nil {
		return werr
	}
	if t := report.Totals; t.DeadLetter+t.Failed > 0 {
		return fmt.Errorf("%d file(s) in the dead-letter queue, %d failed: see the report", t.DeadLetter, t.Failed)
	}
	return ctx.Err()
}

// saveBuckets remembers which directory each local bucket name stood for,
// so `geomigrate replay` can find a queued job's source again.
func saveBuckets(paths localPaths, roots []sourceRoot) error {
	known, err := loadBuckets(paths)
	if err != nil {
		return err
	}
	for _, r := range roots {
		known[r.bucket] = r.dir
	}
	b, err := json.MarshalIndent(known, "", "  ")
	if err != nil {
		return err
	}
	tmp := paths.buckets + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("save bucket map: %w", err)
	}
	return os.Rename(tmp, paths.buckets)
}

func loadBuckets(paths localPaths) (map[string]string, error) {
	known := map[string]string{}
	b, err := os.ReadFile(paths.buckets)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return known, nil
	case err != nil:
		return nil, fmt.Errorf("read bucket map: %w", err)
	}
	if err := json.Unmarshal(b, &known); err != nil {
		return nil, fmt.Errorf("read bucket map %s: %w", paths.buckets, err)
	}
	return known, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
