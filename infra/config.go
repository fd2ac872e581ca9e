package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/constructs-go/constructs/v10"

	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// Config is everything a user may change, read from CDK context (cdk.json "context" or
// `cdk synth -c key=value`). docs/deploy.md lists every key; keep the two in step.
type Config struct {
	StackName  string // context stackName
	NamePrefix string // context namePrefix: prefix of state machine, queue and alarm names

	// Buckets. Names are optional (CloudFormation generates them); when both are set they must differ.
	SourceBucketName string   // context sourceBucketName
	DestBucketName   string   // context destBucketName
	SourcePrefixes   []string // context sourcePrefixes: EventBridge prefix filter and hashcheck/convert read scope
	DestPrefix       string   // context destPrefix (GEOMIGRATE_DEST_PREFIX)
	StagingPrefix    string   // context stagingPrefix (GEOMIGRATE_STAGING_PREFIX)

	StagingExpirationDays int  // context stagingExpirationDays
	AbortMultipartDays    int  // context abortMultipartDays
	NoncurrentVersionDays int  // context noncurrentVersionDays (destination versions kept this long)
	EnableInventory       bool // context enableInventory: weekly S3 Inventory of the source for backfills

	// Conversion settings passed to the functions.
	VectorFormat                string // context vectorFormat: GeoParquet | FlatGeobuf
	ZstdLevel                   int    // context zstdLevel
	LeaseSeconds                int    // context leaseSeconds
	FingerprintThresholdBytes   int64  // context fingerprintThresholdBytes
	LogLevel                    string // context logLevel
	Architecture                string // context architecture: arm64 | x86_64
	ConvertMemoryMB             int    // context convertMemoryMB
	ConvertTimeoutSeconds       int    // context convertTimeoutSeconds
	ConvertEphemeralMB          int    // context convertEphemeralMB
	ConvertReservedConcurrency  int    // context convertReservedConcurrency (0 = not reserved)
	SmallMemoryMB               int    // context smallFunctionMemoryMB (hashcheck, classify, promote)
	HashcheckTimeoutSeconds     int    // context hashcheckTimeoutSeconds
	PromoteTimeoutSeconds       int    // fixed: promote copies at most one output set (not a context key)
	ClassifyTimeoutSeconds      int    // fixed: classify only records and routes (not a context key)
	SmallReservedConcurrency    int    // context smallFunctionReservedConcurrency (0 = not reserved)
	LogRetentionDays            int    // context logRetentionDays
	EventRetryAttempts          int    // context eventRetryAttempts: EventBridge → StartExecution
	EventMaxAgeHours            int    // context eventMaxAgeHours
	QueueMaxReceiveCount        int    // context queueMaxReceiveCount: redrive to each queue's own DLQ
	BackfillChildExecutionType  string // context backfillChildExecutionType: STANDARD | EXPRESS
	RemediationRateThresholdPct int    // context remediationRateThresholdPercent
	LambdaErrorsThreshold       int    // context lambdaErrorsThreshold (errors per 5 minutes)
	// FallbackThresholds stand in for the thresholds the handlers report
	// with every ended job (FallbackThreshold) in a period where none was
	// reported; the alarms otherwise compare with what was reported, so a
	// threshold changed at run time needs no redeploy. Not a context key:
	// the run-time policy document is where thresholds are changed.
	FallbackThresholds   signals.Thresholds
	FallbackAlarmPeriods int    // context fallbackAlarmPeriods: consecutive 5-minute periods above a threshold before alarming ("sustained")
	FallbackMinJobs      int    // context fallbackMinJobs: jobs that must end in a period for its rate to count
	AlarmEmail           string // context alarmEmail: optional SNS e-mail subscription
	// Recipe is the recipe file hashcheck reads at cold start
	// (GEOMIGRATE_RECIPE): s3://BUCKET/KEY or ssm:NAME[:VERSION]; hashcheck
	// is granted reading exactly that object or parameter.
	Recipe string // context recipe

	// Code and definitions. Relative paths are relative to the repository root (where cdk.json is).
	BuildDir          string // context buildDir: build/<name>/bootstrap
	GDALLayerZip      string // context gdalLayerZip (default build/gdal-layer-<arch>.zip)
	GDALLayerArn      string // context gdalLayerArn: use an existing layer version instead of the zip
	PlaceholderAssets bool   // context placeholderAssets: synth-only stand-ins for missing build outputs
	// The convert container (the large-object path, container.go).
	ConvertImage          string // context convertImage: the convert container's image reference (make image-push); required unless placeholderAssets
	ConvertTaskCPU        int    // context convertTaskCpu: Fargate CPU units (arm64)
	ConvertTaskMemoryMiB  int    // context convertTaskMemoryMiB
	MigrateDefinitionPath string // context migrateDefinition
	BackfillDefinition    string // context backfillDefinition

	RepoRoot string // found by walking up to cdk.json; not a context key
	// GDALVersion is the GDAL release of the layer (context gdalVersion;
	// default: versions.gdal of layers/gdal/manifest.json).
	GDALVersion string
}

// FunctionNames are the Lambda functions, in build/<name>/bootstrap: the four steps of the
// migrate state machine and executionfailed, which closes the jobs of its executions that end
// unfinished (FAILED outside Catch, TIMED_OUT, ABORTED).
var FunctionNames = []string{"hashcheck", "convert", "classify", "promote", "executionfailed"}

type contextReader interface {
	TryGetContext(key *string) interface{}
}

func ctxString(n contextReader, key, def string) string {
	v := n.TryGetContext(&key)
	switch t := v.(type) {
	case nil:
		return def
	case string:
		return t
	default:
		return fmt.Sprint(t)
	}
}

func ctxInt(n contextReader, key string, def int) (int, error) {
	v := n.TryGetContext(&key)
	switch t := v.(type) {
	case nil:
		return def, nil
	case float64:
		return int(t), nil
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, fmt.Errorf("context %s: %q is not an integer", key, t)
		}
		return i, nil
	default:
		return 0, fmt.Errorf("context %s: %v is not an integer", key, t)
	}
}

func ctxBool(n contextReader, key string, def bool) (bool, error) {
	v := n.TryGetContext(&key)
	switch t := v.(type) {
	case nil:
		return def, nil
	case bool:
		return t, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(t))
		if err != nil {
			return false, fmt.Errorf("context %s: %q is not true/false", key, t)
		}
		return b, nil
	default:
		return false, fmt.Errorf("context %s: %v is not true/false", key, t)
	}
}

// ctxList accepts a JSON list (cdk.json), a JSON list in a string, or a comma-separated string (-c).
func ctxList(n contextReader, key string, def []string) ([]string, error) {
	v := n.TryGetContext(&key)
	switch t := v.(type) {
	case nil:
		return def, nil
	case []interface{}:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("context %s: %v is not a string", key, e)
			}
			out = append(out, s)
		}
		return out, nil
	case string:
		s := strings.TrimSpace(t)
		if strings.HasPrefix(s, "[") {
			var out []string
			if err := json.Unmarshal([]byte(s), &out); err != nil {
				return nil, fmt.Errorf("context %s: %v", key, err)
			}
			return out, nil
		}
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("context %s: %v is not a list", key, t)
	}
}

// LoadConfig reads and validates the configuration from the construct's context.
func LoadConfig(scope constructs.Construct) (*Config, error) {
	n := scope.Node()
	var errs []string
	geti := func(key string, def int) int {
		i, err := ctxInt(n, key, def)
		if err != nil {
			errs = append(errs, err.Error())
		}
		return i
	}
	getb := func(key string, def bool) bool {
		b, err := ctxBool(n, key, def)
		if err != nil {
			errs = append(errs, err.Error())
		}
		return b
	}
	// The function settings' defaults are internal/config's declaration,
	// the CLI's too: one default per setting, on AWS and locally.
	declared := config.DefaultLambda()
	c := &Config{
		StackName:                   ctxString(n, "stackName", "Geomigrate"),
		NamePrefix:                  ctxString(n, "namePrefix", "geomigrate"),
		SourceBucketName:            ctxString(n, "sourceBucketName", ""),
		DestBucketName:              ctxString(n, "destBucketName", ""),
		DestPrefix:                  ctxString(n, "destPrefix", ""),
		StagingPrefix:               ctxString(n, "stagingPrefix", declared.StagingPrefix),
		StagingExpirationDays:       geti("stagingExpirationDays", 3),
		AbortMultipartDays:          geti("abortMultipartDays", 1),
		NoncurrentVersionDays:       geti("noncurrentVersionDays", 30),
		EnableInventory:             getb("enableInventory", true),
		VectorFormat:                ctxString(n, "vectorFormat", declared.VectorFormat),
		ZstdLevel:                   geti("zstdLevel", declared.ZSTDLevel),
		LeaseSeconds:                geti("leaseSeconds", int(declared.Lease.Duration()/time.Second)),
		LogLevel:                    ctxString(n, "logLevel", declared.LogLevel),
		Architecture:                ctxString(n, "architecture", "arm64"),
		ConvertMemoryMB:             geti("convertMemoryMB", 10240),
		ConvertTimeoutSeconds:       geti("convertTimeoutSeconds", 900),
		ConvertEphemeralMB:          geti("convertEphemeralMB", 10240),
		ConvertReservedConcurrency:  geti("convertReservedConcurrency", 0),
		SmallMemoryMB:               geti("smallFunctionMemoryMB", 512),
		HashcheckTimeoutSeconds:     geti("hashcheckTimeoutSeconds", 900),
		PromoteTimeoutSeconds:       900,
		ClassifyTimeoutSeconds:      60,
		SmallReservedConcurrency:    geti("smallFunctionReservedConcurrency", 0),
		LogRetentionDays:            geti("logRetentionDays", 90),
		EventRetryAttempts:          geti("eventRetryAttempts", 185),
		EventMaxAgeHours:            geti("eventMaxAgeHours", 24),
		QueueMaxReceiveCount:        geti("queueMaxReceiveCount", 5),
		BackfillChildExecutionType:  strings.ToUpper(ctxString(n, "backfillChildExecutionType", "STANDARD")),
		RemediationRateThresholdPct: geti("remediationRateThresholdPercent", 5),
		LambdaErrorsThreshold:       geti("lambdaErrorsThreshold", 5),
		FallbackThresholds:          signals.DefaultThresholds,
		FallbackAlarmPeriods:        geti("fallbackAlarmPeriods", 3),
		FallbackMinJobs:             geti("fallbackMinJobs", 20),
		AlarmEmail:                  ctxString(n, "alarmEmail", ""),
		Recipe:                      ctxString(n, "recipe", ""),
		BuildDir:                    ctxString(n, "buildDir", "build"),
		GDALLayerArn:                ctxString(n, "gdalLayerArn", ""),
		PlaceholderAssets:           getb("placeholderAssets", false),
		ConvertImage:                ctxString(n, "convertImage", ""),
		ConvertTaskCPU:              geti("convertTaskCpu", 4096),
		ConvertTaskMemoryMiB:        geti("convertTaskMemoryMiB", 16384),
		MigrateDefinitionPath:       ctxString(n, "migrateDefinition", "statemachine/migrate.asl.json"),
		BackfillDefinition:          ctxString(n, "backfillDefinition", "statemachine/backfill.asl.json"),
	}
	c.GDALLayerZip = ctxString(n, "gdalLayerZip", "build/gdal-layer-"+c.Architecture+".zip")
	ft := geti("fingerprintThresholdBytes", int(declared.FingerprintThreshold))
	c.FingerprintThresholdBytes = int64(ft)
	prefixes, err := ctxList(n, "sourcePrefixes", []string{"incoming/"})
	if err != nil {
		errs = append(errs, err.Error())
	}
	c.SourcePrefixes = prefixes

	root, err := findRepoRoot()
	if err != nil {
		errs = append(errs, err.Error())
	}
	c.RepoRoot = root
	// HashCheck has no GDAL but names GDAL's version in every recipe hash,
	// and Convert refuses jobs whose recipe names another: both read it from
	// GEOMIGRATE_ENGINE_VERSION, which must be the layer's GDAL.
	c.GDALVersion = ctxString(n, "gdalVersion", "")
	if c.GDALVersion == "" && root != "" {
		v, err := layerGDALVersion(c.Path("layers/gdal/manifest.json"))
		if err != nil {
			errs = append(errs, err.Error())
		}
		c.GDALVersion = v
	}

	errs = append(errs, c.validate()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid geomigrate configuration:\n  - %s", strings.Join(errs, "\n  - "))
	}
	return c, nil
}

// validate lists every problem of the configuration at once, so a deploy
// is fixed in one edit.
func (c *Config) validate() []string {
	var errs []string
	for _, check := range []func() []string{c.validatePlaces, c.validateChoices, c.validateLimits, c.validateAlarms, c.validateLease} {
		errs = append(errs, check()...)
	}
	return errs
}

// validatePlaces checks the buckets, prefixes and the recipe reference.
func (c *Config) validatePlaces() []string {
	var errs []string
	if c.SourceBucketName != "" && c.SourceBucketName == c.DestBucketName {
		errs = append(errs, "sourceBucketName and destBucketName must differ: promotion writes to the destination must never re-trigger the pipeline")
	}
	if len(c.SourcePrefixes) == 0 {
		errs = append(errs, `sourcePrefixes must list at least one prefix (use [""] for the whole bucket)`)
	}
	for _, p := range c.SourcePrefixes {
		if strings.ContainsAny(p, "*?") {
			errs = append(errs, fmt.Sprintf("sourcePrefixes: %q: prefixes are literal, no wildcards", p))
		}
	}
	if c.StagingPrefix == "" || !strings.HasSuffix(c.StagingPrefix, "/") || strings.ContainsAny(c.StagingPrefix, "*?") {
		errs = append(errs, fmt.Sprintf("stagingPrefix %q must be a non-empty literal prefix ending in /", c.StagingPrefix))
	}
	if c.DestPrefix != "" && strings.HasPrefix(c.DestPrefix, c.StagingPrefix) {
		errs = append(errs, "destPrefix must not lie under stagingPrefix")
	}
	if _, _, err := recipeResource(c.Recipe); err != nil {
		errs = append(errs, err.Error())
	}
	return errs
}

// validateChoices checks the named choices (formats, architecture, execution type).
func (c *Config) validateChoices() []string {
	var errs []string
	if c.VectorFormat != "GeoParquet" && c.VectorFormat != "FlatGeobuf" {
		errs = append(errs, fmt.Sprintf("vectorFormat %q: want GeoParquet or FlatGeobuf", c.VectorFormat))
	}
	if c.Architecture != "arm64" && c.Architecture != "x86_64" {
		errs = append(errs, fmt.Sprintf("architecture %q: want arm64 or x86_64", c.Architecture))
	}
	if c.BackfillChildExecutionType != "STANDARD" && c.BackfillChildExecutionType != "EXPRESS" {
		errs = append(errs, fmt.Sprintf("backfillChildExecutionType %q: want STANDARD or EXPRESS", c.BackfillChildExecutionType))
	}
	if c.BackfillChildExecutionType == "EXPRESS" && c.ConvertTimeoutSeconds > 240 {
		errs = append(errs, "backfillChildExecutionType EXPRESS caps a child at 5 minutes: set convertTimeoutSeconds to 240 or less (or keep STANDARD)")
	}
	return errs
}

// validateLimits checks the numeric bounds AWS and the handlers set.
func (c *Config) validateLimits() []string {
	var errs []string
	if c.ConvertMemoryMB < 128 || c.ConvertMemoryMB > 10240 || c.SmallMemoryMB < 128 || c.SmallMemoryMB > 10240 {
		errs = append(errs, "function memory must be within 128..10240 MB")
	}
	if c.ConvertEphemeralMB < 512 || c.ConvertEphemeralMB > 10240 {
		errs = append(errs, "convertEphemeralMB must be within 512..10240")
	}
	if c.ConvertTimeoutSeconds < 1 || c.ConvertTimeoutSeconds > 900 || c.HashcheckTimeoutSeconds < 1 || c.HashcheckTimeoutSeconds > 900 {
		errs = append(errs, "function timeouts must be within 1..900 s")
	}
	if c.ConvertReservedConcurrency < 0 || c.SmallReservedConcurrency < 0 {
		errs = append(errs, "reserved concurrency must be >= 0 (0 = not reserved)")
	}
	if c.EventRetryAttempts < 0 || c.EventRetryAttempts > 185 {
		errs = append(errs, "eventRetryAttempts must be within 0..185")
	}
	if c.EventMaxAgeHours < 1 || c.EventMaxAgeHours > 24 {
		errs = append(errs, "eventMaxAgeHours must be within 1..24")
	}
	if c.QueueMaxReceiveCount < 1 || c.QueueMaxReceiveCount > 1000 {
		errs = append(errs, "queueMaxReceiveCount must be within 1..1000")
	}
	if c.ZstdLevel < 1 || c.ZstdLevel > 22 {
		errs = append(errs, "zstdLevel must be within 1..22")
	}
	if c.FingerprintThresholdBytes <= 0 {
		errs = append(errs, "fingerprintThresholdBytes must be positive")
	}
	return errs
}

// validateAlarms checks the fallback alarm's periods, minimum and thresholds.
func (c *Config) validateAlarms() []string {
	var errs []string
	if c.FallbackAlarmPeriods < 1 || c.FallbackAlarmPeriods > 288 {
		errs = append(errs, fmt.Sprintf("fallbackAlarmPeriods %d: want 1..288 five-minute periods (a day at most)", c.FallbackAlarmPeriods))
	}
	if c.FallbackMinJobs < 1 {
		errs = append(errs, fmt.Sprintf("fallbackMinJobs %d: want at least 1", c.FallbackMinJobs))
	}
	if err := c.FallbackThresholds.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	return errs
}

// validateLease checks that a lease outlives every invocation holding it.
func (c *Config) validateLease() []string {
	var errs []string
	if c.LeaseSeconds < 60 {
		errs = append(errs, "leaseSeconds must be at least 60")
	}
	// A lease that ends while a function still runs would let a second execution claim the job.
	for name, secs := range map[string]int{"convertTimeoutSeconds": c.ConvertTimeoutSeconds, "hashcheckTimeoutSeconds": c.HashcheckTimeoutSeconds,
		"promote's timeout": c.PromoteTimeoutSeconds, "classify's timeout": c.ClassifyTimeoutSeconds} {
		if c.LeaseSeconds <= secs {
			errs = append(errs, fmt.Sprintf("leaseSeconds (%d) must exceed %s (%d): a lease must outlive the invocation holding it", c.LeaseSeconds, name, secs))
		}
	}
	return errs
}

// Path resolves p against the repository root.
func (c *Config) Path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.RepoRoot, p)
}

// findRepoRoot walks up from the working directory to the directory holding cdk.json, so that
// `cdk synth` at the root (which runs the app in infra/) and `go test` in infra/ agree on paths.
func findRepoRoot() (string, error) {
	if r := os.Getenv("GEOMIGRATE_REPO_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no cdk.json found above %s (set GEOMIGRATE_REPO_ROOT)", dir)
		}
	}
}

// layerGDALVersion reads versions.gdal from the layer manifest.
func layerGDALVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("gdalVersion: %w (or set -c gdalVersion=X.Y.Z)", err)
	}
	var m struct {
		Versions struct {
			GDAL string `json:"gdal"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Versions.GDAL == "" {
		return "", fmt.Errorf("gdalVersion: %s has no versions.gdal (%v)", path, err)
	}
	return m.Versions.GDAL, nil
}

// recipeResource splits the recipe context value into what hashcheck must
// read: an S3 object (bucket, key) or an SSM parameter ("ssm", name,
// without a :VERSION or :LABEL selector). Empty: no recipe file.
func recipeResource(ref string) (kind, name string, err error) {
	switch {
	case ref == "":
		return "", "", nil
	case strings.HasPrefix(ref, "s3://"):
		bucket, key, ok := strings.Cut(strings.TrimPrefix(ref, "s3://"), "/")
		if !ok || bucket == "" || key == "" || strings.ContainsAny(ref, "*?") {
			return "", "", fmt.Errorf("recipe %q: want s3://BUCKET/KEY", ref)
		}
		return "s3", bucket + "/" + key, nil
	case strings.HasPrefix(ref, "ssm:"):
		name := strings.TrimPrefix(ref, "ssm:")
		if i := strings.LastIndexByte(name, ':'); i > 0 {
			name = name[:i]
		}
		if name == "" || strings.ContainsAny(name, "*?") {
			return "", "", fmt.Errorf("recipe %q: want ssm:NAME[:VERSION]", ref)
		}
		return "ssm", strings.TrimPrefix(name, "/"), nil
	}
	return "", "", fmt.Errorf("recipe %q: want s3://BUCKET/KEY or ssm:NAME[:VERSION]", ref)
}
