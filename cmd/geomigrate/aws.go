package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// awsFlags select the AWS adapters for migrate: S3 for sources and the
// destination, DynamoDB for the state store, SQS (or local JSONL files) for
// the queues. The state machine still runs in this process.
type awsFlags struct {
	endpointURL, stateTable, region string
	pathStyle, createTable          bool
	conditionalCopy                 string
	remediationURL, deadLetterURL   string
}

func (a *awsFlags) add(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&a.endpointURL, "endpoint-url", "", "with --backend aws: one endpoint for S3, DynamoDB and SQS (on-premises or local); wins over AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>")
	fs.BoolVar(&a.pathStyle, "path-style", false, "with --backend aws: path-style S3 addressing (most S3-compatible stores)")
	fs.StringVar(&a.stateTable, "state-table", "", "with --backend aws: the DynamoDB state table")
	fs.BoolVar(&a.createTable, "create-table", false, "with --backend aws: create the state table if it does not exist")
	fs.StringVar(&a.region, "region", "", "with --backend aws: AWS region (default from the environment)")
	fs.StringVar(&a.conditionalCopy, "conditional-copy", "", "with --backend aws: server, client, probe or auto (default auto: server on AWS, probe with a custom S3 endpoint)")
	fs.StringVar(&a.remediationURL, "remediation-queue-url", "", "with --backend aws: SQS remediation queue (default: a JSONL file in the state dir)")
	fs.StringVar(&a.deadLetterURL, "dlq-url", "", "with --backend aws: SQS dead-letter queue (default: a JSONL file in the state dir)")
}

// s3URI splits s3://bucket/prefix.
func s3URI(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("%q is not an s3://bucket[/prefix] URI", s)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// awsRun builds the AWS-backed handlers and inputs for migrate. Before any
// file it checks that the buckets, the table and the queues exist (one line
// naming what is missing), then lists the sources.
func (f *runFlags) awsRun(ctx context.Context, a *awsFlags, srcs []string) (localrun.Handlers, localrun.Queues, *statestore.Tracker, []migration.Source, func() error, error) {
	fail := func(err error) (localrun.Handlers, localrun.Queues, *statestore.Tracker, []migration.Source, func() error, error) {
		return localrun.Handlers{}, localrun.Queues{}, nil, nil, nil, err
	}
	var buckets []string
	for _, s := range srcs {
		b, _, err := s3URI(s)
		if err != nil {
			return fail(err)
		}
		buckets = append(buckets, b)
	}
	p, err := f.openAWSPipeline(ctx, a, buckets)
	if err != nil {
		return fail(err)
	}
	inputs, err := listS3Sources(ctx, p.app.Store, srcs)
	if err != nil {
		p.close()
		return fail(err)
	}
	return p.handlers, p.queues, p.app.Tracker, inputs, p.close, nil
}

// awsPipeline is the migrate state machine's handlers and queues over the
// AWS adapters (the state machine itself runs in this process).
type awsPipeline struct {
	app      *awsapp.App
	handlers localrun.Handlers
	queues   localrun.Queues
	close    func() error
}

// openAWSPipeline checks the resources the run needs (the source buckets
// given, the destination bucket, the table unless --create-table, the queue
// URLs), creates the table when asked, and wires the handlers.
func (f *runFlags) openAWSPipeline(ctx context.Context, a *awsFlags, sourceBuckets []string) (*awsPipeline, error) {
	destBucket, destPrefix, err := s3URI(f.dest)
	if err != nil {
		return nil, fmt.Errorf("--dest: %w", err)
	}
	if a.stateTable == "" {
		return nil, errors.New("--backend aws needs --state-table")
	}
	if destPrefix != "" && !strings.HasSuffix(destPrefix, "/") {
		destPrefix += "/"
	}
	log, err := newLogger(os.Stderr, f.logLevel, f.logFormat)
	if err != nil {
		return nil, err
	}
	engine, err := gdal.New()
	if err != nil {
		return nil, fmt.Errorf("GDAL: %w", err)
	}
	s, err := a.settings(migration.Config{DestBucket: destBucket, DestPrefix: destPrefix, WorkDir: os.TempDir(), Lease: f.lease})
	if err != nil {
		return nil, err
	}
	// The recipe names the GDAL and geomigrate versions, as on Lambda.
	s.Config.Recipe = recipe.Recipe{VectorFormat: f.vectorFormat, ZSTDLevel: f.zstdLevel, EngineVersion: engine.Version(), ToolVersion: buildinfo.Version}
	if s.Config.Recipes, err = f.recipes.book(f.vectorFormat, f.zstdLevel); err != nil {
		return nil, err
	}
	if err := checkCreationOptions(s.Config.Recipes); err != nil {
		return nil, err
	}
	checks := awsapp.Resources{
		Buckets:     append(append([]string(nil), sourceBuckets...), destBucket),
		Table:       a.stateTable,
		CreateTable: a.createTable,
		Queues:      []awsapp.QueueRef{{Flag: "--remediation-queue-url", URL: a.remediationURL}, {Flag: "--dlq-url", URL: a.deadLetterURL}},
	}
	app, err := awsapp.New(ctx, s, awsapp.WithLogger(log), awsapp.WithPreflight(checks))
	if err != nil {
		return nil, err
	}
	if a.createTable {
		if err := dynamostore.CreateTable(ctx, app.DynamoDB, a.stateTable); err != nil {
			return nil, err
		}
	}
	q, closeQueues, err := f.awsQueues(app, a)
	if err != nil {
		return nil, err
	}
	h := localrun.Handlers{HashCheck: app.HashCheck(), Convert: app.Convert(engine, validate.Output), Promote: app.Promote(), Classify: app.Classify()}
	return &awsPipeline{app: app, handlers: h, queues: q, close: closeQueues}, nil
}

// settings are the typed awsapp settings the flags give: the client options
// from the environment (GEOMIGRATE_S3_PATH_STYLE, GEOMIGRATE_AWS_MAX_ATTEMPTS;
// endpoints are the SDK's AWS_ENDPOINT_URL*) with the flags laid over them.
func (a *awsFlags) settings(cfg migration.Config) (awsapp.Settings, error) {
	o, err := awsconfig.FromEnv()
	if err != nil {
		return awsapp.Settings{}, err
	}
	a.applyTo(&o)
	mode := a.conditionalCopy
	if mode == "" {
		mode = awsapp.CopyModeAuto
	}
	return awsapp.Settings{Config: cfg, StateTable: a.stateTable, ConditionalCopy: mode, AWS: o}, nil
}

// awsQueues sends to SQS when queue URLs are given, else to JSONL files.
func (f *runFlags) awsQueues(app *awsapp.App, a *awsFlags) (localrun.Queues, func() error, error) {
	paths := pathsFor(".", f.stateDir)
	var closers []func() error
	open := func(sqsURL, file string) (queue.Sender, error) {
		if sqsURL != "" {
			return app.Queue(sqsURL), nil
		}
		q, err := jsonlqueue.Open(file)
		if err != nil {
			return nil, err
		}
		closers = append(closers, q.Close)
		return q, nil
	}
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	rq, err := open(a.remediationURL, paths.remediation)
	if err != nil {
		closeAll()
		return localrun.Queues{}, nil, err
	}
	dq, err := open(a.deadLetterURL, paths.deadLetter)
	if err != nil {
		closeAll()
		return localrun.Queues{}, nil, err
	}
	return localrun.Queues{Remediation: rq, DeadLetter: dq}, closeAll, nil
}

// listS3Sources expands s3:// URIs: an exact object key, or every object
// under a prefix except sidecars and folder markers.
func listS3Sources(ctx context.Context, store objectstore.Store, srcs []string) ([]migration.Source, error) {
	var inputs []migration.Source
	for _, s := range srcs {
		bucket, prefix, err := s3URI(s)
		if err != nil {
			return nil, err
		}
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			if _, err := store.Head(ctx, bucket, prefix); err == nil {
				inputs = append(inputs, migration.Source{Bucket: bucket, Key: prefix, KeyEncoding: "plain"})
				continue
			} else if !errors.Is(err, objectstore.ErrNotFound) {
				return nil, err
			}
		}
		err = store.List(ctx, bucket, prefix, func(o objectstore.Object) error {
			if !strings.HasSuffix(o.Key, "/") && !formats.IsSidecar(o.Key) {
				inputs = append(inputs, migration.Source{Bucket: bucket, Key: o.Key, KeyEncoding: "plain"})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s, err)
		}
	}
	return inputs, nil
}

// awsConfig loads the SDK configuration with the flags' endpoint, region
// and addressing over the environment's.
func (a *awsFlags) awsConfig(ctx context.Context) (aws.Config, awsconfig.Options, error) {
	o, err := awsconfig.FromEnv()
	if err != nil {
		return aws.Config{}, o, err
	}
	a.applyTo(&o)
	cfg, err := awsconfig.Load(ctx, o)
	return cfg, o, err
}

// applyTo lays the flags over client options read from the environment;
// migrate (through awsapp), status and backfill share it.
func (a *awsFlags) applyTo(o *awsconfig.Options) {
	if a.endpointURL != "" {
		o.EndpointURL = a.endpointURL
	}
	if a.region != "" {
		o.Region = a.region
	}
	if a.pathStyle {
		o.PathStyle = true
	}
}

// startBackfill starts the deployed backfill state machine (the Distributed
// Map then runs on AWS; follow it in the console).
func (a *awsFlags) startBackfill(ctx context.Context, arn string, input map[string]any, stdout io.Writer) error {
	if arn == "" {
		return errors.New("backfill --backend aws needs --state-machine-arn (the stack output BackfillStateMachineArn)")
	}
	body, err := json.Marshal(input)
	if err != nil {
		return err
	}
	cfg, o, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	name := "backfill-" + time.Now().UTC().Format("20060102T150405")
	out, err := awsconfig.NewSFN(cfg, o).StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(string(body)),
	})
	if err != nil {
		return fmt.Errorf("start backfill: %w", err)
	}
	fmt.Fprintf(stdout, "started %s\ninput: %s\n", aws.ToString(out.ExecutionArn), body)
	return nil
}
