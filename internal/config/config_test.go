package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// setEnv sets every declared variable: those in env to their value, the
// others unset (t.Setenv then os.Unsetenv, restored when the test ends).
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, name := range LambdaEnvNames() {
		t.Setenv(name, "")
		if v, ok := env[name]; ok {
			t.Setenv(name, v)
		} else {
			unsetenv(t, name)
		}
	}
}

func TestLoadLambdaDefaults(t *testing.T) {
	setEnv(t, map[string]string{"GEOMIGRATE_DEST_BUCKET": "dst", "GEOMIGRATE_STATE_TABLE": "jobs"})
	l, err := LoadLambda()
	if err != nil {
		t.Fatal(err)
	}
	c := l.Migration()
	// The declared defaults are the domain's.
	if c.Lease != migration.DefaultLease || c.StagingPrefix != migration.DefaultStagingPrefix ||
		c.FingerprintThreshold != migration.DefaultFingerprintThreshold ||
		c.Recipe.VectorFormat != recipe.FormatGeoParquet || c.Recipe.ZSTDLevel != recipe.DefaultZSTDLevel {
		t.Errorf("defaults %+v", c)
	}
	if l.ConditionalCopy != "auto" || l.MaxAttempts != 2 || l.MaxBackoff != 2*time.Second || l.LogLevel != "info" {
		t.Errorf("AWS defaults %+v", l.AWS)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestLoadLambdaReadsAndRefuses(t *testing.T) {
	base := map[string]string{"GEOMIGRATE_DEST_BUCKET": "dst", "GEOMIGRATE_STATE_TABLE": "jobs"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range base {
			if a != k {
				m[a] = b
			}
		}
		return m
	}
	for _, tt := range []struct {
		env     map[string]string
		check   func(Lambda) bool
		wantErr string
	}{
		{env: with("GEOMIGRATE_LEASE_SECONDS", "1800"), check: func(l Lambda) bool { return l.Lease.Duration() == 30*time.Minute }},
		{env: with("GEOMIGRATE_LEASE_SECONDS", "45m"), check: func(l Lambda) bool { return l.Lease.Duration() == 45*time.Minute }},
		{env: with("GEOMIGRATE_VECTOR_FORMAT", "flatgeobuf"), check: func(l Lambda) bool { return l.VectorFormat == "FlatGeobuf" }},
		{env: with("GEOMIGRATE_S3_PATH_STYLE", "false"), check: func(l Lambda) bool { return l.PathStyle != nil && !*l.PathStyle }},
		{env: with("GEOMIGRATE_S3_PATH_STYLE", ""), check: func(l Lambda) bool { return l.PathStyle == nil }},
		{env: with("GEOMIGRATE_S3_CONDITIONAL_COPY", "Client"), check: func(l Lambda) bool { return l.ConditionalCopy == "client" }},
		{env: with("GEOMIGRATE_STATE_TTL_DAYS", "7"), check: func(l Lambda) bool { return l.StateTTL() == 7*24*time.Hour }},
		{env: with("GEOMIGRATE_DEST_BUCKET", ""), wantErr: "GEOMIGRATE_DEST_BUCKET is required"},
		{env: with("GEOMIGRATE_STATE_TABLE", ""), wantErr: "GEOMIGRATE_STATE_TABLE is required"},
		{env: with("GEOMIGRATE_LEASE_SECONDS", "soon"), wantErr: "GEOMIGRATE_LEASE_SECONDS"},
		{env: with("GEOMIGRATE_ZSTD_LEVEL", "x"), wantErr: "GEOMIGRATE_ZSTD_LEVEL"},
		{env: with("GEOMIGRATE_ZSTD_LEVEL", "30"), wantErr: "GEOMIGRATE_ZSTD_LEVEL"},
		{env: with("GEOMIGRATE_VECTOR_FORMAT", "Shapefile"), wantErr: "GEOMIGRATE_VECTOR_FORMAT"},
		{env: with("GEOMIGRATE_S3_CONDITIONAL_COPY", "maybe"), wantErr: "GEOMIGRATE_S3_CONDITIONAL_COPY"},
		{env: with("GEOMIGRATE_AWS_MAX_ATTEMPTS", "0"), wantErr: "GEOMIGRATE_AWS_MAX_ATTEMPTS"},
		{env: with("GEOMIGRATE_S3_PATH_STYLE", "sometimes"), wantErr: "GEOMIGRATE_S3_PATH_STYLE"},
		{env: with("GEOMIGRATE_STAGING_PREFIX", "staging"), wantErr: "GEOMIGRATE_STAGING_PREFIX"},
	} {
		setEnv(t, tt.env)
		l, err := LoadLambda()
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want one naming %s", tt.env, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case !tt.check(l):
			t.Errorf("%v: read %+v", tt.env, l)
		}
	}
}

// TestEnvironmentRoundTrip: what infra renders is what a function reads
// back, every declared variable included.
func TestEnvironmentRoundTrip(t *testing.T) {
	yes := true
	want := Lambda{
		Handlers: Handlers{VectorFormat: "FlatGeobuf", ZSTDLevel: 5, StagingPrefix: "stage/", Lease: Seconds(31 * time.Minute),
			FingerprintThreshold: 1 << 20, WorkDir: "/tmp/w", SourceReadWhole: 1 << 20, SourceReadBlock: 1 << 20, SourceReadBlocks: 3,
			ContainerBytes: 1 << 33, ContainerPixelsBands: 7, ContainerFeatures: 9},
		AWS: AWS{StateTable: "jobs", Region: "eu-west-1", PathStyle: &yes, MaxAttempts: 3, MaxBackoff: 20 * time.Millisecond,
			ConditionalCopy: "server", StateTTLDays: 30, DeadLetterQueueURL: "https://sqs/q"},
		DestBucket: "dst", DestPrefix: "cog/", EngineVersion: "3.9.1", MigrateStateMachineArn: "arn:sm", LogLevel: "warn",
	}
	env := want.Environment()
	names := LambdaEnvNames()
	if len(env) != len(names) {
		t.Fatalf("rendered %d variables, %d declared", len(env), len(names))
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "GEOMIGRATE_") {
			t.Errorf("%s: not a GEOMIGRATE_ variable", n)
		}
	}
	if !slices.IsSorted(slices.Sorted(slices.Values(names))) || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("a variable is declared twice: %v", names)
	}
	setEnv(t, env)
	got, err := LoadLambda()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
}

// TestDefaultLambdaIsWhatAnEmptyEnvironmentGives: infra starts from the
// defaults a function would apply itself.
func TestDefaultLambdaIsWhatAnEmptyEnvironmentGives(t *testing.T) {
	setEnv(t, map[string]string{"GEOMIGRATE_DEST_BUCKET": "dst", "GEOMIGRATE_STATE_TABLE": "jobs"})
	l, err := LoadLambda()
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultLambda()
	d.DestBucket, d.StateTable = "dst", "jobs"
	if !reflect.DeepEqual(d, l) {
		t.Errorf("defaults\n%+v\nempty environment\n%+v", d, l)
	}
}

func TestCheck(t *testing.T) {
	l := DefaultLambda()
	l.DestBucket, l.StateTable = "dst", "jobs"
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	l.VectorFormat = "Shapefile"
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "GEOMIGRATE_VECTOR_FORMAT") {
		t.Errorf("Check of a Shapefile recipe: %v", err)
	}
}

func TestBreakerSettings(t *testing.T) {
	env := func(m map[string]string) map[string]string {
		m["GEOMIGRATE_DEST_BUCKET"], m["GEOMIGRATE_STATE_TABLE"] = "dst", "jobs"
		return m
	}
	setEnv(t, env(map[string]string{}))
	l, err := LoadLambda()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Migration().Breaker, breaker.DefaultPolicy; got != want {
		t.Errorf("default breaker policy %+v, want breaker.DefaultPolicy %+v", got, want)
	}
	setEnv(t, env(map[string]string{"GEOMIGRATE_BREAKER_THRESHOLD": "3", "GEOMIGRATE_BREAKER_COOLDOWN_SECONDS": "5"}))
	if l, err = LoadLambda(); err != nil {
		t.Fatal(err)
	}
	if p := l.Migration().Breaker; p.Threshold != 3 || p.Cooldown != 5*time.Second || p.Window != 2*time.Minute {
		t.Errorf("breaker policy %+v, want 3 failures, 5 s cooldown, 2 min window", p)
	}
	for _, bad := range []map[string]string{
		{"GEOMIGRATE_BREAKER_THRESHOLD": "6"},  // beyond the attempts per task
		{"GEOMIGRATE_BREAKER_THRESHOLD": "-1"}, // not a count
		{"GEOMIGRATE_BREAKER_THRESHOLD": "5", "GEOMIGRATE_BREAKER_COOLDOWN_SECONDS": "0"},
	} {
		setEnv(t, env(bad))
		if _, err := LoadLambda(); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	setEnv(t, env(map[string]string{"GEOMIGRATE_BREAKER_THRESHOLD": "0", "GEOMIGRATE_BREAKER_COOLDOWN_SECONDS": "0"}))
	if _, err := LoadLambda(); err != nil {
		t.Errorf("a breaker turned off needs no cooldown: %v", err)
	}
}

// TestReadAheadFromHandlers: the defaults are objectstore's, and 0 for
// --source-read-whole turns whole reads off rather than taking a default.
func TestReadAheadFromHandlers(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    Handlers
		want objectstore.ReadAhead
	}{
		{"defaults", DefaultLambda().Handlers, objectstore.ReadAhead{WholeObjectMax: objectstore.DefaultWholeObjectMax, BlockSize: objectstore.DefaultBlockSize, MaxBlocks: objectstore.DefaultMaxBlocks}},
		{"never whole", Handlers{SourceReadWhole: 0, SourceReadBlock: 1 << 20, SourceReadBlocks: 2}, objectstore.ReadAhead{WholeObjectMax: -1, BlockSize: 1 << 20, MaxBlocks: 2}},
	} {
		if got := tt.h.ReadAhead(); got != tt.want {
			t.Errorf("%s: ReadAhead() = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestContainerDefaultsAreTheHandlers: the flags' defaults are the limits
// the handlers apply when none are set.
func TestContainerDefaultsAreTheHandlers(t *testing.T) {
	got := DefaultLambda().Migration().Container
	if got != migration.DefaultContainerLimits {
		t.Fatalf("config defaults %+v, migration defaults %+v", got, migration.DefaultContainerLimits)
	}
}
