package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// resultsBucket is the local stand-in for the backfill's results bucket.
const resultsBucket = "backfill-results"

// runBackfill runs statemachine/backfill.asl.json over a prefix of a local
// source tree: the same Distributed Map that scales out on AWS, here with
// its child executions run by the local executor.
func runBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backfill", stderr)
	f := addRunFlags(fs)
	prefix := fs.String("prefix", "", "key prefix under SRC to migrate (\"\" for everything)")
	dataset := fs.String("dataset", "", "dataset id (default: the source bucket)")
	tolerated := fs.Int("tolerated-failure-percentage", 100, "stop the map when more items fail (routed files count as failures)")
	backend := fs.String("backend", "local", "local (run the backfill here) or aws (start the deployed backfill state machine)")
	stateMachine := fs.String("state-machine-arn", "", "with --backend aws: the backfill state machine (stack output BackfillStateMachineArn)")
	manifest := fs.String("manifest", "", "with --backend aws: s3://bucket/key of an S3 Inventory manifest.json instead of --prefix")
	var a awsFlags
	a.add(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *backend == "aws" {
		input := map[string]any{"max_concurrency": f.workers, "tolerated_failure_percentage": *tolerated}
		if *dataset != "" {
			input["dataset_id"] = *dataset
		}
		if *manifest != "" {
			bucket, key, err := s3URI(*manifest)
			if err != nil {
				return fmt.Errorf("--manifest: %w", err)
			}
			input["manifest"] = map[string]string{"bucket": bucket, "key": key}
		} else {
			input["prefix"] = *prefix
		}
		return a.startBackfill(ctx, *stateMachine, input, stdout)
	}
	if f.dest == "" || len(pos) != 1 {
		fmt.Fprintln(stderr, "Usage: geomigrate backfill SRC_DIR --dest DIR [--prefix P] [--dataset D] [run flags]")
		return errUsage
	}
	roots, _, _, err := collectSources(pos, f.dest)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(pos[0]); err != nil || !fi.IsDir() {
		return fmt.Errorf("backfill: %s is not a directory", pos[0])
	}
	resultsDir := filepath.Join(pathsFor(f.dest, f.stateDir).dir, "backfill")
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return err
	}
	p, err := f.openLocalPipeline(roots, []sourceRoot{{bucket: resultsBucket, dir: resultsDir}}, stderr)
	if err != nil {
		return err
	}
	defer p.backend.Close()
	closer := migration.NewExecutionFailed(p.cfg, p.backend.store, p.backend.tracker, p.backend.queues.DeadLetter, slog.New(slog.DiscardHandler))
	bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: roots[0].bucket, ResultsBucket: resultsBucket, Store: p.backend.store, Migrate: p.exec, Ended: closer.Close})
	if err != nil {
		return err
	}
	paths := p.paths
	input, _ := json.Marshal(map[string]any{"prefix": *prefix, "dataset_id": *dataset, "max_concurrency": f.workers, "tolerated_failure_percentage": *tolerated})
	fmt.Fprintf(stderr, "geomigrate %s: backfill of %s/%s → %s (%d at a time)\n", buildinfo.Version, roots[0].dir, *prefix, f.dest, f.workers)
	started := time.Now()
	res, outcomes, err := bf.Run(ctx, localrun.ExecutionName("backfill"), input)
	if err != nil {
		return err
	}
	report := localrun.NewReport(started, outcomes)
	report.Backend, report.Dest, report.Workers, report.Recipe = "local", f.dest, f.workers, p.recipe.CanonicalJSON()
	reportPath := f.report
	if reportPath == "" {
		reportPath = filepath.Join(paths.reports, "backfill-"+started.UTC().Format("20060102T150405.000")+".json")
	}
	if err := report.Write(reportPath); err != nil {
		return err
	}
	report.PrintSummary(stdout)
	fmt.Fprintf(stdout, "\nbackfill execution: %s (%s)\nresults: %s\nreport: %s\n", res.Name, res.Status, resultsDir, reportPath)
	if res.Status != "SUCCEEDED" {
		return fmt.Errorf("backfill %s: %s: %s", res.Status, res.Error, res.Cause)
	}
	return nil
}
