//go:build integration

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/policy"
)

// TestPolicyPutAndBackfillOnMoto: `geomigrate policy put` stores a valid document as
// a new version of the parameter and refuses a bad one without touching
// it; `backfill --backend aws` then starts the backfill state machine with
// the document's max_concurrency in its input (the Map's
// MaxConcurrencyPath), and with --workers when that is given.
func TestPolicyPutAndBackfillOnMoto(t *testing.T) {
	m := motoServer(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "geomigrate-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "geomigrate-test-secret")
	ctx := context.Background()
	o := awsconfig.Options{EndpointURL: m.endpoint, Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"}
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	client := ssm.NewFromConfig(cfg, func(so *ssm.Options) { so.BaseEndpoint = aws.String(m.endpoint) })
	name := fmt.Sprintf("/geomigrate-test/cli-policy-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = client.DeleteParameter(context.Background(), &ssm.DeleteParameterInput{Name: aws.String(name)})
	})
	awsFlags := []string{"--backend", "aws", "--endpoint-url", m.endpoint, "--region", "us-east-1", "--policy-parameter", name}

	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.json"), `{"version": 1, "backfill": {"max_concurrency": 25}}`)
	bad := writeFile(t, filepath.Join(dir, "bad.json"), `{"version": 1, "backfill": {"max_concurrency": 25000}}`)
	out, _, err := run(t, append([]string{"policy", "put", good}, awsFlags...)...)
	if err != nil || !strings.Contains(out, name+": version 1") {
		t.Fatalf("put: %v\n%s", err, out)
	}
	_, _, err = run(t, append([]string{"policy", "put", bad}, awsFlags...)...)
	if err == nil || !strings.Contains(err.Error(), "/backfill/max_concurrency") {
		t.Fatalf("put of a bad document: %v", err)
	}
	got, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Parameter.Version != 1 {
		t.Errorf("the bad document was stored: version %d", got.Parameter.Version)
	}
	if d, err := policy.Parse([]byte(*got.Parameter.Value)); err != nil || d.Backfill.MaxConcurrency != 25 {
		t.Errorf("stored %s (%v)", *got.Parameter.Value, err)
	}

	states := sfn.NewFromConfig(cfg, func(so *sfn.Options) { so.BaseEndpoint = aws.String(m.endpoint) })
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{nil, `"max_concurrency":25`},
		{[]string{"--workers", "3"}, `"max_concurrency":3`},
	} {
		// A machine each: the CLI names executions by the second.
		machine, err := states.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name:       aws.String(fmt.Sprintf("backfill-%d", time.Now().UnixNano())),
			Definition: aws.String(`{"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}`),
			RoleArn:    aws.String("arn:aws:iam::123456789012:role/geomigrate-test"),
		})
		if err != nil {
			t.Fatalf("CreateStateMachine: %v", err)
		}
		args := append(append([]string{"backfill", "--prefix", "incoming/", "--state-machine-arn", *machine.StateMachineArn}, awsFlags...), tc.extra...)
		out, _, err := run(t, args...)
		if err != nil || !strings.Contains(out, tc.want) || !strings.Contains(out, `"tolerated_failure_percentage":100`) {
			t.Errorf("backfill %v: %v\n%s", tc.extra, err, out)
		}
	}
}
