package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
	"github.com/geomigrate/geomigrate/internal/steps"
	"github.com/geomigrate/geomigrate/internal/tracing"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// Backends.
const (
	backendLocal = "local"
	backendAWS   = "aws"
)

// backendFlags choose where the steps read and write: local directories,
// the embedded state store and JSONL queues, or S3, DynamoDB and SQS (or
// JSONL queues) through the AWS adapters. The state machine runs in this
// process either way. The AWS settings are internal/config's, shared with
// the Lambda functions.
type backendFlags struct {
	Backend string `name:"backend" group:"io" type:"fold" enum:"local,aws" default:"local" help:"local (directories, embedded state store, JSONL queues) or aws (S3, DynamoDB, SQS)."`

	AWS         config.AWS `embed:"" group:"aws"`
	EndpointURL string     `name:"endpoint-url" group:"aws" placeholder:"URL" help:"One endpoint for S3, DynamoDB, SQS and Step Functions (on-premises or local); wins over AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>."`
	CreateTable bool       `name:"create-table" group:"aws" help:"Create the state table if it does not exist."`
	// RemediationQueueURL: the dead-letter queue's URL is config.AWS's,
	// shared with the executionfailed function.
	RemediationQueueURL string `name:"remediation-queue-url" env:"GEOMIGRATE_REMEDIATION_QUEUE_URL" group:"aws" placeholder:"URL" help:"SQS remediation queue (default: a JSONL file in the state directory)."`
}

func (b *backendFlags) aws() bool { return b.Backend == backendAWS }

// clientOptions are the SDK client options: the settings, with
// --endpoint-url over the environment's endpoints.
func (b *backendFlags) clientOptions() awsconfig.Options {
	o := awsapp.ClientOptions(b.AWS)
	if b.EndpointURL != "" {
		o.EndpointURL = b.EndpointURL
	}
	return o
}

// backend is the migrate state machine's steps wired to one backend.
type backend struct {
	name     string // backendLocal or backendAWS
	dest     string // as given (a directory or an s3:// URI)
	ports    steps.Ports
	handlers localrun.Handlers
	queues   localrun.Queues
	paths    localPaths
	// closer closes the jobs of executions that end unfinished (timed out,
	// interrupted) as the executionfailed function does on AWS.
	closer  *migration.ExecutionFailed
	local   *localBackend // local only
	app     *awsapp.App   // aws only
	closers []func() error
	// engine converts in this process (its thread share is set once the
	// run knows its files).
	engine *gdal.Engine
}

func (b *backend) tracker() *statestore.Tracker { return b.ports.Tracker }

func (b *backend) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	return errors.Join(errs...)
}

// openRequest is what opening a backend needs from the command.
type openRequest struct {
	dest, stateDir string
	handlers       config.Handlers
	log            *slog.Logger
	// roots are local source directories (remembered for replay), extra
	// other local buckets the run needs (backfill results).
	roots, extra []sourceRoot
	// sourceBuckets are the S3 buckets checked before the first file.
	sourceBuckets []string
	// workers is how many files the run migrates at once: the CPUs are
	// shared among their conversions (gdal.Config.Conversions).
	workers int
	// book is the run's recipe book; recipes its flags (a local
	// destination remembers the file for replay).
	book    *recipe.Book
	recipes *recipeFlags
	// policy is --policy's document; nil: with --backend aws the SSM
	// parameter's (awsapp), else the built-in policy.
	policy *policy.Source
}

// open wires the handlers over the chosen backend: the one place where the
// backend is chosen for a run.
func (b *backendFlags) open(ctx context.Context, r openRequest) (*backend, error) {
	// The local backend's directory store takes an output's MD5 as its
	// ETag: the engine hashes it with the SHA-256 as it checks the output.
	engine, err := gdal.New(gdal.WithOutputMD5(!b.aws()), gdal.WithConversions(r.workers))
	if err != nil {
		return nil, fmt.Errorf("GDAL: %w", err)
	}
	if r.book != nil {
		file := ""
		if r.recipes != nil {
			file = r.recipes.File
		}
		if err := checkRecipes(r.book, file, engine); err != nil {
			return nil, err
		}
	}
	var be *backend
	if b.aws() {
		be, err = b.openAWS(ctx, r, engine.Version())
	} else {
		be, err = openLocalBackend(r, engine, strings.EqualFold(b.AWS.QuarantinePrefix, "off"))
	}
	if err != nil {
		return nil, err
	}
	be.dest, be.engine = r.dest, engine
	if r.policy != nil {
		be.ports.Policy = r.policy
	} else if be.app != nil && be.app.Policy != nil {
		// The functions keep routing on the built-in policy when the
		// parameter's document is refused; a command line stops instead.
		if _, err := be.app.Policy.Load(ctx); err != nil {
			be.Close()
			return nil, fmt.Errorf("--policy-parameter %s: %w", b.AWS.PolicyParameter, err)
		}
	}
	convert := be.ports.Convert(engine, validate.Output)
	be.closers = append(be.closers, convert.Close)
	be.handlers = localrun.Handlers{
		HashCheck: be.ports.HashCheck(),
		Convert:   convert,
		Promote:   be.ports.Promote(),
		Classify:  be.ports.Classify(),
	}
	// The container path (ConvertInContainer): the task reads its result
	// back from the run's store, and runs as a child process of this
	// binary (`geomigrate task convert`): locally over the run's
	// directories and, through this process, its state store; with
	// --backend aws over the same buckets and table, configured as the
	// container is on AWS (internal/config's environment).
	be.handlers.Results = be.ports.Store
	exe, err := cliForTasks()
	if err != nil {
		be.Close()
		return nil, err
	}
	if be.local != nil {
		cfg := be.ports.Config
		spec, err := json.Marshal(localTaskPorts{Buckets: be.local.dirs, DestBucket: cfg.DestBucket, DestPrefix: cfg.DestPrefix, Handlers: r.handlers})
		if err != nil {
			be.Close()
			return nil, fmt.Errorf("container task: %w", err)
		}
		be.handlers.ConvertTask = childConvertTask(exe, []string{taskLocalEnv + "=" + string(spec)}, be.local.db, be.ports.Log)
	} else {
		cfg := be.ports.Config
		settings := config.DefaultLambda()
		settings.Handlers, settings.AWS = r.handlers, b.AWS
		settings.DestBucket, settings.DestPrefix, settings.EngineVersion = cfg.DestBucket, cfg.DestPrefix, engine.Version()
		var env []string
		for k, v := range settings.Environment() {
			env = append(env, k+"="+v)
		}
		if b.EndpointURL != "" {
			env = append(env, "AWS_ENDPOINT_URL="+b.EndpointURL)
		}
		be.handlers.ConvertTask = childConvertTask(exe, env, nil, be.ports.Log)
	}
	closing := be.ports
	closing.Log = slog.New(slog.DiscardHandler) // what it closes is in the run report
	if be.name == backendAWS {
		// No staging cleanup here: on AWS the staging lifecycle rule
		// expires what an unfinished job staged.
		closing.Store = nil
	}
	be.closer = closing.ExecutionFailed(be.queues.DeadLetter, "")
	return be, nil
}

// runConfig is the handlers' configuration for a run into bucket/prefix
// with GDAL engineVersion: the handler flags' recipe as the base, refined
// per key by book. Runs (local and AWS) and plan build theirs here, so a
// plan's HashCheck names the same job for each file as the run's.
func runConfig(h config.Handlers, book *recipe.Book, bucket, prefix, engineVersion string) migration.Config {
	cfg := h.Migration(bucket, prefix, engineVersion)
	cfg.Recipes = book
	// A run links its items into the STAC tree once, at its end
	// (linkTree), not per job.
	cfg.CatalogByRun = true
	return cfg
}

// openLocalBackend wires the embedded backends under dest.
func openLocalBackend(r openRequest, engine *gdal.Engine, noBundles bool) (*backend, error) {
	cfg := runConfig(r.handlers, r.book, destBucket, "", engine.Version())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	paths := pathsFor(r.dest, r.stateDir)
	lb, err := openLocal(r.dest, paths, append(append([]sourceRoot(nil), r.roots...), r.extra...), cfg)
	if err != nil {
		return nil, err
	}
	if err := saveBuckets(paths, r.roots); err != nil {
		lb.Close()
		return nil, err
	}
	if r.recipes != nil {
		if err := r.recipes.remember(paths.dir); err != nil {
			lb.Close()
			return nil, err
		}
	}
	// Every handler runs in this process: the bundles carry all their
	// records of an execution.
	book := quarantine.NewLogBook(slog.LevelInfo)
	log := r.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// trace_id (one per execution, set by the runner) goes on each record
	// before the log book keeps it for the quarantine bundles.
	log = slog.New(tracing.Handler(book.Handler(log.Handler())))
	// --quarantine-prefix off: no bundles, on this backend as on AWS.
	var bundles *quarantine.Writer
	if !noBundles {
		if bundles, err = newQuarantine(lb, engine, book, cfg.StagingPrefix, r.handlers); err != nil {
			lb.Close()
			return nil, err
		}
	}
	return &backend{
		name: backendLocal,
		ports: steps.Ports{Config: cfg, Store: wrapObjects(lb.store), Tracker: lb.tracker, Log: log, Quarantine: bundles,
			Breaker: breaker.New(lb.db, cfg.Breaker, breaker.WithLogger(log))},
		queues:  lb.queues,
		paths:   paths,
		local:   lb,
		closers: []func() error{lb.Close},
	}, nil
}

// sourceHandOffBytes bounds the sources held between HashCheck and Convert
// (each at most --source-read-whole bytes; a job skipped after hashing
// leaves its entry until newer ones push it out).
const sourceHandOffBytes = 256 << 20

// openAWS checks the resources the run needs (the source buckets given,
// the destination bucket, the table unless --create-table, the queue URLs),
// creates the table when asked, and wires the AWS adapters.
func (b *backendFlags) openAWS(ctx context.Context, r openRequest, engineVersion string) (*backend, error) {
	bucket, prefix, err := s3URI(r.dest)
	if err != nil {
		return nil, usagef("--dest: %v", err)
	}
	if b.AWS.StateTable == "" {
		return nil, usagef("--backend aws needs --state-table")
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	// The recipe names the GDAL and geomigrate versions, as on Lambda.
	cfg := runConfig(r.handlers, r.book, bucket, prefix, engineVersion)
	checks := awsapp.Resources{
		Buckets:     append(append([]string(nil), r.sourceBuckets...), bucket),
		Table:       b.AWS.StateTable,
		CreateTable: b.CreateTable,
		Queues:      []awsapp.QueueRef{{Flag: "--remediation-queue-url", URL: b.RemediationQueueURL}, {Flag: "--dlq-url", URL: b.AWS.DeadLetterQueueURL}},
	}
	endpoint := func(o *awsconfig.Options) {
		if b.EndpointURL != "" {
			o.EndpointURL = b.EndpointURL
		}
	}
	app, err := awsapp.New(ctx, cfg, b.AWS, awsapp.WithQuarantineCopyLimit(r.handlers.QuarantineCopyLimit), awsapp.WithQuarantineCopyInput(r.handlers.QuarantineCopyInput), awsapp.WithLogger(r.log), awsapp.WithPreflight(checks), awsapp.WithAWSOptions(endpoint),
		// This process takes each job through all its states.
		awsapp.WithRecordCache())
	if err != nil {
		return nil, err
	}
	if b.CreateTable {
		if err := dynamostore.CreateTable(ctx, app.DynamoDB, b.AWS.StateTable); err != nil {
			return nil, err
		}
	}
	be := &backend{name: backendAWS, ports: app.Ports(), paths: pathsFor(".", r.stateDir), app: app}
	// HashCheck and Convert run in this process: a small source read whole
	// to be hashed is converted from those bytes, one GET for both.
	if whole := cfg.SourceReadAhead.WholeObjectMax; whole > 0 {
		be.ports.Sources = objectstore.NewSourceCache(sourceHandOffBytes, whole)
	}
	// Promote and the run's STAC tree update run in this process too.
	be.ports.Items = migration.NewItemLog(migration.DefaultItemLogEntries)
	// Queued messages go to SQS when its URLs are given, else to JSONL
	// files in the state directory.
	open := func(sqsURL, file string) (queue.Sender, error) {
		if sqsURL != "" {
			return app.Queue(sqsURL), nil
		}
		q, err := jsonlqueue.Open(file)
		if err != nil {
			return nil, err
		}
		be.closers = append(be.closers, q.Close)
		return q, nil
	}
	if be.queues.Remediation, err = open(b.RemediationQueueURL, be.paths.remediation); err != nil {
		be.Close()
		return nil, err
	}
	if be.queues.DeadLetter, err = open(b.AWS.DeadLetterQueueURL, be.paths.deadLetter); err != nil {
		be.Close()
		return nil, err
	}
	return be, nil
}

// sources are the inputs of a run on the chosen backend: local paths
// walked at once, S3 locations listed once the backend is open.
type sources struct {
	args    []string
	roots   []sourceRoot // local: the directories, served as buckets
	buckets []string     // S3: checked before the first file
	inputs  []migration.Source
	pre     []localrun.Outcome
	// listed: inputs are known; checked: and were found fit to run.
	listed, checked bool
}

// resolveSources reads the command line's sources for the chosen backend.
func (b *backendFlags) resolveSources(args []string, dest string) (*sources, error) {
	if err := checkSchemes(args, dest, b.aws()); err != nil {
		return nil, err
	}
	s := &sources{args: args}
	if b.aws() {
		for _, a := range args {
			bucket, _, err := s3URI(a)
			if err != nil {
				return nil, usageError{msg: err.Error()}
			}
			s.buckets = append(s.buckets, bucket)
		}
		return s, nil
	}
	var err error
	s.roots, s.inputs, s.pre, err = collectSources(args, dest)
	s.listed = err == nil
	return s, err
}

func (s *sources) openRequest() openRequest {
	return openRequest{roots: s.roots, sourceBuckets: s.buckets}
}

// list expands S3 locations through be's object store (local sources are
// listed already).
func (s *sources) list(ctx context.Context, be *backend) error {
	if s.listed {
		return nil
	}
	var inputs []migration.Source
	var listing *migration.Listing
	err := awsapp.StartupRetry(ctx, func() error {
		var err error
		listing = migration.NewListing()
		inputs, err = listS3Sources(ctx, be.ports.Store, s.args, listing)
		return err
	})
	if err != nil {
		return err
	}
	s.inputs, s.listed = inputs, true
	// HashCheck finds each source's sidecars in this listing instead of
	// listing its prefix again.
	if be.handlers.HashCheck != nil {
		be.handlers.HashCheck.WithListing(listing)
	}
	return nil
}

// check refuses, once the inputs are listed, a run with nothing to
// migrate. Sources bound for one output key do not stop the run: they are
// routed one by one (routeClashes).
func (s *sources) check(stderr io.Writer) error {
	if !s.listed || s.checked {
		return nil
	}
	if len(s.inputs) == 0 {
		return nothingToMigrate(s.args, s.pre, stderr)
	}
	s.checked = true
	return nil
}

// stateView is what status reads: the job records and the queues' depths.
type stateView struct {
	db     statestore.Backend
	where  string
	queues []queueDepth
	// deadLetterAge reads the dead-letter queue's depth and oldest message
	// (nil: the adapter cannot tell its age; SQS has it only as a
	// CloudWatch metric, which the stack's alarm watches).
	deadLetterAge func(context.Context) (*signals.QueueAge, error)
	close         func() error
}

// openStateView opens the state store and the queues of earlier runs,
// read-only in spirit: nothing is attached or swept.
func (b *backendFlags) openStateView(ctx context.Context, dest, stateDir string) (*stateView, error) {
	if !b.aws() {
		return openLocalStateView(dest, stateDir)
	}
	if b.AWS.StateTable == "" {
		return nil, usagef("status --backend aws needs --state-table")
	}
	o := b.clientOptions()
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		return nil, err
	}
	v := &stateView{
		db:    dynamostore.New(awsconfig.NewDynamoDB(cfg, o), dynamostore.Options{Table: b.AWS.StateTable}),
		where: "dynamodb table " + b.AWS.StateTable,
		close: func() error { return nil },
	}
	for _, q := range []struct{ name, url string }{{"remediation", b.RemediationQueueURL}, {"dead-letter", b.AWS.DeadLetterQueueURL}} {
		if q.url != "" {
			v.queues = append(v.queues, queueDepth{name: q.name, where: q.url, depth: sqsQueue(cfg, o, q.url).Depth})
		}
	}
	return v, nil
}

// newLogger is the handlers' logger on w.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}
