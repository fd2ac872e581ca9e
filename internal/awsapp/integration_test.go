//go:build integration

package awsapp_test

import (
	"context"
	"os"
	"testing"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

// TestProbeFindsClientCopyOnVersitygw: versitygw ignores preconditions on
// CopyObject, so the probe chooses CopyThroughClient.
func TestProbeFindsClientCopyOnVersitygw(t *testing.T) {
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, "awsapp-probe")
	e := srv.Env("awsapp-probe", "unused")
	e["GEOMIGRATE_S3_CONDITIONAL_COPY"] = "probe"
	for k, v := range e {
		if k == "AWS_ACCESS_KEY_ID" || k == "AWS_SECRET_ACCESS_KEY" || k == "AWS_REGION" {
			t.Setenv(k, v)
		}
	}
	app, err := awsapp.Load(context.Background(), func(k string) string {
		if v, ok := e[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	if app.ConditionalCopy != s3store.CopyThroughClient {
		t.Errorf("probe chose %v, want client", app.ConditionalCopy)
	}
}
