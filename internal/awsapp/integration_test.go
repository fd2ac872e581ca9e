//go:build integration

package awsapp_test

import (
	"context"
	"testing"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
)

// TestProbeFindsMultipartCopyOnVersitygw: versitygw ignores preconditions
// on CopyObject and enforces them on CompleteMultipartUpload, so the probe
// chooses the server-side multipart copy.
func TestProbeFindsMultipartCopyOnVersitygw(t *testing.T) {
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, "awsapp-probe")
	e := srv.Env("awsapp-probe", "unused")
	for k, v := range e {
		if k == "AWS_ACCESS_KEY_ID" || k == "AWS_SECRET_ACCESS_KEY" || k == "AWS_REGION" {
			t.Setenv(k, v)
		}
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", e["AWS_ENDPOINT_URL_S3"])
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", e["AWS_ENDPOINT_URL_DYNAMODB"])
	pathStyle := true
	app, err := awsapp.New(context.Background(), migration.Config{DestBucket: "awsapp-probe"},
		config.AWS{StateTable: "unused", PathStyle: &pathStyle, ConditionalCopy: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	if app.ConditionalCopy != s3store.CopyServerMultipart {
		t.Errorf("probe chose %v, want server-multipart", app.ConditionalCopy)
	}
}
