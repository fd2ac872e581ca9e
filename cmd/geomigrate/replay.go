package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kong"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
)

// replayCmd is `geomigrate replay`: it runs the jobs a queue holds again,
// dead-letter jobs once the system is healthy, remediation jobs once their
// files are fixed (a fixed file has new content, so it is a new job; an
// unchanged one is reported skipped as awaiting remediation).
//
// Messages are consumed as SQS consumes them, with the local JSONL queues
// too: each is received (hidden for --visibility-timeout), its job is run,
// and it is deleted only once the job reached an end: completed, already
// migrated, or routed again (the new message carries it on). A message
// whose job did not end (in progress elsewhere, awaiting remediation
// because the file is unchanged, failed, interrupted) is made visible again.
type replayCmd struct {
	Queue      string        `name:"queue" group:"failures" type:"fold" enum:"dlq,remediation" default:"dlq" help:"Which queue: dlq or remediation."`
	Visibility time.Duration `name:"visibility-timeout" group:"failures" default:"30m" help:"How long received messages stay hidden while their jobs run (1s to 12h, SQS's range); with --backend aws also how long the executions are waited for."`
	// With --backend aws the jobs run as executions of the deployed
	// migrate state machine, with the deployed functions' GDAL; --local
	// converts them in this process instead.
	StateMachineArn string   `name:"state-machine-arn" env:"GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN" group:"aws" placeholder:"ARN" help:"The deployed migrate state machine (stack output MigrateStateMachineArn) that --backend aws replays through."`
	Local           bool     `name:"local" group:"aws" help:"With --backend aws: convert in this process with this machine's GDAL (the AWS adapters, no Step Functions) instead of starting executions of the deployed state machine."`
	Options         runFlags `embed:""`
}

// Validate checks the visibility timeout against SQS's range.
func (c *replayCmd) Validate() error {
	if c.Visibility < time.Second || c.Visibility > 12*time.Hour {
		return fmt.Errorf("--visibility-timeout %s: want 1s to 12h (SQS's range)", c.Visibility)
	}
	return nil
}

func (c *replayCmd) Run(e *cmdEnv, k *kong.Context) error {
	f := &c.Options
	f.kctx = k
	// Queued jobs run again under the recipe they were made with.
	f.Recipes.reuse = true
	if f.Where.aws() && !c.Local {
		// The deployed state machine knows its destination.
		return c.replayDeployed(e)
	}
	if f.Dest == "" {
		return usagef("replay needs --dest")
	}
	if err := checkSchemes(nil, f.Dest, f.Where.aws()); err != nil {
		return err
	}
	if f.Where.aws() {
		return c.replayAWS(e)
	}
	return c.replayLocal(e)
}

// replayLocal replays from the JSONL queues of a local destination.
func (c *replayCmd) replayLocal(e *cmdEnv) error {
	f := &c.Options
	paths := pathsFor(f.Dest, f.StateDir)
	path := paths.deadLetter
	if c.Queue == "remediation" {
		path = paths.remediation
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(e.stdout, "nothing to replay in %s\n", path)
		return nil
	}
	buckets, err := loadBuckets(paths)
	if err != nil {
		return err
	}
	q, err := jsonlqueue.Open(path)
	if err != nil {
		return err
	}
	defer q.Close()
	rootsBy := map[string]*sourceRoot{}
	known := func(src migration.Source) error {
		dir, ok := buckets[src.Bucket]
		if !ok {
			return fmt.Errorf("bucket %q is not known in %s", src.Bucket, paths.buckets)
		}
		if rootsBy[src.Bucket] == nil {
			rootsBy[src.Bucket] = &sourceRoot{bucket: src.Bucket, dir: dir}
		}
		return nil
	}
	rp := &replayer{queue: q, name: path, visibility: c.Visibility, stdout: e.stdout, stderr: e.stderr, accept: known}
	report := f.reportPath(paths)
	return rp.replay(e.ctx, func(ctx context.Context, inputs []migration.Source) error {
		var roots []sourceRoot
		for _, r := range rootsBy {
			roots = append(roots, *r)
		}
		be, err := f.open(ctx, e.stderr, openRequest{roots: roots})
		if err != nil {
			return err
		}
		defer be.Close()
		return f.migrate(e, be, inputs, nil, report)
	}, report)
}

// replayDeployed replays from an SQS queue (or, without its URL flag, the
// JSONL file `migrate --backend aws` wrote instead) by starting executions
// of the deployed migrate state machine, one per job, and settles each
// message by its execution's end.
func (c *replayCmd) replayDeployed(e *cmdEnv) error {
	f := &c.Options
	if c.StateMachineArn == "" {
		return usagef("replay --backend aws needs --state-machine-arn or " + envMigrateStateMachine + " (the stack output MigrateStateMachineArn); --local converts in this process instead")
	}
	d, err := f.Where.deployed(e.ctx, c.StateMachineArn)
	if err != nil {
		return err
	}
	paths := pathsFor(".", f.StateDir)
	q, name, closeQueue, err := c.openQueue(e, paths, func(url string) (queue.Consumer, error) {
		o := f.Where.clientOptions()
		cfg, err := awsconfig.Load(e.ctx, o)
		if err != nil {
			return nil, err
		}
		return sqsQueue(cfg, o, url), nil
	})
	if err != nil {
		return err
	}
	defer closeQueue()
	rp := &replayer{queue: q, name: name, visibility: c.Visibility, stdout: e.stdout, stderr: e.stderr}
	report := f.reportPath(paths)
	if err := os.MkdirAll(filepath.Dir(report), 0o755); err != nil {
		return err
	}
	deadline := time.Now().Add(c.Visibility)
	return rp.replay(e.ctx, func(ctx context.Context, inputs []migration.Source) error {
		return d.replayDeployed(ctx, e, inputs, deadline, report)
	}, report)
}

// replayAWS replays from an SQS queue (or, without its URL flag, the JSONL
// file `migrate --backend aws` wrote instead) through the AWS adapters.
func (c *replayCmd) replayAWS(e *cmdEnv) error {
	f := &c.Options
	be, err := f.open(e.ctx, e.stderr, openRequest{})
	if err != nil {
		return err
	}
	defer be.Close()
	paths := pathsFor(".", f.StateDir)
	q, name, closeQueue, err := c.openQueue(e, paths, func(url string) (queue.Consumer, error) { return be.app.Queue(url), nil })
	if err != nil {
		return err
	}
	defer closeQueue()
	rp := &replayer{queue: q, name: name, visibility: c.Visibility, stdout: e.stdout, stderr: e.stderr}
	report := f.reportPath(paths)
	return rp.replay(e.ctx, func(ctx context.Context, inputs []migration.Source) error {
		return f.migrate(e, be, inputs, nil, report)
	}, report)
}

// openQueue opens the queue --queue names: SQS at its URL flag (by sqs),
// or, without the flag, the JSONL file `migrate --backend aws` wrote
// instead. closeQueue releases what it opened.
func (c *replayCmd) openQueue(e *cmdEnv, paths localPaths, sqs func(url string) (queue.Consumer, error)) (q queue.Consumer, name string, closeQueue func(), err error) {
	f := &c.Options
	url, flagName := f.Where.AWS.DeadLetterQueueURL, "--dlq-url"
	file := paths.deadLetter
	if c.Queue == "remediation" {
		url, flagName, file = f.Where.RemediationQueueURL, "--remediation-queue-url", paths.remediation
	}
	if url != "" {
		q, err := sqs(url)
		return q, url, func() {}, err
	}
	fmt.Fprintf(e.stderr, "geomigrate: no %s: replaying %s\n", flagName, file)
	jq, err := jsonlqueue.Open(file)
	if err != nil {
		return nil, "", nil, err
	}
	return jq, file, func() { jq.Close() }, nil
}

// reportPath fixes the run report's path (replay reads it back for the
// outcome of each job).
func (f *runFlags) reportPath(paths localPaths) string {
	if f.Report == "" {
		return filepath.Join(paths.reports, "replay-"+time.Now().UTC().Format("20060102T150405.000")+".json")
	}
	return f.Report
}

// replayer consumes one queue for one replay.
type replayer struct {
	queue      queue.Consumer
	name       string
	visibility time.Duration
	stdout     io.Writer
	stderr     io.Writer
	// accept, if set, refuses a message's source (its message is left).
	accept func(migration.Source) error
}

// pending is a received message and the job it replays.
type pending struct {
	delivery queue.Delivery
	src      migration.Source
}

// replay receives every message visible now, runs their jobs with run
// (which writes the run report to report), then settles each message by
// its job's outcome.
func (rp *replayer) replay(ctx context.Context, run func(context.Context, []migration.Source) error, report string) error {
	started := time.Now()
	var held []pending
	// Whatever happens, a received message not deleted is made visible
	// again for the next replay rather than hidden for the timeout.
	defer func() {
		for _, p := range held {
			if err := rp.queue.ChangeVisibility(context.WithoutCancel(ctx), p.delivery.Receipt, 0); err != nil {
				fmt.Fprintf(rp.stderr, "geomigrate: message %s stays hidden until its visibility timeout: %v\n", p.delivery.ID, err)
			}
		}
	}()
	seen := map[string]bool{}
	var inputs []migration.Source
	sources := map[string]bool{}
	for {
		ds, err := rp.queue.Receive(ctx, queue.MaxReceive, rp.visibility)
		if err != nil {
			return err
		}
		fresh, stop := 0, false
		for _, d := range ds {
			if seen[d.ID] {
				// Back after its visibility timeout: already in this run.
				continue
			}
			seen[d.ID] = true
			src, err := replaySource(d.Body)
			if err == nil && rp.accept != nil {
				err = rp.accept(src)
			}
			if err != nil {
				fmt.Fprintf(rp.stderr, "geomigrate: leaving message %s: %v\n", d.ID, err)
				if err := rp.queue.ChangeVisibility(ctx, d.Receipt, 0); err != nil {
					return err
				}
				continue
			}
			if !d.SentAt.IsZero() && d.SentAt.After(started) {
				// Sent while this replay runs (a job it routed again, or
				// a live producer): the next replay's. Stop receiving,
				// or a job failing the same way would be replayed forever.
				if err := rp.queue.ChangeVisibility(ctx, d.Receipt, 0); err != nil {
					return err
				}
				stop = true
				continue
			}
			fresh++
			held = append(held, pending{delivery: d, src: src})
			if id := src.Bucket + "/" + src.Key; !sources[id] {
				sources[id] = true
				inputs = append(inputs, src)
			}
		}
		if fresh == 0 || stop {
			break
		}
	}
	if len(inputs) == 0 {
		fmt.Fprintf(rp.stdout, "nothing to replay in %s\n", rp.name)
		return nil
	}
	runErr := run(ctx, inputs)
	outcomes, err := readOutcomes(report)
	if err != nil {
		return errors.Join(runErr, err)
	}
	deleted, kept := 0, 0
	var left []pending
	for _, p := range held {
		o, ok := outcomes[p.src.Bucket+"/"+p.src.Key]
		if !ok || !jobEnded(o) {
			left = append(left, p)
			kept++
			continue
		}
		if err := rp.queue.Delete(context.WithoutCancel(ctx), p.delivery.Receipt); err != nil {
			fmt.Fprintf(rp.stderr, "geomigrate: message %s not deleted: %v\n", p.delivery.ID, err)
			left = append(left, p)
			kept++
			continue
		}
		deleted++
	}
	held = left // the deferred release makes these visible again
	fmt.Fprintf(rp.stdout, "replayed %d message(s) from %s: %d deleted, %d left in the queue\n", deleted+kept, rp.name, deleted, kept)
	return runErr
}

// jobEnded reports whether an outcome ends the job the message was about:
// converted, already migrated, or routed again (a new message now holds
// it). Anything else leaves the message for a later replay.
func jobEnded(o localrun.Outcome) bool {
	switch o.Status {
	case localrun.StatusCompleted, localrun.StatusRemediation, localrun.StatusDeadLetter:
		return true
	case localrun.StatusIgnored:
		return true // not a geospatial file (a message from before it was ignored): nothing to do
	case localrun.StatusSkipped:
		return o.Reason == migration.ReasonAlreadyMigrated || o.Reason == migration.ReasonSidecar
	}
	return false
}

// readOutcomes reads a run report's outcomes by bucket/key.
func readOutcomes(path string) (map[string]localrun.Outcome, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: read the run report: %w", err)
	}
	var r localrun.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("replay: read the run report %s: %w", path, err)
	}
	m := map[string]localrun.Outcome{}
	for _, o := range r.Files {
		m[o.Bucket+"/"+o.Key] = o
	}
	return m, nil
}

// replaySource finds the job input in a queue message body: Classify's
// RouteMessage carries it as "replay"; the message the state machine sends
// when Classify itself failed (ClassifyFailed) carries the normalized input
// as "source" next to the raw error.
func replaySource(body string) (migration.Source, error) {
	var m struct {
		Replay *migration.Source `json:"replay"`
		Source *migration.Source `json:"source"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return migration.Source{}, fmt.Errorf("not a geomigrate message: %w", err)
	}
	for _, s := range []*migration.Source{m.Replay, m.Source} {
		if s != nil && s.Bucket != "" && s.Key != "" {
			return *s, nil
		}
	}
	return migration.Source{}, errors.New("not a geomigrate message: no replay or source with a bucket and key")
}
