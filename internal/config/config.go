// Package config declares geomigrate's settings once. Each setting is a
// struct field whose tags hold its flag name, environment variable, default,
// help, allowed values and the --help topic it is listed under (kong's tag
// syntax); the CLI (cmd/geomigrate) parses them as flags and environment
// with kong, the Lambda functions read
// the same fields from their environment with LoadLambda, and infra/ renders
// a Lambda value into the functions' environment (Lambda.Environment).
// Adding a setting is adding a field here and its value in infra/.
//
// LoadLambda reads the tags itself rather than through kong: kong finds
// methods by name through reflection, which keeps the linker from dropping
// unused methods and grew each Lambda bootstrap by 8 MB.
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Handlers are the settings every step handler reads, on either backend.
type Handlers struct {
	VectorFormat string `name:"vector-format" group:"conversion" env:"GEOMIGRATE_VECTOR_FORMAT" type:"fold" enum:"GeoParquet,FlatGeobuf" default:"GeoParquet" help:"Vector output format: GeoParquet or FlatGeobuf (any case)."`
	ZSTDLevel    int    `name:"zstd-level" group:"conversion" env:"GEOMIGRATE_ZSTD_LEVEL" default:"3" help:"ZSTD level of the outputs, 1 to 22."`
	// StagingPrefix is where Convert writes before Promote.
	StagingPrefix string  `name:"staging-prefix" group:"io" env:"GEOMIGRATE_STAGING_PREFIX" default:"_staging/" help:"Destination prefix of outputs not yet promoted (ends in /)."`
	Lease         Seconds `name:"lease" group:"state" env:"GEOMIGRATE_LEASE_SECONDS" default:"20m" help:"How long a claimed file stays exclusive without renewal (renewed at each step); another run finding it held skips it as in progress until then. Leases of a process that died on this host are taken over at once. Must exceed the longest task timeout (15m)."`
	// FingerprintThreshold: larger sources are fingerprinted by size and
	// their first and last 8 MiB; the full hash is checked after promotion.
	FingerprintThreshold int64 `name:"fingerprint-threshold" group:"state" env:"GEOMIGRATE_FINGERPRINT_THRESHOLD_BYTES" default:"1073741824" help:"Sources larger than this are fingerprinted by size and their first and last 8 MiB."`
	// Remote sources read by range (internal/objectstore.ReadAhead): whole
	// in one GET up to SourceReadWhole bytes, else in aligned blocks.
	SourceReadWhole  int64  `name:"source-read-whole" group:"limits" env:"GEOMIGRATE_SOURCE_READ_WHOLE_BYTES" default:"67108864" help:"Remote sources up to this many bytes are read with one GET when conversion starts (held in memory); larger ones in aligned blocks (0: never whole)."`
	SourceReadBlock  int64  `name:"source-read-block" group:"limits" env:"GEOMIGRATE_SOURCE_READ_BLOCK_BYTES" default:"8388608" help:"Size of the aligned ranged GETs of remote sources larger than --source-read-whole."`
	SourceReadBlocks int    `name:"source-read-blocks" group:"limits" env:"GEOMIGRATE_SOURCE_READ_BLOCKS" default:"8" help:"Blocks of --source-read-block bytes kept per remote source (memory bound of the read-ahead)."`
	WorkDir          string `name:"work-dir" group:"limits" env:"GEOMIGRATE_WORK_DIR" placeholder:"DIR" help:"Scratch space for conversions (default: the system temporary directory)."`
	// QuarantineCopyLimit bounds the input bytes copied into a quarantine
	// bundle (internal/quarantine); larger inputs are referenced.
	QuarantineCopyLimit int64 `name:"quarantine-copy-limit" group:"failures" env:"GEOMIGRATE_QUARANTINE_COPY_LIMIT_BYTES" default:"67108864" help:"With --quarantine-copy-input, a routed file's quarantine bundle holds a copy of the input and its sidecars up to this many bytes together; larger ones are referenced."`
	// QuarantineCopyInput: bundles reference the input (URI, SHA-256,
	// size, version) unless asked to copy it.
	QuarantineCopyInput bool `name:"quarantine-copy-input" group:"failures" env:"GEOMIGRATE_QUARANTINE_COPY_INPUT" help:"Copy a routed file's input and sidecars into its quarantine bundle (default: the bundle references them)."`
	// The circuit breaker on each bucket (internal/breaker,
	// docs/operations.md).
	BreakerThreshold int     `name:"breaker-threshold" group:"failures" env:"GEOMIGRATE_BREAKER_THRESHOLD" default:"5" help:"Consecutive transient or systemic failures of a bucket that open its circuit breaker (0: no breaker). At most 5, the attempts per task, so one file's retries open it."`
	BreakerWindow    Seconds `name:"breaker-window" group:"failures" env:"GEOMIGRATE_BREAKER_WINDOW_SECONDS" default:"2m" help:"Failures further apart than this do not add up towards --breaker-threshold."`
	BreakerCooldown  Seconds `name:"breaker-cooldown" group:"failures" env:"GEOMIGRATE_BREAKER_COOLDOWN_SECONDS" default:"1m" help:"How long an open breaker refuses calls (files wait, without spending retries) before one call probes the bucket."`
	// The limits over which a job is converted by the container task (ECS
	// Fargate on AWS, a child process locally) instead of the Convert
	// Lambda (migration.ContainerLimits, docs/large-objects.md). HashCheck
	// puts them in its output beside the job's measures and the state
	// machine's ChooseEngine Choice compares the two; a run-time policy
	// document, where one is deployed, would set them in HashCheck instead.
	ContainerBytes       int64 `name:"container-bytes" group:"limits" env:"GEOMIGRATE_CONTAINER_BYTES" default:"4294967296" help:"Sources (with sidecars) larger than this many bytes are converted by the container task instead of the Convert Lambda."`
	ContainerPixelsBands int64 `name:"container-pixels-bands" group:"limits" env:"GEOMIGRATE_CONTAINER_PIXELS_BANDS" default:"1500000000" help:"Rasters whose header declares more than width x height x bands than this are converted by the container task."`
	ContainerFeatures    int64 `name:"container-features" group:"limits" env:"GEOMIGRATE_CONTAINER_FEATURES" default:"10000000" help:"Vector sources declaring more features than this are converted by the container task."`
}

// Validate checks what the tags cannot (kong calls it after parsing).
func (h *Handlers) Validate() error {
	switch {
	case h.ZSTDLevel < 1 || h.ZSTDLevel > 22:
		return fmt.Errorf("--zstd-level %d: want 1 to 22", h.ZSTDLevel)
	case h.FingerprintThreshold < 0:
		return fmt.Errorf("--fingerprint-threshold %d: want a non-negative number of bytes", h.FingerprintThreshold)
	case !strings.HasSuffix(h.StagingPrefix, "/"):
		return fmt.Errorf("--staging-prefix %q: must end in /", h.StagingPrefix)
	case h.Lease.Duration() <= 0:
		return fmt.Errorf("--lease %s: want a positive duration", h.Lease)
	case h.SourceReadWhole < 0:
		return fmt.Errorf("--source-read-whole %d: want a non-negative number of bytes", h.SourceReadWhole)
	case h.SourceReadBlock != 0 && h.SourceReadBlock < 64<<10:
		return fmt.Errorf("--source-read-block %d: want at least 65536 bytes", h.SourceReadBlock)
	case h.SourceReadBlocks < 0:
		return fmt.Errorf("--source-read-blocks %d: want at least 1", h.SourceReadBlocks)
	case h.QuarantineCopyLimit < 0:
		return fmt.Errorf("--quarantine-copy-limit %d: want a non-negative number of bytes", h.QuarantineCopyLimit)
	case h.BreakerThreshold < 0 || h.BreakerThreshold > 5:
		return fmt.Errorf("--breaker-threshold %d: want 0 (off) to 5 (the attempts per task)", h.BreakerThreshold)
	case h.BreakerThreshold > 0 && h.BreakerWindow.Duration() <= 0:
		return fmt.Errorf("--breaker-window %s: want a positive duration", h.BreakerWindow)
	case h.BreakerThreshold > 0 && h.BreakerCooldown.Duration() < time.Second:
		return fmt.Errorf("--breaker-cooldown %s: want at least 1s (the state machine waits in whole seconds)", h.BreakerCooldown)
	case h.ContainerBytes <= 0 || h.ContainerPixelsBands <= 0 || h.ContainerFeatures <= 0:
		return fmt.Errorf("--container-bytes %d, --container-pixels-bands %d, --container-features %d: each must be positive", h.ContainerBytes, h.ContainerPixelsBands, h.ContainerFeatures)
	}
	return nil
}

// Migration is the handlers' configuration for a destination; engine is the
// GDAL release the recipe names.
func (h Handlers) Migration(destBucket, destPrefix, engine string) migration.Config {
	c := migration.Config{
		DestBucket:           destBucket,
		DestPrefix:           destPrefix,
		StagingPrefix:        h.StagingPrefix,
		FingerprintThreshold: h.FingerprintThreshold,
		Lease:                h.Lease.Duration(),
		WorkDir:              h.WorkDir,
		SourceReadAhead:      h.ReadAhead(),
		Breaker:              breaker.Policy{Threshold: h.BreakerThreshold, Window: h.BreakerWindow.Duration(), Cooldown: h.BreakerCooldown.Duration()},
		Container:            migration.ContainerLimits{Bytes: h.ContainerBytes, PixelsBands: h.ContainerPixelsBands, Features: h.ContainerFeatures},
	}
	if c.WorkDir == "" {
		c.WorkDir = os.TempDir()
	}
	c.Recipe.VectorFormat, c.Recipe.ZSTDLevel = h.VectorFormat, h.ZSTDLevel
	c.Recipe.EngineVersion, c.Recipe.ToolVersion = engine, buildinfo.Version
	return c
}

// ReadAhead is how remote sources are read (0 for --source-read-whole:
// never whole; 0 for the block settings: objectstore's defaults).
func (h Handlers) ReadAhead() objectstore.ReadAhead {
	ra := objectstore.ReadAhead{WholeObjectMax: h.SourceReadWhole, BlockSize: h.SourceReadBlock, MaxBlocks: h.SourceReadBlocks}
	if ra.WholeObjectMax == 0 {
		ra.WholeObjectMax = -1
	}
	return ra
}

// AWS are the settings of the AWS backend: the clients and the state table.
// Endpoints are not among them: the SDK reads AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> itself (the CLI's --endpoint-url wins over
// both).
type AWS struct {
	StateTable string `name:"state-table" env:"GEOMIGRATE_STATE_TABLE" placeholder:"TABLE" help:"DynamoDB table of the job records (--backend aws)."`
	Region     string `name:"region" env:"GEOMIGRATE_AWS_REGION" help:"AWS region (default: the SDK's, from AWS_REGION or the profile)."`
	// PathStyle: unset, path-style addressing follows a custom S3 endpoint.
	PathStyle   *bool         `name:"path-style" env:"GEOMIGRATE_S3_PATH_STYLE" negatable:"" help:"Path-style S3 addressing (most S3-compatible stores); on by default with a custom S3 endpoint, --no-path-style turns it off."`
	MaxAttempts int           `name:"aws-max-attempts" env:"GEOMIGRATE_AWS_MAX_ATTEMPTS" default:"2" help:"SDK attempts per AWS API call, the first included (the state machine owns longer back-off)."`
	MaxBackoff  time.Duration `name:"aws-max-backoff" env:"GEOMIGRATE_AWS_MAX_BACKOFF" default:"2s" help:"Cap of the SDK's delay between its attempts."`
	// ConditionalCopy: auto is server against AWS's own S3 endpoint and
	// probe against a custom one (S3-compatible stores may ignore copy
	// preconditions).
	ConditionalCopy    string `name:"conditional-copy" env:"GEOMIGRATE_S3_CONDITIONAL_COPY" type:"fold" enum:"auto,server,multipart,client,probe" default:"auto" help:"How Promote copies without overwriting: server (CopyObject preconditions), multipart (server-side UploadPartCopy, the precondition on CompleteMultipartUpload), client (stream with a conditional Put), probe (find out at start-up) or auto (server on AWS, probe with a custom S3 endpoint)."`
	StateTTLDays       int    `name:"state-ttl-days" env:"GEOMIGRATE_STATE_TTL_DAYS" default:"0" help:"Keep terminal job records this many days (0: forever)."`
	DeadLetterQueueURL string `name:"dlq-url" env:"GEOMIGRATE_DEAD_LETTER_QUEUE_URL" placeholder:"URL" help:"SQS dead-letter queue (default for the CLI: a JSONL file in the state directory)."`
	// QuarantinePrefix is where routed jobs' bundles go in
	// QuarantineBucket; infra grants writes under its own setting only.
	QuarantinePrefix string `name:"quarantine-prefix" group:"failures" env:"GEOMIGRATE_QUARANTINE_PREFIX" default:".geomigrate-quarantine/" help:"Prefix of the quarantine bundles of routed files in --quarantine-bucket (off: no bundles)."`
	// QuarantineBucket keeps bundles out of the destination, which holds
	// only outputs and their metadata; the stack sets its operations
	// bucket.
	QuarantineBucket string `name:"quarantine-bucket" env:"GEOMIGRATE_QUARANTINE_BUCKET" placeholder:"BUCKET" help:"Bucket of the quarantine bundles (--backend aws; default: the destination bucket, under --quarantine-prefix)."`
	// PolicyParameter holds the run-time policy document (internal/policy):
	// classification rules, alarm thresholds, job deadline, backfill
	// concurrency, changed with no redeploy. PolicyTTL bounds how stale a
	// function's copy may be.
	PolicyParameter string  `name:"policy-parameter" env:"GEOMIGRATE_POLICY_PARAMETER" placeholder:"NAME" help:"SSM parameter holding the run-time policy document (docs/operations.md); empty: the built-in policy."`
	PolicyTTL       Seconds `name:"policy-ttl" env:"GEOMIGRATE_POLICY_TTL_SECONDS" default:"30s" help:"How long a process uses the policy document it read before reading --policy-parameter again."`
}

// Validate checks what the tags cannot.
func (a *AWS) Validate() error {
	switch {
	case a.MaxAttempts < 1:
		return fmt.Errorf("--aws-max-attempts %d: want a positive number", a.MaxAttempts)
	case a.MaxBackoff <= 0:
		return fmt.Errorf("--aws-max-backoff %s: want a positive duration such as 20ms", a.MaxBackoff)
	case a.StateTTLDays < 0:
		return fmt.Errorf("--state-ttl-days %d: want 0 or more", a.StateTTLDays)
	case a.PolicyTTL.Duration() < 0:
		return fmt.Errorf("--policy-ttl %s: want 0 or more", a.PolicyTTL)
	}
	return nil
}

// StateTTL is StateTTLDays as a duration (0: forever).
func (a AWS) StateTTL() time.Duration { return time.Duration(a.StateTTLDays) * 24 * time.Hour }

// Lambda is what a Lambda function reads from its environment: the
// handlers' and the AWS backend's settings, and what the stack knows that
// the CLI gets from its arguments.
type Lambda struct {
	Handlers `embed:""`
	AWS      `embed:""`
	// DestBucket and DestPrefix are the CLI's --dest s3://BUCKET/PREFIX.
	DestBucket string `name:"dest-bucket" env:"GEOMIGRATE_DEST_BUCKET" help:"Destination bucket."`
	DestPrefix string `name:"dest-prefix" env:"GEOMIGRATE_DEST_PREFIX" help:"Prefix of every final key."`
	// EngineVersion: HashCheck has no GDAL, yet the recipe hash it computes
	// must name the GDAL Convert runs; the deployment states the layer's,
	// and Convert refuses to work under another.
	EngineVersion string `name:"engine-version" env:"GEOMIGRATE_ENGINE_VERSION" help:"GDAL release of the layer, named in the recipe."`
	// MigrateStateMachineArn limits executionfailed to that machine's
	// executions ("" : any).
	MigrateStateMachineArn string `name:"migrate-state-machine-arn" env:"GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN" help:"executionfailed: the migrate state machine whose executions it closes."`
	// Recipe is where HashCheck reads the recipe file at cold start:
	// s3://BUCKET/KEY, or ssm:NAME (optionally pinned, ssm:NAME:3), read by
	// internal/recipesource. Empty: the recipe of the handler settings for
	// every source.
	Recipe   string `name:"recipe" env:"GEOMIGRATE_RECIPE" placeholder:"s3://BUCKET/KEY|ssm:NAME" help:"hashcheck: the recipe file, read once at cold start."`
	LogLevel string `name:"log-level" env:"GEOMIGRATE_LOG_LEVEL" type:"fold" enum:"debug,info,warn,error" default:"info" help:"Handler log level (AWS_LAMBDA_LOG_LEVEL, when Lambda sets it, wins)."`
}

// Validate checks what the tags cannot.
func (l *Lambda) Validate() error {
	switch {
	case l.DestBucket == "":
		return errors.New("GEOMIGRATE_DEST_BUCKET is required")
	case l.StateTable == "":
		return errors.New("GEOMIGRATE_STATE_TABLE is required")
	}
	return nil
}

// Migration is the handlers' configuration.
func (l Lambda) Migration() migration.Config {
	return l.Handlers.Migration(l.DestBucket, l.DestPrefix, l.EngineVersion)
}

// LoadLambda reads a Lambda function's settings from the process
// environment, through the declarations above: a variable that is set (even
// empty, for a string) wins over the default tag; enum values match in any
// case. It is called once, at cold start; its errors name the variable at
// fault.
func LoadLambda() (Lambda, error) {
	l, err := load(os.LookupEnv)
	if err != nil {
		return Lambda{}, fmt.Errorf("config.LoadLambda: %w", err)
	}
	return l, nil
}

// Check reports what a function given l.Environment() would refuse at
// cold start (infra/ calls it at synth time).
func (l Lambda) Check() error {
	env := l.Environment()
	if _, err := load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		return fmt.Errorf("config.Lambda.Check: %w", err)
	}
	return nil
}

// load reads a Lambda through lookup (os.LookupEnv).
func load(lookup func(string) (string, bool)) (Lambda, error) {
	var l Lambda
	var errs []error
	walkFields(reflect.ValueOf(&l).Elem(), func(f reflect.StructField, v reflect.Value) {
		name := f.Tag.Get("env")
		text, ok := lookup(name)
		if !ok {
			def, hasDefault := f.Tag.Lookup("default")
			if !hasDefault {
				return
			}
			text = def
		}
		if err := decode(f, v, text); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", name, text, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return Lambda{}, err
	}
	for _, check := range []func() error{l.Handlers.Validate, l.AWS.Validate, l.Validate} {
		if err := check(); err != nil {
			return Lambda{}, errors.New(inEnvTerms(err.Error()))
		}
	}
	return l, nil
}

// DefaultLambda is a Lambda with every declared default applied, the
// starting point of what infra/ sets.
func DefaultLambda() Lambda {
	var l Lambda
	walkFields(reflect.ValueOf(&l).Elem(), func(f reflect.StructField, v reflect.Value) {
		if def, ok := f.Tag.Lookup("default"); ok {
			if err := decode(f, v, def); err != nil {
				panic(fmt.Sprintf("config: default of %s: %v", f.Name, err))
			}
		}
	})
	return l
}

// inEnvTerms says a validation message in a function's terms: the
// variable rather than the flag.
func inEnvTerms(msg string) string {
	walkFields(reflect.ValueOf(&Lambda{}).Elem(), func(f reflect.StructField, _ reflect.Value) {
		if flag := f.Tag.Get("name"); flag != "" {
			msg = strings.ReplaceAll(msg, "--"+flag+" ", f.Tag.Get("env")+" ")
		}
	})
	return msg
}

// decode sets v, the field f, from text.
func decode(f reflect.StructField, v reflect.Value, text string) error {
	if enum := f.Tag.Get("enum"); enum != "" {
		values := strings.Split(enum, ",")
		for _, e := range values {
			if strings.EqualFold(e, text) {
				v.SetString(e)
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(values, ", "))
	}
	switch x := v.Addr().Interface().(type) {
	case *string:
		*x = text
	case *Seconds:
		return x.UnmarshalText([]byte(text))
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("want a duration such as 20ms")
		}
		*x = d
	case *bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*x = b
	case **bool:
		if text == "" {
			*x = nil
			return nil
		}
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*x = &b
	case *int, *int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		v.SetInt(n)
	default:
		return fmt.Errorf("config: no decoding for %s", v.Type())
	}
	return nil
}

// Environment renders l as the environment of a Lambda function: every
// variable the declaration reads, with its value (infra/ sets exactly
// these).
func (l Lambda) Environment() map[string]string {
	env := map[string]string{}
	walkFields(reflect.ValueOf(l), func(f reflect.StructField, v reflect.Value) {
		env[f.Tag.Get("env")] = render(v)
	})
	return env
}

// LayerEnvironment is what a process using the GDAL layer mounted at /opt
// (layers/gdal) needs in its environment: the layer's data directories, the
// iconv modules of the glibc it bundles (not where that glibc would look by
// default), and GDAL and PROJ kept off the network. The Convert Lambda
// (infra/), the convert image (internal/ociimage) and the layer's chroot
// tests set exactly these; GDAL_CACHEMAX is each one's own.
func LayerEnvironment() map[string]string {
	return map[string]string{
		"GDAL_DATA":    "/opt/share/gdal",
		"PROJ_DATA":    "/opt/share/proj",
		"PROJ_LIB":     "/opt/share/proj",
		"CPL_TMPDIR":   "/tmp",
		"GCONV_PATH":   "/opt/lib/gconv",
		"PROJ_NETWORK": "OFF",
		// No network from GDAL: the layer is built without curl, and these make sure a source
		// that references /vsicurl/ (e.g. a VRT) cannot reach out even with another build.
		"CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".geomigrate-network-disabled",
		"GDAL_HTTP_MAX_RETRY":              "0",
		"GDAL_HTTP_TIMEOUT":                "1",
		"GDAL_DISABLE_READDIR_ON_OPEN":     "EMPTY_DIR",
		"GDAL_PAM_ENABLED":                 "NO",
	}
}

// LambdaEnvNames lists every environment variable a Lambda function reads
// through the declaration.
func LambdaEnvNames() []string {
	var names []string
	walkFields(reflect.ValueOf(Lambda{}), func(f reflect.StructField, _ reflect.Value) {
		names = append(names, f.Tag.Get("env"))
	})
	return names
}

// walkFields calls fn for each field of the struct v with an env tag,
// descending into embedded structs.
func walkFields(v reflect.Value, fn func(reflect.StructField, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("embed"); ok {
			walkFields(v.Field(i), fn)
			continue
		}
		if f.Tag.Get("env") != "" {
			fn(f, v.Field(i))
		}
	}
}

func render(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case *bool:
		if x == nil {
			return ""
		}
		return strconv.FormatBool(*x)
	case Seconds:
		return strconv.FormatInt(int64(x.Duration()/time.Second), 10)
	case time.Duration:
		return x.String()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	panic(fmt.Sprintf("config: no rendering for %s", v.Type()))
}

// Seconds is a duration given as a Go duration (30m) or as whole seconds
// (1800, the form the environment variable's name promises).
type Seconds time.Duration

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

func (s Seconds) String() string { return time.Duration(s).String() }

// MarshalText writes s as a Go duration (20m0s), which UnmarshalText reads
// back: a setting passed on as JSON (the local container child's) keeps
// its value.
func (s Seconds) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads 30m or 1800.
func (s *Seconds) UnmarshalText(text []byte) error {
	if n, err := strconv.ParseInt(string(text), 10, 64); err == nil {
		*s = Seconds(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 30m) or a number of seconds", text)
	}
	*s = Seconds(d)
	return nil
}
