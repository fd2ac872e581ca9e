// Package awsapp wires the migration handlers to the AWS adapters (S3 object
// store, DynamoDB state store, SQS queues): the one place that builds them.
// The Lambda entry points in functions/* call Load once at cold start, which
// reads the environment; `geomigrate migrate --backend aws` calls New with
// typed Settings built from its flags.
//
// Environment read by Load (besides migration.ConfigFromEnv's GEOMIGRATE_*
// variables and the SDK's own AWS_* credentials, region and endpoints,
// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>):
//
//	GEOMIGRATE_STATE_TABLE            DynamoDB table of the job records (required)
//	GEOMIGRATE_S3_CONDITIONAL_COPY    server (default) | client | probe | auto
//	GEOMIGRATE_S3_PATH_STYLE, GEOMIGRATE_AWS_MAX_ATTEMPTS, GEOMIGRATE_AWS_REGION
//	                                  as in internal/awsconfig
//	GEOMIGRATE_STATE_TTL_DAYS         keep terminal job records this long (0: forever)
//	GEOMIGRATE_QUARANTINE_PREFIX      where routed jobs' bundles go in the destination bucket
//	                                  (default .geomigrate-quarantine/; "off": no bundles)
//	GEOMIGRATE_QUARANTINE_COPY_LIMIT_BYTES  inputs up to this size are copied into the bundle
//	                                  (default 64 MiB; larger ones are referenced)
package awsapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
)

// Environment variables read by Load (beyond migration.ConfigFromEnv and
// awsconfig's endpoint variables).
const (
	EnvStateTable      = "GEOMIGRATE_STATE_TABLE"
	EnvConditionalCopy = "GEOMIGRATE_S3_CONDITIONAL_COPY"
	EnvStateTTLDays    = "GEOMIGRATE_STATE_TTL_DAYS"
	// EnvQuarantinePrefix and EnvQuarantineCopyLimit configure the
	// quarantine bundles (internal/quarantine).
	EnvQuarantinePrefix    = "GEOMIGRATE_QUARANTINE_PREFIX"
	EnvQuarantineCopyLimit = "GEOMIGRATE_QUARANTINE_COPY_LIMIT_BYTES"
	// EnvLambdaRuntimeAPI is set by Lambda (and aws-lambda-rie) for the
	// bootstrap; its presence turns on EMF metrics on stdout by default.
	EnvLambdaRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	EnvLambdaFunction   = "AWS_LAMBDA_FUNCTION_NAME"
	envLambdaLogFormat  = "AWS_LAMBDA_LOG_FORMAT"
)

// Conditional copy modes (GEOMIGRATE_S3_CONDITIONAL_COPY).
const (
	CopyModeServer = "server" // CopyObject enforces If-None-Match / If-Match (AWS)
	CopyModeClient = "client" // stream through the client with a conditional Put (versitygw)
	CopyModeProbe  = "probe"  // find out once at start-up against the destination bucket
	// CopyModeAuto is server against AWS's own S3 endpoint and probe against
	// a custom one (AWS_ENDPOINT_URL_S3, --endpoint-url): S3-compatible
	// stores may ignore copy preconditions.
	CopyModeAuto = "auto"
)

// MetricsNamespace is the CloudWatch namespace of the EMF metrics.
const MetricsNamespace = "geomigrate"

// App holds what the handlers share, built once.
type App struct {
	Config  migration.Config
	Store   objectstore.Store
	Tracker *statestore.Tracker
	Log     *slog.Logger
	Metrics migration.Metrics
	// Quarantine writes the bundles of routed jobs (nil: turned off);
	// Logs keeps this process's handler records per execution for them.
	Quarantine *quarantine.Writer
	Logs       *quarantine.LogBook

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
}

type settings struct {
	log       *slog.Logger
	metrics   migration.Metrics
	awsOpts   []func(*awsconfig.Options)
	storeOpts []func(*s3store.Options)
	preflight *Resources
}

// Option configures Load.
type Option func(*settings)

// WithLogger sets the handlers' logger (default: JSON through aws-lambda-go's
// lambdacontext handler, which adds the Lambda requestId to every line).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.log = l } }

// WithMetrics sets where the handlers' metrics go (default: EMF lines on
// stdout inside Lambda, i.e. when AWS_LAMBDA_RUNTIME_API is set, else none).
func WithMetrics(m migration.Metrics) Option { return func(s *settings) { s.metrics = m } }

// WithAWSOptions adjusts the client options read from the environment
// (the CLI's --endpoint-url and --path-style, an HTTP client in tests).
func WithAWSOptions(fn func(*awsconfig.Options)) Option {
	return func(s *settings) { s.awsOpts = append(s.awsOpts, fn) }
}

// WithStoreOptions adjusts the S3 store's options (part sizes, concurrency).
func WithStoreOptions(fn func(*s3store.Options)) Option {
	return func(s *settings) { s.storeOpts = append(s.storeOpts, fn) }
}

// Settings is what the handlers need, typed: Load reads it from the
// environment, the CLI builds it from its flags.
type Settings struct {
	Config     migration.Config
	StateTable string
	// ConditionalCopy is a CopyMode* ("" means server).
	ConditionalCopy string
	// StateTTL keeps terminal job records this long (0: forever).
	StateTTL time.Duration
	// QuarantinePrefix is where bundles go in the destination bucket
	// ("": quarantine.DefaultPrefix; "off": no bundles); QuarantineCopyLimit
	// bounds the input bytes copied into one (0: the default).
	QuarantinePrefix    string
	QuarantineCopyLimit int64
	AWS                 awsconfig.Options
}

// SettingsFromEnv reads Settings through getenv.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	cfg, err := migration.ConfigFromEnv(getenv)
	if err != nil {
		return Settings{}, fmt.Errorf("awsapp: %w", err)
	}
	s := Settings{Config: cfg, StateTable: getenv(EnvStateTable), ConditionalCopy: getenv(EnvConditionalCopy)}
	if v := getenv(EnvStateTTLDays); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Settings{}, fmt.Errorf("awsapp: %s=%q: want a non-negative integer", EnvStateTTLDays, v)
		}
		s.StateTTL = time.Duration(n) * 24 * time.Hour
	}
	s.QuarantinePrefix = getenv(EnvQuarantinePrefix)
	if v := getenv(EnvQuarantineCopyLimit); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Settings{}, fmt.Errorf("awsapp: %s=%q: want a non-negative integer", EnvQuarantineCopyLimit, v)
		}
		s.QuarantineCopyLimit = n
	}
	if s.AWS, err = awsconfig.FromGetenv(getenv); err != nil {
		return Settings{}, fmt.Errorf("awsapp: %w", err)
	}
	return s, nil
}

// WithPreflight checks that r exists before anything else is done (the
// CLI, before its first file); see App.Preflight.
func WithPreflight(r Resources) Option { return func(s *settings) { s.preflight = &r } }

// Load reads the configuration through getenv (os.Getenv in production)
// and builds the clients, the object store and the state tracker. Its
// errors are plain configuration errors: a cold start that fails has no job
// to route, and Lambda reports it as an init error (Runtime.ExitError).
func Load(ctx context.Context, getenv func(string) string, opts ...Option) (*App, error) {
	s, err := SettingsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return build(ctx, s, getenv, opts)
}

// New builds the App from typed settings (the CLI). The Lambda runtime
// variables (log format, EMF metrics) are read from the process
// environment.
func New(ctx context.Context, s Settings, opts ...Option) (*App, error) {
	return build(ctx, s, os.Getenv, opts)
}

func build(ctx context.Context, s Settings, getenv func(string) string, opts []Option) (*App, error) {
	var set settings
	for _, o := range opts {
		o(&set)
	}
	cfg := s.Config
	if cfg.Lease == 0 {
		cfg.Lease = migration.DefaultLease
	}
	if cfg.StagingPrefix == "" {
		cfg.StagingPrefix = migration.DefaultStagingPrefix
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("awsapp: %w", err)
	}
	if s.StateTable == "" {
		return nil, fmt.Errorf("awsapp: %s is required", EnvStateTable)
	}
	mode := strings.ToLower(strings.TrimSpace(s.ConditionalCopy))
	switch mode {
	case "":
		mode = CopyModeServer
	case CopyModeServer, CopyModeClient, CopyModeProbe, CopyModeAuto:
	default:
		return nil, fmt.Errorf("awsapp: %s=%q: want server, client, probe or auto", EnvConditionalCopy, mode)
	}
	o := s.AWS
	for _, fn := range set.awsOpts {
		fn(&o)
	}
	awsCfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("awsapp: %w", err)
	}
	app := &App{Config: cfg, AWS: awsCfg, AWSOptions: o, StateTable: s.StateTable, Log: set.log, Metrics: set.metrics}
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
	case CopyModeProbe:
		app.ConditionalCopy, err = s3store.ProbeConditionalCopy(ctx, app.S3, cfg.DestBucket, cfg.StagingPrefix)
		if err != nil {
			return nil, fmt.Errorf("awsapp: probe conditional copy on s3://%s: %w", cfg.DestBucket, err)
		}
	}
	so := s3store.Options{ConditionalCopy: app.ConditionalCopy}
	for _, fn := range set.storeOpts {
		fn(&so)
	}
	app.Store = s3store.New(app.S3, so)
	app.State = dynamostore.New(app.DynamoDB, dynamostore.Options{Table: s.StateTable})
	trackerOpts := []statestore.TrackerOption{statestore.WithLease(cfg.Lease)}
	if s.StateTTL > 0 {
		trackerOpts = append(trackerOpts, statestore.WithTTL(s.StateTTL))
	}
	app.Tracker = statestore.NewTracker(app.State, trackerOpts...)

	if app.Log == nil {
		app.Log = NewLambdaLogger(getenv)
	}
	if err := app.quarantine(s, getenv); err != nil {
		return nil, err
	}
	if app.Metrics == nil {
		if getenv(EnvLambdaRuntimeAPI) != "" {
			var props []emf.Option
			if fn := getenv(EnvLambdaFunction); fn != "" {
				props = append(props, emf.WithProperty("function", fn))
			}
			app.Metrics = emf.New(os.Stdout, MetricsNamespace, props...)
		} else {
			app.Metrics = migration.NopMetrics{}
		}
	}
	return app, nil
}

// Queue returns the SQS queue at url as a queue port (send, receive,
// delete, depth).
func (a *App) Queue(url string) *sqsqueue.Queue {
	return sqsqueue.New(a.SQS, sqsqueue.Options{QueueURL: url})
}

// NewLambdaLogger returns aws-lambda-go's lambdacontext logger (requestId on
// every line, AWS_LAMBDA_LOG_LEVEL honoured) in JSON. lambdacontext chooses
// JSON only when AWS_LAMBDA_LOG_FORMAT=JSON (the function's LoggingFormat);
// otherwise the same handler shape is built here over slog's JSON handler,
// so the logs are JSON either way.
func NewLambdaLogger(getenv func(string) string) *slog.Logger {
	if strings.EqualFold(getenv(envLambdaLogFormat), "JSON") {
		return lambdacontext.NewLogger()
	}
	level := slog.LevelInfo
	switch strings.ToUpper(getenv("AWS_LAMBDA_LOG_LEVEL")) {
	case "DEBUG":
		level = slog.LevelDebug
	case "WARN":
		level = slog.LevelWarn
	case "ERROR":
		level = slog.LevelError
	}
	return slog.New(requestIDHandler{slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdacontext.ReplaceAttr})})
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

// HashCheck returns the HashCheck handler.
func (a *App) HashCheck() *migration.HashCheck {
	f := migration.StoreFingerprinter{Store: a.Store, Threshold: a.Config.FingerprintThreshold}
	return migration.NewHashCheck(a.Config, a.Store, a.Tracker, f, a.Log).WithMetrics(a.Metrics)
}

// Convert returns the Convert handler over engine (internal/gdal in Lambda)
// and the output validator (internal/validate.Output), both passed in so
// that only the convert binary links GDAL and the Parquet reader.
func (a *App) Convert(engine recipe.Engine, validate migration.OutputValidator) *migration.Convert {
	return migration.NewConvert(a.Config, a.Store, a.Tracker, engine, validate, a.Log).WithMetrics(a.Metrics)
}

// Promote returns the Promote handler.
func (a *App) Promote() *migration.Promote {
	return migration.NewPromote(a.Config, a.Store, a.Tracker, a.Log).WithMetrics(a.Metrics)
}

// Classify returns the Classify handler with the default rules; it deletes
// the staged outputs of the jobs it routes.
func (a *App) Classify() *migration.Classify {
	return migration.NewClassify(a.Tracker, nil, a.Log).WithMetrics(a.Metrics).WithStagingCleanup(a.Store, a.Config).WithQuarantine(a.Quarantine)
}

// quarantineQuery finds every handler's records of one execution in
// CloudWatch Logs Insights (run it over the log groups of the hashcheck,
// convert, promote and classify functions): the handlers log JSON with the
// execution ARN in "execution" (migration.logFor), and Insights discovers
// the fields of JSON log events.
const quarantineQuery = `fields @timestamp, @log, level, state, attempt, message, error | filter execution = "%s" | sort @timestamp asc`

// quarantine builds the bundle writer: bundles under the prefix in the
// destination bucket, staged under the staging prefix (whose lifecycle
// rule expires what an interrupted write leaves). The log book wraps the
// handlers' logger, so a bundle carries this function's own records of the
// execution.
func (a *App) quarantine(s Settings, getenv func(string) string) error {
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
		return fmt.Errorf("awsapp: %s=%q lies inside the staging prefix %q", EnvQuarantinePrefix, prefix, a.Config.StagingPrefix)
	}
	a.Logs = quarantine.NewLogBook(slog.LevelInfo)
	a.Log = slog.New(a.Logs.Handler(a.Log.Handler()))
	fn := getenv(EnvLambdaFunction)
	if fn == "" {
		fn = "this process"
	}
	w, err := quarantine.NewWriter(quarantine.Config{
		Store: a.Store, Bucket: a.Config.DestBucket, Prefix: prefix, StagingPrefix: a.Config.StagingPrefix + "quarantine/",
		CopyLimit: s.QuarantineCopyLimit, Versions: quarantine.Versions{Geomigrate: buildinfo.Version}, Logs: a.Logs,
		LogScope: "records of " + fn + " for this execution only; each Lambda function logs to its own log group: logs.query fetches every handler's",
		LogQuery: quarantineQuery,
	})
	if err != nil {
		return fmt.Errorf("awsapp: %s: %w", EnvQuarantinePrefix, err)
	}
	a.Quarantine = w
	return nil
}

// Environment of the executionfailed function (besides Load's).
const (
	// EnvDeadLetterQueueURL is the SQS queue executionfailed sends to.
	EnvDeadLetterQueueURL = "GEOMIGRATE_DEAD_LETTER_QUEUE_URL"
	// EnvMigrateStateMachineArn, when set, limits executionfailed to the
	// executions of that state machine.
	EnvMigrateStateMachineArn = "GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN"
)

// ExecutionFailed returns the handler that closes the jobs of migrate
// executions that ended unfinished; it sends to the queue named by
// GEOMIGRATE_DEAD_LETTER_QUEUE_URL (required).
func (a *App) ExecutionFailed(getenv func(string) string) (*migration.ExecutionFailed, error) {
	url := getenv(EnvDeadLetterQueueURL)
	if url == "" {
		return nil, fmt.Errorf("awsapp: %s is required", EnvDeadLetterQueueURL)
	}
	dlq := sqsqueue.New(awsconfig.NewSQS(a.AWS, a.AWSOptions), sqsqueue.Options{QueueURL: url})
	return migration.NewExecutionFailed(a.Config, a.Store, a.Tracker, dlq, a.Log).ForStateMachine(getenv(EnvMigrateStateMachineArn)).WithQuarantine(a.Quarantine), nil
}
