// Package awsapp builds the AWS adapters the handlers run over (S3 object
// store, DynamoDB state store, SQS queues) from typed settings
// (internal/config): the Lambda mains call New once at cold start with what
// config.LoadLambda read from the environment, `geomigrate --backend aws`
// with what it parsed from its flags. The handlers themselves are built
// by internal/steps over App.Ports.
package awsapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
	"github.com/geomigrate/geomigrate/internal/steps"
	"github.com/geomigrate/geomigrate/internal/tracing"
)

// Variables the Lambda runtime (and aws-lambda-rie) sets; they are the
// runtime's, not settings of geomigrate.
const (
	// EnvLambdaRuntimeAPI is set for the bootstrap; its presence turns on
	// EMF metrics on stdout by default.
	EnvLambdaRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	EnvLambdaFunction   = "AWS_LAMBDA_FUNCTION_NAME"
	envLambdaLogFormat  = "AWS_LAMBDA_LOG_FORMAT"
	envLambdaLogLevel   = "AWS_LAMBDA_LOG_LEVEL"
)

// Conditional copy modes (config.AWS.ConditionalCopy).
const (
	CopyModeServer = "server" // CopyObject enforces If-None-Match / If-Match (AWS)
	CopyModeClient = "client" // stream through the client with a conditional Put
	// CopyModeMultipart copies server-side by UploadPartCopy, the condition
	// on CompleteMultipartUpload (versitygw, which ignores it on CopyObject).
	CopyModeMultipart = "multipart"
	CopyModeProbe     = "probe" // find out once at start-up against the destination bucket
	// CopyModeAuto is server against AWS's own S3 endpoint and probe against
	// a custom one (AWS_ENDPOINT_URL_S3, --endpoint-url): S3-compatible
	// stores may ignore copy preconditions.
	CopyModeAuto = "auto"
)

// MetricsNamespace is the CloudWatch namespace of the EMF metrics.
const MetricsNamespace = emf.Namespace

// App holds what the handlers share, built once.
type App struct {
	Config  migration.Config
	Store   objectstore.Store
	Tracker *statestore.Tracker
	Log     *slog.Logger
	Metrics migration.Metrics
	// Breaker is the circuit breaker on each bucket, its state in the
	// job table.
	Breaker *breaker.Breaker

	// The underlying clients and settings, for callers that need more
	// (the CLI's status listing, tests).
	AWS             aws.Config
	AWSOptions      awsconfig.Options
	S3              *s3.Client
	DynamoDB        *dynamodb.Client
	SQS             *sqs.Client
	StateTable      string
	State           *dynamostore.Backend
	ConditionalCopy s3store.ConditionalCopy

	// Quarantine writes routed jobs' bundles (nil with the prefix "off");
	// Logs keeps this process's handler records per execution for them.
	Quarantine *quarantine.Writer
	Logs       *quarantine.LogBook

	// Policy is the run-time policy document of the SSM parameter
	// config.AWS.PolicyParameter, re-read once its TTL has passed (nil
	// without a parameter: the built-in policy).
	Policy *policy.Source
}

type options struct {
	log       *slog.Logger
	awsOpts   []func(*awsconfig.Options)
	preflight *Resources
	copyLimit int64
	copyInput bool
	records   bool
}

// WithQuarantineCopyLimit bounds the input bytes copied into a quarantine
// bundle (config.Handlers.QuarantineCopyLimit; 0: quarantine's default).
func WithQuarantineCopyLimit(n int64) Option { return func(s *options) { s.copyLimit = n } }

// WithQuarantineCopyInput copies the input into each bundle
// (config.Handlers.QuarantineCopyInput); by default it is referenced.
func WithQuarantineCopyInput(on bool) Option { return func(s *options) { s.copyInput = on } }

// Option configures New.
type Option func(*options)

// WithLogger sets the handlers' logger (default: NewLambdaLogger at info).
func WithLogger(l *slog.Logger) Option { return func(s *options) { s.log = l } }

// WithAWSOptions adjusts the client options the settings give (the CLI's
// --endpoint-url, an HTTP client or static credentials in tests).
func WithAWSOptions(fn func(*awsconfig.Options)) Option {
	return func(s *options) { s.awsOpts = append(s.awsOpts, fn) }
}

// WithRecordCache gives the Tracker statestore.WithRecordCache: for a
// process that takes each job through all its states (the CLI), not for a
// function that sees one state of each job, where a remembered record is
// mostly stale and a failed conditional write costs as much as a write.
func WithRecordCache() Option { return func(s *options) { s.records = true } }

// WithPreflight checks that r exists before anything else is done (the
// CLI, before its first file); see App.Preflight.
func WithPreflight(r Resources) Option { return func(s *options) { s.preflight = &r } }

// ClientOptions are the SDK client options the settings give.
func ClientOptions(a config.AWS) awsconfig.Options {
	o := awsconfig.Options{Region: a.Region, MaxAttempts: a.MaxAttempts, MaxBackoff: a.MaxBackoff}
	if a.PathStyle != nil {
		o.PathStyle, o.VirtualHostedStyle = *a.PathStyle, !*a.PathStyle
	}
	return o
}

// New builds the clients, the object store and the state tracker for the
// handlers' configuration cfg and the AWS settings a. Its errors are plain
// configuration errors: a cold start that fails has no job to route, and
// Lambda reports it as an init error (Runtime.ExitError).
func New(ctx context.Context, cfg migration.Config, a config.AWS, opts ...Option) (*App, error) {
	var set options
	for _, o := range opts {
		o(&set)
	}
	if cfg.Lease == 0 {
		cfg.Lease = migration.DefaultLease
	}
	if cfg.StagingPrefix == "" {
		cfg.StagingPrefix = migration.DefaultStagingPrefix
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("awsapp: %w", err)
	}
	if a.StateTable == "" {
		return nil, fmt.Errorf("awsapp: no state table (--state-table, GEOMIGRATE_STATE_TABLE)")
	}
	mode := strings.ToLower(strings.TrimSpace(a.ConditionalCopy))
	switch mode {
	case "":
		mode = CopyModeAuto
	case CopyModeServer, CopyModeClient, CopyModeMultipart, CopyModeProbe, CopyModeAuto:
	default:
		return nil, fmt.Errorf("awsapp: conditional copy %q: want server, multipart, client, probe or auto", mode)
	}
	o := ClientOptions(a)
	for _, fn := range set.awsOpts {
		fn(&o)
	}
	awsCfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("awsapp: %w", err)
	}
	app := &App{Config: cfg, AWS: awsCfg, AWSOptions: o, StateTable: a.StateTable, Log: set.log}
	app.S3 = awsconfig.NewS3(awsCfg, o)
	app.DynamoDB = awsconfig.NewDynamoDB(awsCfg, o)
	app.SQS = awsconfig.NewSQS(awsCfg, o)

	if set.preflight != nil {
		if err := app.Preflight(ctx, *set.preflight); err != nil {
			return nil, err
		}
	}
	if mode == CopyModeAuto {
		mode = CopyModeServer
		if awsconfig.S3Endpoint(app.S3) != "" {
			mode = CopyModeProbe
		}
	}
	switch mode {
	case CopyModeClient:
		app.ConditionalCopy = s3store.CopyThroughClient
	case CopyModeMultipart:
		app.ConditionalCopy = s3store.CopyServerMultipart
	case CopyModeProbe:
		err = fault.Retry(ctx, ProbeAttempts, startupRetryable, func() error {
			var err error
			app.ConditionalCopy, err = s3store.ProbeConditionalCopy(ctx, app.S3, cfg.DestBucket, cfg.StagingPrefix)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("awsapp: probe conditional copy on s3://%s: %w", cfg.DestBucket, err)
		}
	}
	app.Store = s3store.New(app.S3, s3store.Options{ConditionalCopy: app.ConditionalCopy})
	app.State = dynamostore.New(app.DynamoDB, dynamostore.Options{Table: a.StateTable})
	trackerOpts := []statestore.TrackerOption{statestore.WithLease(cfg.Lease)}
	if ttl := a.StateTTL(); ttl > 0 {
		trackerOpts = append(trackerOpts, statestore.WithTTL(ttl))
	}
	if set.records {
		trackerOpts = append(trackerOpts, statestore.WithRecordCache())
	}
	app.Tracker = statestore.NewTracker(app.State, trackerOpts...)

	if app.Log == nil {
		app.Log = NewLambdaLogger("info")
	}
	if err := app.quarantine(a, set.copyLimit, set.copyInput); err != nil {
		return nil, err
	}
	if app.Metrics == nil {
		if os.Getenv(EnvLambdaRuntimeAPI) != "" {
			var props []emf.Option
			if fn := os.Getenv(EnvLambdaFunction); fn != "" {
				props = append(props, emf.WithProperty("function", fn))
			}
			app.Metrics = emf.New(os.Stdout, MetricsNamespace, props...)
		} else {
			app.Metrics = migration.NopMetrics{}
		}
	}
	if a.PolicyParameter != "" {
		app.Policy = policy.NewSource(ssmpolicy.Parameter{Client: ssmpolicy.NewClient(awsCfg, o.EndpointURL), Name: a.PolicyParameter},
			a.PolicyTTL.Duration(), app.Log)
		// A refused or unreadable document must not stop the functions:
		// the built-in policy routes until a good one is stored, and the
		// refusal is logged (by the Source) for the operator.
		_, _ = app.Policy.Load(ctx)
	}
	// The breakers' records live in the job table (dynamostore.BreakerKeyPrefix).
	app.Breaker = breaker.New(app.State, cfg.Breaker, breaker.WithLogger(app.Log),
		breaker.WithObserver(breaker.CountTransitions(app.Metrics)))
	return app, nil
}

// Ports are the ports the handlers are built over (internal/steps).
func (a *App) Ports() steps.Ports {
	return steps.Ports{Config: a.Config, Store: a.Store, Tracker: a.Tracker, Log: a.Log, Metrics: a.Metrics, Quarantine: a.Quarantine, Breaker: a.Breaker,
		Policy: a.Policy}
}

// quarantineQuery finds every handler's records of one execution in
// CloudWatch Logs Insights (run it over the log groups of the hashcheck,
// convert, promote and classify functions): the handlers log JSON with the
// execution ARN in "execution" (migration.logFor), and Insights discovers
// the fields of JSON log events.
const quarantineQuery = `fields @timestamp, @log, level, state, attempt, message, error | filter execution = "%s" | sort @timestamp asc`

// quarantine builds the bundle writer: bundles under the prefix in the
// quarantine bucket (the operations bucket the stack names, else the
// destination bucket), staged under the staging prefix first; it wraps the
// handlers' logger, so a bundle carries this process's own records of the
// execution.
func (a *App) quarantine(s config.AWS, copyLimit int64, copyInput bool) error {
	prefix := s.QuarantinePrefix
	switch {
	case strings.EqualFold(prefix, "off"):
		return nil
	case prefix == "":
		prefix = quarantine.DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.HasPrefix(prefix, a.Config.StagingPrefix) {
		// The staging lifecycle rule would expire the bundles.
		return fmt.Errorf("awsapp: quarantine prefix %q lies inside the staging prefix %q", prefix, a.Config.StagingPrefix)
	}
	bucket := s.QuarantineBucket
	if bucket == "" {
		bucket = a.Config.DestBucket
	}
	a.Logs = quarantine.NewLogBook(slog.LevelInfo)
	// The trace id goes on the record before the log book copies it.
	a.Log = slog.New(tracing.Handler(a.Logs.Handler(a.Log.Handler())))
	fn := os.Getenv(EnvLambdaFunction)
	if fn == "" {
		fn = "this process"
	}
	w, err := quarantine.NewWriter(quarantine.Config{
		Store: a.Store, Bucket: bucket, Prefix: prefix, StagingPrefix: a.Config.StagingPrefix + "quarantine/",
		CopyInput: copyInput, CopyLimit: copyLimit, Versions: quarantine.Versions{Geomigrate: buildinfo.Version}, Logs: a.Logs,
		LogScope: "records of " + fn + " for this execution only; each Lambda function logs to its own log group: logs.query fetches every handler's",
		LogQuery: quarantineQuery,
	})
	if err != nil {
		return fmt.Errorf("awsapp: quarantine prefix %q: %w", prefix, err)
	}
	a.Quarantine = w
	return nil
}

// Queue returns the SQS queue at url as a queue port (send, receive,
// delete, depth).
func (a *App) Queue(url string) *sqsqueue.Queue {
	return sqsqueue.New(a.SQS, sqsqueue.Options{QueueURL: url})
}

// NewLambdaLogger returns aws-lambda-go's lambdacontext logger (requestId on
// every line, AWS_LAMBDA_LOG_LEVEL honoured) in JSON, with the invocation's
// X-Ray trace id (trace_id, internal/tracing) on every line. lambdacontext chooses
// JSON only when AWS_LAMBDA_LOG_FORMAT=JSON (the function's LoggingFormat);
// otherwise the same handler shape is built here over slog's JSON handler,
// so the logs are JSON either way. level (debug, info, warn, error:
// config.Lambda.LogLevel) applies unless Lambda sets AWS_LAMBDA_LOG_LEVEL.
func NewLambdaLogger(level string) *slog.Logger {
	if strings.EqualFold(os.Getenv(envLambdaLogFormat), "JSON") {
		return slog.New(tracing.Handler(lambdacontext.NewLogger().Handler()))
	}
	if v := os.Getenv(envLambdaLogLevel); v != "" {
		level = v
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return slog.New(tracing.Handler(requestIDHandler{slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: lv, ReplaceAttr: lambdacontext.ReplaceAttr})}))
}

// requestIDHandler adds the Lambda request ID, as lambdacontext's handler does.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
