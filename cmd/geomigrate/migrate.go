package main

// Size: the migrate command: its flags, its run and the staging sweeps around it read top to bottom; execute is the pipeline itself.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/alecthomas/kong"
	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/steps"
	"github.com/geomigrate/geomigrate/internal/termtable"
	"github.com/geomigrate/geomigrate/statemachine"
)

// runFlags are the flags shared by every command that runs the state
// machine over files (migrate, replay, backfill): the handlers' settings
// (internal/config, shared with the Lambda functions), the backend, and
// how this process runs and reports.
type runFlags struct {
	Dest      string        `name:"dest" group:"io" placeholder:"DIR|s3://BUCKET[/PREFIX]" help:"Destination: a directory, or s3://BUCKET[/PREFIX] with --backend aws."`
	Workers   int           `name:"workers" group:"limits" default:"${workers}" help:"Files migrated at once (default: the number of CPUs; with --backend aws ${awsWorkersPerCPU} × the CPUs, since each file also waits on S3 and DynamoDB round trips, docs/decisions/0116). Each conversion gets the CPUs ÷ workers GDAL threads (÷ files when fewer), at least one."`
	StateDir  string        `name:"state-dir" group:"state" placeholder:"DIR" help:"State store, queues and reports (default DEST/.geomigrate-state; with --backend aws ./.geomigrate-state)."`
	Report    string        `name:"report" group:"output" placeholder:"FILE" help:"JSON run report path (default STATE-DIR/reports/run-TIME.json)."`
	Progress  string        `name:"progress" group:"output" type:"fold" enum:"auto,bar,plain,json" default:"auto" help:"auto (a bar on a terminal, plain lines otherwise), bar, plain (one line per finished file) or json (one JSON object per state transition and per file, then a summary, on stderr or --progress-file)."`
	LogLevel  string        `name:"log-level" group:"output" type:"fold" enum:"debug,info,warn,error" default:"error" help:"Level of the handler logs on stderr (routed files are in the progress lines and the summary already)."`
	LogFormat string        `name:"log-format" group:"output" type:"fold" enum:"text,json" default:"text" help:"Handler log format: text or json."`
	Policy    string        `name:"policy" group:"failures" placeholder:"FILE" help:"Run-time policy document (JSON: classification rules, job deadline, backfill concurrency; docs/operations.md), read again at each file's routing so an edit applies to files that fail after it. With --backend aws and no --policy: --policy-parameter."`
	Grace     time.Duration `name:"grace" group:"state" default:"20s" help:"On SIGINT/SIGTERM no new file starts and running ones get this long to finish; then (or at a second signal) they are stopped and rolled back."`
	Heartbeat time.Duration `name:"heartbeat" group:"state" default:"30s" help:"How often the run renews the heartbeat of the files it holds; a run that misses 4 in a row (killed, its host or container gone) has its files taken over by the next run, on any host."`

	// ProgressFile keeps the JSON stream apart from stderr's other lines.
	ProgressFile string `name:"progress-file" group:"output" placeholder:"FILE" help:"With --progress json: write the event stream to FILE instead of stderr."`
	// logs is where open's logger writes: stderr, and the run's progress
	// display while it is shown.
	logs *logSink

	Handlers config.Handlers `embed:""`
	Where    backendFlags    `embed:""`
	Recipes  recipeFlags     `embed:""`

	// kctx is the parsed command line (which flags the user gave: a
	// recipe file yields only to those); book is the recipe book, built
	// once by recipeBookOnce.
	kctx *kong.Context
	book *recipe.Book
}

// Validate checks the numbers kong's tags cannot.
func (f *runFlags) Validate() error {
	switch {
	case f.Workers < 1:
		return fmt.Errorf("--workers %d: want 1 or more", f.Workers)
	case f.Grace < 0:
		return fmt.Errorf("--grace %s: want 0 or more", f.Grace)
	case f.Heartbeat < 100*time.Millisecond:
		return fmt.Errorf("--heartbeat %s: want 100ms or more", f.Heartbeat)
	case f.ProgressFile != "" && f.Progress != progressJSON:
		return fmt.Errorf("--progress-file needs --progress json")
	}
	return f.checkLease()
}

// open wires the handlers over the chosen backend.
func (f *runFlags) open(ctx context.Context, stderr io.Writer, r openRequest) (*backend, error) {
	f.logs = &logSink{w: stderr}
	log, err := newLogger(f.logs, f.LogLevel, f.LogFormat)
	if err != nil {
		return nil, err
	}
	f.defaultWorkers()
	r.dest, r.stateDir, r.handlers, r.log, r.workers = f.Dest, f.StateDir, f.Handlers, log, f.Workers
	if r.book, err = f.recipeBookOnce(stderr); err != nil {
		return nil, err
	}
	r.recipes = &f.Recipes
	if f.Policy != "" {
		if r.policy, err = f.policySource(ctx, log); err != nil {
			return nil, err
		}
	}
	return f.Where.open(ctx, r)
}

// awsWorkersPerCPU is the default --workers per CPU with --backend aws:
// each file there also waits on about twenty S3 and DynamoDB round trips,
// during which another file's conversion can use the CPU
// (docs/decisions/0116 has the measurements).
const awsWorkersPerCPU = 2

// defaultWorkers sets the AWS backend's default --workers when the
// command line gave none (the flag's own default is the CPUs, the local
// backend's).
func (f *runFlags) defaultWorkers() {
	if f.Where.aws() && f.kctx != nil && !flagGiven(f.kctx, "workers", "") {
		f.Workers = awsWorkersPerCPU * runtime.NumCPU()
	}
}

// recipeBookOnce builds the run's recipe book the first time it is asked.
func (f *runFlags) recipeBookOnce(stderr io.Writer) (*recipe.Book, error) {
	if f.book == nil {
		b, err := f.recipeBook(f.kctx, stderr)
		if err != nil {
			return nil, err
		}
		f.book = b
	}
	return f.book, nil
}

// checkRecipeFirst checks the run's recipe book against this GDAL before
// the command writes anything (open checks it again with the engine it
// opens).
func (f *runFlags) checkRecipeFirst(stderr io.Writer) error {
	book, err := f.recipeBookOnce(stderr)
	if err != nil {
		return err
	}
	engine, err := gdal.New()
	if err != nil {
		return fmt.Errorf("GDAL: %w", err)
	}
	return checkRecipes(book, f.Recipes.File, engine)
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
		fmt.Fprintf(stderr, "%-11s %s/%s %s\n", o.Status, o.Bucket, objectstore.QuoteKey(o.Key), o.Reason)
	}
	return fmt.Errorf("nothing to migrate: %s holds no geospatial candidate, %d file(s) ignored or skipped (listed above)", where, len(pre))
}

// minLease is the bound --lease must exceed: the longest task timeout of the
// local executor (task timeout < lease, as infra enforces for function
// timeouts), or a second execution takes a file over while its first
// attempt is still converting it.
var minLease = time.Duration(statemachine.DefaultTaskTimeouts.Longest()) * time.Second

// checkLease refuses a lease too short to cover one conversion.
func (f *runFlags) checkLease() error {
	if lease := f.Handlers.Lease.Duration(); lease <= minLease {
		return fmt.Errorf("--lease %s: must be longer than %s, the longest task timeout (a shorter lease lets a second run convert a file still being converted)", lease, minLease)
	}
	return nil
}

// migrateCmd is `geomigrate migrate`.
type migrateCmd struct {
	Sources []string `arg:"" name:"SRC" help:"Source files and directories (a directory is one dataset), or s3://BUCKET[/PREFIX] with --backend aws."`
	Options runFlags `embed:""`
}

// Help is the text under the usage line.
func (*migrateCmd) Help() string {
	return `Each source file runs once through the migrate state machine. Examples:
  geomigrate migrate samples/ --dest out/
  geomigrate migrate s3://archive/rasters/ --backend aws --dest s3://cloud-native/out --state-table T`
}

func (c *migrateCmd) Run(e *cmdEnv, k *kong.Context) error {
	f := &c.Options
	f.kctx = k
	if f.Dest == "" {
		return usagef("migrate needs --dest")
	}
	src, err := f.Where.resolveSources(c.Sources, f.Dest)
	if err != nil {
		return err
	}
	// Local sources are walked already: an empty set is refused before
	// GDAL or the state store is opened.
	if _, err := f.recipeBookOnce(e.stderr); err != nil {
		return err
	}
	if err := src.check(e.stderr); err != nil {
		return err
	}
	be, err := f.open(e.ctx, e.stderr, src.openRequest())
	if err != nil {
		return err
	}
	defer be.Close()
	// S3 sources are listed once the buckets, the table and the queues
	// were found (one line naming what is missing).
	if err := src.list(e.ctx, be); err != nil {
		return err
	}
	if err := src.check(e.stderr); err != nil {
		return err
	}
	routeClashes(be.handlers.HashCheck, src.inputs, f.Dest, e.stderr)
	return f.migrate(e, be, src.inputs, src.pre, "")
}

// checkSchemes refuses s3:// locations on the local backend and local
// paths on the AWS backend, saying which flag is missing.
func checkSchemes(srcs []string, dest string, aws bool) error {
	for _, s := range append([]string{dest}, srcs...) {
		switch isS3 := strings.HasPrefix(s, "s3://"); {
		case isS3 && !aws:
			return usagef("%s is an S3 location: add --backend aws (and --state-table)", s)
		case !isS3 && aws:
			return usagef("%s is not an s3://BUCKET[/PREFIX] location, which --backend aws reads and writes", s)
		}
	}
	return nil
}

// migrate runs inputs through a new executor over be, then (locally)
// sweeps what unfinished jobs staged. reportPath, when set, is where the
// run report goes (replay reads it back).
func (f *runFlags) migrate(e *cmdEnv, be *backend, inputs []migration.Source, pre []localrun.Outcome, reportPath string) error {
	// Fewer files than workers: the CPUs are shared among the files there
	// are (one large raster gets them all; docs/decisions/0085).
	if be.engine != nil {
		be.engine.SetConversions(min(f.Workers, len(inputs)))
	}
	prog, closeProgress, err := f.progressWithLogs(e.stderr, len(inputs)+len(pre), sizesOf(inputs))
	if err != nil {
		return err
	}
	defer closeProgress()
	if lb := be.local; lb != nil && lb.sweptTemps > 0 {
		prog.notice(fmt.Sprintf("geomigrate: removed %d temporary file(s) left in %s by an interrupted run", lb.sweptTemps, f.Dest))
	}
	halt := localrun.NewHalt()
	exec, err := localrun.NewExecutor(be.handlers, be.queues, asl.WithHistory(halt.Observe), asl.WithExecutionHistory(prog.observe))
	if err != nil {
		return err
	}
	return f.execute(e, execution{exec: exec, be: be, inputs: inputs, pre: pre, halt: halt, report: reportPath, prog: prog})
}

// progressWithLogs opens the progress view and routes the run's log lines
// through it (above the bar) until the returned func, which also closes
// the view, puts them back on stderr.
func (f *runFlags) progressWithLogs(stderr io.Writer, total int, sizes listedSizes) (progress, func(), error) {
	prog, closeProgress, err := f.progress(stderr, total, sizes)
	if err != nil {
		return prog, nil, err
	}
	if f.logs == nil {
		return prog, closeProgress, nil
	}
	f.logs.to(noticeWriter{p: prog, log: true})
	return prog, func() { f.logs.to(stderr); closeProgress() }, nil
}

// progress opens the view --progress asks for over total inputs, sizes
// the listed bytes of those that run: auto is the bar when stderr is a
// terminal. The returned func closes --progress-file.
func (f *runFlags) progress(stderr io.Writer, total int, sizes listedSizes) (progress, func(), error) {
	mode, w, closeFile := f.Progress, stderr, func() {}
	if mode == progressAuto {
		mode = progressPlain
		if file, ok := stderr.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
			mode = progressBar
		}
	}
	if f.ProgressFile != "" {
		file, err := os.Create(f.ProgressFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--progress-file: %w", err)
		}
		w, closeFile = file, func() { _ = file.Close() }
	}
	return newProgress(mode, w, total, sizes, f.Workers), closeFile, nil
}

// sweepStaging removes what unfinished jobs (routed after Convert, or
// interrupted) left under the staging prefix. Safe here: the embedded state
// store admits one process at a time, and every execution of this one has
// ended. On AWS a bucket lifecycle rule expires staging objects instead.
func sweepStaging(ctx context.Context, be *backend) (int, error) {
	b := be.local
	n := 0
	// The quarantine bucket stages its bundles under the same prefix.
	for _, bucket := range []string{destBucket, quarantineBucket} {
		var keys []string
		err := b.store.List(ctx, bucket, be.ports.Config.StagingPrefix, func(o objectstore.Object) error {
			keys = append(keys, o.Key)
			return nil
		})
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			if err := b.store.Delete(ctx, bucket, k); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// sweepMigratedStaging removes, on the AWS backend, what is left under the
// staging prefixes of this run's jobs that ended migrated: completed now,
// or skipped as already migrated. Promote deletes its staged copies after
// recording COMPLETED, so a process killed between the two (or a store
// that refused the deletes) leaves them, and the next run skips the file.
// Only these jobs' prefixes are touched: other executions on the same
// bucket (Step Functions, other runs) keep their staging, and the bucket's
// lifecycle rule still expires anything else. One listing of the staging
// prefix, and only when some job ended migrated.
func sweepMigratedStaging(ctx context.Context, ports steps.Ports, outcomes func(func(localrun.Outcome) error) error) (int, error) {
	prefixes := map[string]bool{}
	err := outcomes(func(o localrun.Outcome) error {
		migrated := o.Status == localrun.StatusCompleted || (o.Status == localrun.StatusSkipped && o.Reason == migration.ReasonAlreadyMigrated)
		if migrated && strings.HasPrefix(o.StagingPrefix, ports.Config.StagingPrefix) && o.StagingPrefix != ports.Config.StagingPrefix {
			prefixes[o.StagingPrefix] = true
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweepMigratedStaging: %w", err)
	}
	if len(prefixes) == 0 {
		return 0, nil
	}
	bucket := ports.Config.DestBucket
	var keys []string
	err = ports.Store.List(ctx, bucket, ports.Config.StagingPrefix, func(o objectstore.Object) error {
		// A job's staging prefix is STAGING/<dir>/: its first two levels.
		rest := strings.TrimPrefix(o.Key, ports.Config.StagingPrefix)
		if dir, _, ok := strings.Cut(rest, "/"); ok && prefixes[ports.Config.StagingPrefix+dir+"/"] {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweepMigratedStaging: %w", err)
	}
	for i, k := range keys {
		if err := ports.Store.Delete(ctx, bucket, k); err != nil {
			return i, fmt.Errorf("sweepMigratedStaging: %w", err)
		}
	}
	return len(keys), nil
}

// execution is one run of inputs through an executor over a backend.
type execution struct {
	exec   *asl.Executor
	be     *backend
	inputs []migration.Source
	// pre are outcomes decided before the run (links not followed,
	// non-geospatial files): reported with the others.
	pre []localrun.Outcome
	// halt stops the run when the disk or memory is exhausted (its
	// observer is on the executor).
	halt *localrun.Halt
	// report is the run report's path ("" : STATE-DIR/reports/run-TIME.json).
	report string
	// prog shows the run (its observe is on the executor).
	prog progress
}

// execute runs every input as one execution, shows progress, writes the
// report and prints the summary. It fails when anything went to the DLQ or
// failed outright; remediation is a data outcome, not a failed run.
func (f *runFlags) execute(e *cmdEnv, x execution) error {
	ctx, stdout := e.ctx, e.stdout
	tracker := x.be.tracker()
	release := func(ctx context.Context, jobID, execution string) error {
		return tracker.Release(ctx, jobID, execution, "execution ended unfinished")
	}
	prog := x.prog
	stopHeartbeat := startHeartbeat(ctx, tracker, f.Heartbeat, prog.notice)
	defer stopHeartbeat()
	if err := takeOverDeadLeases(ctx, tracker, x.be.closer, x.inputs, x.be.local != nil, noticeWriter{p: prog}); err != nil {
		return err
	}
	runner := &localrun.Runner{Executor: x.exec, Workers: f.Workers, OnDone: prog.done, Release: release, Halt: x.halt, Grace: f.Grace, Abort: abortOf(ctx), Ended: x.be.closer.Close, DropHistory: true}
	stopNotice := context.AfterFunc(ctx, func() {
		prog.notice(fmt.Sprintf("geomigrate: %v: no new file starts; running ones get %s to finish (interrupt again to stop them now)", context.Cause(ctx), f.Grace))
	})
	defer stopNotice()
	recipe := x.be.handlers.Recipe()
	prog.start(runHeader{Version: buildinfo.Version, Files: len(x.inputs), Listed: len(x.pre), Dest: f.Dest, Backend: x.be.name, GDAL: recipe.EngineVersion, Workers: f.Workers})
	// Each file's outcome is spooled to disk as it ends and read back, in
	// input order, for the report, the summary and the sweeps: the run's
	// memory does not grow with its files (docs/decisions/0117).
	outcomes, err := localrun.NewOrderedOutcomes(len(x.inputs) + len(x.pre))
	if err != nil {
		return err
	}
	defer outcomes.Close()
	started := time.Now()
	for _, o := range x.pre {
		prog.done(o)
	}
	runner.Spool(ctx, x.inputs, outcomes)
	for j, o := range x.pre {
		outcomes.Put(len(x.inputs)+j, o)
	}
	held, heldUntil, herr := heldElsewhere(context.WithoutCancel(ctx), tracker, outcomes.Each)
	if herr != nil {
		prog.notice(fmt.Sprintf("geomigrate: %v", herr))
	}
	if x.be.local != nil {
		// Every execution of this run has ended: what unfinished jobs
		// staged can go.
		if n, serr := sweepStaging(context.WithoutCancel(ctx), x.be); serr != nil {
			prog.notice(fmt.Sprintf("geomigrate: staging sweep: %v", serr))
		} else if n > 0 {
			prog.notice(fmt.Sprintf("geomigrate: removed %d staged object(s) left by unfinished jobs", n))
		}
	} else if n, serr := sweepMigratedStaging(context.WithoutCancel(ctx), x.be.ports, outcomes.Each); serr != nil {
		prog.notice(fmt.Sprintf("geomigrate: staging sweep: %v", serr))
	} else if n > 0 {
		prog.notice(fmt.Sprintf("geomigrate: removed %d staged object(s) of migrated files", n))
	}

	stateErr := x.be.commitState()
	if stateErr != nil {
		prog.notice(fmt.Sprintf("geomigrate: %v", stateErr))
	}
	treeErr := linkTree(context.WithoutCancel(ctx), x.be.ports)
	if treeErr != nil {
		prog.notice(fmt.Sprintf("geomigrate: STAC catalog: %v", treeErr))
	}

	report := localrun.NewSpooledReport(started, outcomes)
	report.Backend, report.Dest, report.Workers, report.Recipe = x.be.name, f.Dest, f.Workers, recipe.CanonicalJSON()
	addSignals(context.WithoutCancel(ctx), report, x.be, prog.notice)
	reportPath := x.report
	if reportPath == "" {
		reportPath = f.Report
	}
	if reportPath == "" {
		reportPath = filepath.Join(x.be.paths.reports, "run-"+started.UTC().Format("20060102T150405.000")+".json")
	}
	if x.be.local != nil {
		report.Dest = reportDest(reportPath, f.Dest)
	}
	// On a full disk the report may not fit either: the summary is
	// printed regardless.
	werr := report.Write(reportPath)
	if werr != nil {
		prog.finish(report, "")
	} else {
		prog.finish(report, reportPath)
	}
	report.PrintSummary(stdout, termtable.Width(stdout))
	if werr != nil {
		fmt.Fprintf(stdout, "\nreport not written: %v\n", werr)
	} else {
		fmt.Fprintf(stdout, "\nreport: %s\n", reportPath)
	}
	termtable.WriteText(stdout, fmt.Sprintf("queues: %s, %s", x.be.paths.remediation, x.be.paths.deadLetter), "        ", termtable.Width(stdout))
	if reason := x.halt.Reason(); reason != "" {
		return fmt.Errorf("run stopped, %s: %d file(s) not started; free the resource and run again (finished files are skipped)", reason, report.Totals.NotStarted)
	}
	if werr != nil {
		return werr
	}
	if stateErr != nil {
		return stateNotCommitted(stateErr)
	}
	if len(held) > 0 {
		fmt.Fprintf(stdout, "\n%d file(s) not migrated: another run holds them (a live lease, or one whose heartbeat has not lapsed yet):\n", len(held))
		for _, l := range held {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
	}
	if t := report.Totals; t.DeadLetter+t.Failed > 0 {
		return fmt.Errorf("%d file(s) in the dead-letter queue, %d failed: see the report", t.DeadLetter, t.Failed)
	}
	if len(held) > 0 {
		return fmt.Errorf("%d file(s) held by another run were not migrated (listed above): run again after %s, or once that run has ended", len(held), heldUntil.UTC().Format(time.RFC3339))
	}
	if treeErr != nil {
		return fmt.Errorf("the outputs are published, but the STAC catalog does not link this run's items: %w", treeErr)
	}
	return ctx.Err()
}

// reportDest is how a local run's report names its destination: relative
// to the report file's directory (so that `report --html` finds the
// outputs from any working directory, and a destination copied with its
// state directory keeps a working report), or absolute when the two share
// no root.
func reportDest(reportPath, dest string) string {
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return dest
	}
	absReport, err := filepath.Abs(reportPath)
	if err != nil {
		return absDest
	}
	rel, err := filepath.Rel(filepath.Dir(absReport), absDest)
	if err != nil {
		return absDest
	}
	return rel
}

// linkTree links the STAC items of the destination into its catalog
// once per run, after the last file: this run's, and any a killed run, a
// failed update or the Lambda path left unlinked (docs/stac.md).
// Reconcile is idempotent: a store error is retried a few times, as the
// state machine retries a task, before the run reports it.
func linkTree(ctx context.Context, ports steps.Ports) error {
	tree := migration.NewTree(ports.Config, ports.Store).WithItemLog(ports.Items)
	var err error
	for attempt := range 4 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(1<<attempt) * 250 * time.Millisecond):
			}
		}
		if _, err = tree.Reconcile(ctx); err == nil {
			return nil
		}
	}
	return err
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

// addSignals puts the run's fallback rates, recovery latencies and (locally)
// the dead-letter queue into the report. What cannot be read is noticed
// and left out; the report is written regardless.
func addSignals(ctx context.Context, report *localrun.Report, be *backend, notice func(string)) {
	recovered, err := report.Recovered(ctx, be.tracker(), be.local != nil)
	if err != nil {
		notice(fmt.Sprintf("geomigrate: recovery latency not reported: %v", err))
	}
	var deadLetter *signals.QueueAge
	if be.local != nil {
		if deadLetter, err = localrun.DeadLetterAge(ctx, be.paths.deadLetter, time.Now(), supersededBy(ctx, be.tracker().Get)); err != nil {
			notice(fmt.Sprintf("geomigrate: dead-letter queue not reported: %v", err))
		}
	}
	report.AddSignals(be.ports.Thresholds(), recovered, deadLetter)
}
