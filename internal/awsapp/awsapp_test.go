package awsapp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func base() map[string]string {
	return map[string]string{
		"GEOMIGRATE_DEST_BUCKET":       "dest",
		"GEOMIGRATE_STATE_TABLE":       "jobs",
		"GEOMIGRATE_S3_ENDPOINT":       "http://127.0.0.1:1",
		"GEOMIGRATE_DYNAMODB_ENDPOINT": "http://127.0.0.1:2",
		"GEOMIGRATE_LEASE_SECONDS":     "60",
	}
}

func TestLoadWiresEverything(t *testing.T) {
	app, err := awsapp.Load(context.Background(), env(base()))
	if err != nil {
		t.Fatal(err)
	}
	if app.Config.DestBucket != "dest" || app.StateTable != "jobs" || app.Store == nil || app.Tracker == nil || app.Log == nil {
		t.Fatalf("app %+v", app)
	}
	if !app.AWSOptions.PathStyle || app.AWSOptions.S3EndpointURL != "http://127.0.0.1:1" {
		t.Errorf("options %+v: an S3 endpoint implies path style", app.AWSOptions)
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

func TestLoadInLambdaWritesEMF(t *testing.T) {
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
