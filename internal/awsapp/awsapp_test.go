package awsapp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func base() map[string]string {
	return map[string]string{
		"GEOMIGRATE_DEST_BUCKET":   "dest",
		"GEOMIGRATE_STATE_TABLE":   "jobs",
		"GEOMIGRATE_LEASE_SECONDS": "60",
	}
}

// sdkEnv points the SDK's own endpoint variables at nothing listening, with
// static credentials and no instance metadata.
func sdkEnv(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:3")
}

func TestLoadWiresEverything(t *testing.T) {
	sdkEnv(t)
	app, err := awsapp.Load(context.Background(), env(base()))
	if err != nil {
		t.Fatal(err)
	}
	if app.Config.DestBucket != "dest" || app.StateTable != "jobs" || app.Store == nil || app.Tracker == nil || app.Log == nil {
		t.Fatalf("app %+v", app)
	}
	if !app.S3.Options().UsePathStyle || awsconfig.S3Endpoint(app.S3) != "http://127.0.0.1:1" {
		t.Errorf("S3 at %q (path style %v): AWS_ENDPOINT_URL_S3 is honoured and implies path style", awsconfig.S3Endpoint(app.S3), app.S3.Options().UsePathStyle)
	}
	if got := awsconfig.DynamoDBEndpoint(app.DynamoDB); got != "http://127.0.0.1:2" {
		t.Errorf("DynamoDB at %q", got)
	}
	if got := awsconfig.SQSEndpoint(app.SQS); got != "http://127.0.0.1:3" {
		t.Errorf("SQS at %q", got)
	}
	if app.ConditionalCopy != s3store.CopyServerSide {
		t.Errorf("default conditional copy %v, want server", app.ConditionalCopy)
	}
	if _, ok := app.Metrics.(migration.NopMetrics); !ok {
		t.Errorf("outside Lambda metrics are %T, want none", app.Metrics)
	}
	if app.HashCheck() == nil || app.Convert(nil, nil) == nil || app.Promote() == nil || app.Classify() == nil {
		t.Error("a handler is nil")
	}
}

// TestLoadQuarantine: bundles go under the configured prefix of the
// destination bucket (the default without one), and "off" turns them off.
func TestLoadQuarantine(t *testing.T) {
	sdkEnv(t)
	tests := []struct {
		prefix string
		on     bool
	}{{"", true}, {"ops/quarantine", true}, {"off", false}, {"OFF", false}}
	for _, tt := range tests {
		e := base()
		e["GEOMIGRATE_QUARANTINE_PREFIX"] = tt.prefix
		e["GEOMIGRATE_QUARANTINE_COPY_LIMIT_BYTES"] = "1024"
		app, err := awsapp.Load(context.Background(), env(e))
		if err != nil {
			t.Fatal(err)
		}
		if (app.Quarantine != nil) != tt.on || (app.Logs != nil) != tt.on || app.Classify() == nil {
			t.Errorf("prefix %q: writer %v, log book %v, want on %v", tt.prefix, app.Quarantine, app.Logs, tt.on)
		}
	}
}

func TestLoadInLambdaWritesEMF(t *testing.T) {
	sdkEnv(t)
	e := base()
	e["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9001"
	app, err := awsapp.Load(context.Background(), env(e))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := app.Metrics.(*emf.Logger); !ok {
		t.Errorf("inside Lambda metrics are %T, want *emf.Logger", app.Metrics)
	}
}

func TestLoadModesAndErrors(t *testing.T) {
	sdkEnv(t)
	e := base()
	e["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "client"
	app, err := awsapp.Load(context.Background(), env(e))
	if err != nil || app.ConditionalCopy != s3store.CopyThroughClient {
		t.Fatalf("client mode: %v %v", app, err)
	}
	for name, mutate := range map[string]func(map[string]string){
		"no table":         func(m map[string]string) { delete(m, "GEOMIGRATE_STATE_TABLE") },
		"no bucket":        func(m map[string]string) { delete(m, "GEOMIGRATE_DEST_BUCKET") },
		"bad mode":         func(m map[string]string) { m["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "maybe" },
		"bad path style":   func(m map[string]string) { m["GEOMIGRATE_S3_PATH_STYLE"] = "sure" },
		"bad max attempts": func(m map[string]string) { m["GEOMIGRATE_AWS_MAX_ATTEMPTS"] = "0" },
		"bad ttl":          func(m map[string]string) { m["GEOMIGRATE_STATE_TTL_DAYS"] = "-1" },
		"bad copy limit":   func(m map[string]string) { m["GEOMIGRATE_QUARANTINE_COPY_LIMIT_BYTES"] = "64MiB" },
		"quarantine in staging": func(m map[string]string) {
			m["GEOMIGRATE_QUARANTINE_PREFIX"] = "_staging/q/"
		},
		"probe unreachable": func(m map[string]string) {
			m["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "probe"
			m["GEOMIGRATE_AWS_MAX_ATTEMPTS"] = "1"
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := base()
			mutate(m)
			if _, err := awsapp.Load(context.Background(), env(m)); err == nil || !strings.Contains(err.Error(), "awsapp") {
				t.Errorf("err %v, want an awsapp error", err)
			}
		})
	}
}
