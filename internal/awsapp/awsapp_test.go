package awsapp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

func cfg() migration.Config { return migration.Config{DestBucket: "dest", Lease: time.Minute} }

func settings() config.AWS {
	return config.AWS{StateTable: "jobs", ConditionalCopy: "server", MaxAttempts: 2, MaxBackoff: time.Second}
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

func TestNewWiresEverything(t *testing.T) {
	sdkEnv(t)
	app, err := awsapp.New(context.Background(), cfg(), settings())
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
	if _, ok := app.Metrics.(migration.NopMetrics); !ok {
		t.Errorf("outside Lambda metrics are %T, want none", app.Metrics)
	}
	p := app.Ports()
	if p.HashCheck() == nil || p.Convert(nil, nil) == nil || p.Promote() == nil || p.Classify() == nil || p.ExecutionFailed(app.Queue("http://127.0.0.1:3/q"), "") == nil {
		t.Error("a handler is nil")
	}
}

// TestAutoCopyModeIsServerOnAWS: without a custom S3 endpoint, auto is
// server-side conditional copy (nothing is probed).
func TestAutoCopyModeIsServerOnAWS(t *testing.T) {
	sdkEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	s := settings()
	s.ConditionalCopy = "auto"
	app, err := awsapp.New(context.Background(), cfg(), s)
	if err != nil {
		t.Fatal(err)
	}
	if app.ConditionalCopy != s3store.CopyServerSide {
		t.Errorf("auto against AWS: %v, want server", app.ConditionalCopy)
	}
}

func TestNewInLambdaWritesEMF(t *testing.T) {
	sdkEnv(t)
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
	app, err := awsapp.New(context.Background(), cfg(), settings())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := app.Metrics.(*emf.Logger); !ok {
		t.Errorf("inside Lambda metrics are %T, want *emf.Logger", app.Metrics)
	}
}

func TestNewModesAndErrors(t *testing.T) {
	sdkEnv(t)
	for mode, want := range map[string]s3store.ConditionalCopy{"client": s3store.CopyThroughClient, "multipart": s3store.CopyServerMultipart, "server": s3store.CopyServerSide} {
		s := settings()
		s.ConditionalCopy = mode
		app, err := awsapp.New(context.Background(), cfg(), s)
		if err != nil || app.ConditionalCopy != want {
			t.Fatalf("%s mode: %v %v", mode, app, err)
		}
	}
	for name, mutate := range map[string]func(*migration.Config, *config.AWS){
		"no table":  func(_ *migration.Config, a *config.AWS) { a.StateTable = "" },
		"no bucket": func(c *migration.Config, _ *config.AWS) { c.DestBucket = "" },
		"bad mode":  func(_ *migration.Config, a *config.AWS) { a.ConditionalCopy = "maybe" },
		// auto with a custom endpoint probes it; nothing listens there.
		"probe unreachable": func(_ *migration.Config, a *config.AWS) { a.ConditionalCopy, a.MaxAttempts = "auto", 1 },
	} {
		t.Run(name, func(t *testing.T) {
			c, a := cfg(), settings()
			mutate(&c, &a)
			if _, err := awsapp.New(context.Background(), c, a); err == nil || !strings.Contains(err.Error(), "awsapp") {
				t.Errorf("err %v, want an awsapp error", err)
			}
		})
	}
}

func TestClientOptionsPathStyle(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		p                   *bool
		path, virtualHosted bool
	}{{nil, false, false}, {&yes, true, false}, {&no, false, true}} {
		o := awsapp.ClientOptions(config.AWS{PathStyle: tt.p, MaxAttempts: 3})
		if o.PathStyle != tt.path || o.VirtualHostedStyle != tt.virtualHosted || o.MaxAttempts != 3 {
			t.Errorf("path style %v: %+v", tt.p, o)
		}
	}
}
