package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kong"
	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// resultsBucket is the local stand-in for the backfill's results bucket.
const resultsBucket = "backfill-results"

// backfillCmd runs statemachine/backfill.asl.json over a prefix of a local
// source tree: the same Distributed Map that scales out on AWS, here with
// its child executions run by the local executor. With --backend aws it
// starts the deployed backfill state machine instead.
type backfillCmd struct {
	Source    string `arg:"" optional:"" name:"SRC_DIR" help:"Local source directory (not with --backend aws)."`
	Prefix    string `name:"prefix" group:"io" help:"Key prefix under SRC_DIR (or the source bucket) to migrate (empty: everything)."`
	Dataset   string `name:"dataset" group:"io" help:"Dataset id (default: the source bucket)."`
	Tolerated int    `name:"tolerated-failure-percentage" group:"failures" default:"100" placeholder:"PERCENT" help:"Stop the map when more items fail (routed files count as failures), 0 to 100."`
	// With --backend aws.
	StateMachineArn string   `name:"state-machine-arn" env:"GEOMIGRATE_BACKFILL_STATE_MACHINE_ARN" group:"aws" placeholder:"ARN" help:"The deployed backfill state machine (stack output BackfillStateMachineArn)."`
	Manifest        string   `name:"manifest" group:"aws" placeholder:"s3://BUCKET/KEY" help:"An S3 Inventory manifest.json to backfill instead of --prefix."`
	Options         runFlags `embed:""`
}

// mapSettings are the Distributed Map's MaxConcurrency and
// ToleratedFailurePercentage written into the backfill's input (its
// MaxConcurrencyPath and ToleratedFailurePercentagePath): a flag the user
// gave, else the run-time policy document given to the command (--policy,
// or with --backend aws --policy-parameter). With --backend aws and
// neither, a value is left out: the state machine reads the stack's policy
// parameter itself (its ReadPolicy state) and falls back to its defaults.
// Locally, where the children share this machine, both are always written
// and the concurrency is capped at --workers.
func (c *backfillCmd) mapSettings(ctx context.Context, k *kong.Context) (map[string]any, error) {
	f := &c.Options
	workersGiven, toleratedGiven := flagGiven(k, "workers", ""), flagGiven(k, "tolerated-failure-percentage", "")
	out := map[string]any{}
	if workersGiven || !f.Where.aws() {
		out["max_concurrency"] = f.Workers
	}
	if toleratedGiven || !f.Where.aws() {
		out["tolerated_failure_percentage"] = c.Tolerated
	}
	src, err := f.policySource(ctx, nil)
	if err != nil || src == nil {
		return out, err
	}
	doc := src.Current(ctx)
	if !workersGiven {
		maxConcurrency := doc.Backfill.MaxConcurrency
		if !f.Where.aws() {
			maxConcurrency = min(maxConcurrency, f.Workers)
		}
		out["max_concurrency"] = maxConcurrency
	}
	if !toleratedGiven {
		out["tolerated_failure_percentage"] = doc.Backfill.ToleratedFailurePercentage
	}
	return out, nil
}

// Validate checks the percentage.
func (c *backfillCmd) Validate() error {
	if c.Tolerated < 0 || c.Tolerated > 100 {
		return fmt.Errorf("--tolerated-failure-percentage %d: want 0 to 100", c.Tolerated)
	}
	return nil
}

func (c *backfillCmd) Run(e *cmdEnv, k *kong.Context) error {
	c.Options.kctx = k
	f := &c.Options
	input, err := c.mapSettings(e.ctx, k)
	if err != nil {
		return err
	}
	if f.Where.aws() {
		if c.Dataset != "" {
			input["dataset_id"] = c.Dataset
		}
		if c.Manifest != "" {
			bucket, key, err := s3URI(c.Manifest)
			if err != nil {
				return usagef("--manifest: %v", err)
			}
			input["manifest"] = map[string]string{"bucket": bucket, "key": key}
		} else {
			input["prefix"] = c.Prefix
		}
		return f.Where.startBackfill(e.ctx, c.StateMachineArn, input, e.stdout)
	}
	if f.Dest == "" || c.Source == "" {
		return usagef("backfill needs SRC_DIR and --dest DIR (or --backend aws)")
	}
	if err := checkSchemes([]string{c.Source}, f.Dest, false); err != nil {
		return err
	}
	if fi, err := os.Stat(c.Source); err != nil || !fi.IsDir() {
		return fmt.Errorf("backfill: %s is not a directory", c.Source)
	}
	roots, _, _, err := collectSources([]string{c.Source}, f.Dest)
	if err != nil {
		return err
	}
	// The recipe is checked before the results directory is made: a
	// refused recipe leaves the destination as it was.
	if err := f.checkRecipeFirst(e.stderr); err != nil {
		return err
	}
	resultsDir := filepath.Join(pathsFor(f.Dest, f.StateDir).dir, "backfill")
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return err
	}
	be, err := f.open(e.ctx, e.stderr, openRequest{roots: roots, extra: []sourceRoot{{bucket: resultsBucket, dir: resultsDir}}})
	if err != nil {
		return err
	}
	defer be.Close()
	// The progress counts what the map will list: the keys under the
	// prefix (ignored files among them end as items too), and their sizes
	// as the map's listing gives them (the ETA's bytes).
	total, sizes := 0, listedSizes{}
	err = be.local.store.List(e.ctx, roots[0].bucket, c.Prefix, func(o objectstore.Object) error {
		total++
		sizes[sourceRef{roots[0].bucket, o.Key}] = o.Size
		return nil
	})
	if err != nil {
		return err
	}
	prog, closeProgress, err := f.progressWithLogs(e.stderr, total, sizes)
	if err != nil {
		return err
	}
	defer closeProgress()
	exec, err := localrun.NewExecutor(be.handlers, be.queues, asl.WithExecutionHistory(prog.observe))
	if err != nil {
		return err
	}
	cfg := localrun.BackfillConfig{SourceBucket: roots[0].bucket, ResultsBucket: resultsBucket, Store: be.local.store, Migrate: exec, Ended: be.closer.Close, OnDone: prog.done, DeadLetter: be.queues.DeadLetter}
	if f.Policy != "" {
		// The state machine's ReadPolicy reads the same file; the input's
		// values, taken from it above, come first.
		cfg.Policy = policy.File{Path: f.Policy}
	}
	bf, err := localrun.NewBackfill(cfg)
	if err != nil {
		return err
	}
	input["prefix"], input["dataset_id"] = c.Prefix, c.Dataset
	inputJSON, _ := json.Marshal(input)
	fmt.Fprintf(e.stderr, "geomigrate %s: backfill of %s/%s → %s (%d at a time)\n", buildinfo.Version, roots[0].dir, c.Prefix, f.Dest, input["max_concurrency"])
	recipe := be.handlers.Recipe()
	prog.start(runHeader{Version: buildinfo.Version, Files: total, Dest: f.Dest, Backend: backendLocal, GDAL: recipe.EngineVersion, Workers: f.Workers})
	started := time.Now()
	stopHeartbeat := startHeartbeat(e.ctx, be.tracker(), f.Heartbeat, prog.notice)
	res, outcomes, err := bf.Run(e.ctx, localrun.ExecutionName("backfill"), inputJSON)
	stopHeartbeat()
	defer outcomes.Close()
	if err != nil {
		if outcomes != nil {
			prog.finish(localrun.NewSpooledReport(started, outcomes), "")
		}
		return err
	}
	stateErr := be.commitState()
	if stateErr != nil {
		prog.notice(fmt.Sprintf("geomigrate: %v", stateErr))
	}
	treeErr := linkTree(context.WithoutCancel(e.ctx), be.ports)
	if treeErr != nil {
		prog.notice(fmt.Sprintf("geomigrate: STAC catalog: %v", treeErr))
	}
	// The report reads the outcomes back from their spool as it is
	// written: a backfill's memory does not grow with its items.
	report := localrun.NewSpooledReport(started, outcomes)
	report.Backend, report.Dest, report.Workers, report.Recipe = backendLocal, f.Dest, f.Workers, recipe.CanonicalJSON()
	addSignals(e.ctx, report, be, prog.notice)
	reportPath := f.Report
	if reportPath == "" {
		reportPath = filepath.Join(be.paths.reports, "backfill-"+started.UTC().Format("20060102T150405.000")+".json")
	}
	report.Dest = reportDest(reportPath, f.Dest)
	if err := report.Write(reportPath); err != nil {
		prog.finish(report, "")
		return err
	}
	prog.finish(report, reportPath)
	report.PrintSummary(e.stdout, termtable.Width(e.stdout))
	fmt.Fprintf(e.stdout, "\nbackfill execution: %s (%s)\nresults: %s\nreport: %s\n", res.Name, res.Status, resultsDir, reportPath)
	if res.Status != "SUCCEEDED" {
		return fmt.Errorf("backfill %s: %s: %s", res.Status, res.Error, res.Cause)
	}
	if stateErr != nil {
		return stateNotCommitted(stateErr)
	}
	if treeErr != nil {
		return fmt.Errorf("the outputs are published, but the STAC catalog does not link this run's items: %w", treeErr)
	}
	return nil
}
