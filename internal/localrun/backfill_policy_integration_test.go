//go:build integration

package localrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
	"github.com/geomigrate/geomigrate/statemachine"
)

// ssmGetParameterOn answers the ReadPolicy task with a real GetParameter
// call, as the SDK integration does: the response members under their
// API names, an API error as Ssm.<Code> with the Exception suffix
// (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).
func ssmGetParameterOn(client *ssm.Client) asl.ResourceFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p struct{ Name string }
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p.Name)})
		var api smithy.APIError
		switch {
		case errors.As(err, &api):
			return nil, asl.TaskError{Name: "Ssm." + strings.TrimSuffix(api.ErrorCode(), "Exception") + "Exception", Cause: api.ErrorMessage()}
		case err != nil:
			return nil, asl.TaskError{Name: "Ssm.SdkClientException", Cause: err.Error()}
		}
		return json.Marshal(map[string]any{"Parameter": out.Parameter})
	}
}

// TestBackfillReadsThePolicyParameterOnMoto runs backfill.asl.json with its
// ReadPolicy task answered by moto's SSM (GEOMIGRATE_MOTO_ENDPOINT): no
// parameter leaves the defaults; a document stored with `policy put`'s
// Put sets the Map's concurrency and tolerated percentage; a new version
// changes the next execution with nothing redeployed; a document written
// around the validation, out of the schema's bounds, leaves the defaults.
func TestBackfillReadsThePolicyParameterOnMoto(t *testing.T) {
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if ep == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT not set; run make -f test/integration.mk test-integration")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"})
	if err != nil {
		t.Fatal(err)
	}
	client := ssmpolicy.NewClient(cfg, ep)
	name := fmt.Sprintf("/geomigrate-test/backfill-policy-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = client.DeleteParameter(context.Background(), &ssm.DeleteParameterInput{Name: aws.String(name)})
	})
	param := ssmpolicy.Parameter{Client: client, Name: name}
	store := eightItems(t)

	for _, step := range []struct {
		name      string
		change    func() error
		peak      int
		maxConc   float64
		tolerated float64
		policyHas string
	}{
		{"no parameter", func() error { return nil }, 8, 100, 100, `"Error":"Ssm.ParameterNotFoundException"`},
		{"document put", func() error {
			_, err := param.Put(ctx, []byte(`{"version": 1, "backfill": {"max_concurrency": 3, "tolerated_failure_percentage": 50}}`))
			return err
		}, 3, 3, 50, `"max_concurrency":3`},
		{"new version, next execution", func() error {
			_, err := param.Put(ctx, []byte(`{"version": 1, "backfill": {"max_concurrency": 2}}`))
			return err
		}, 2, 2, 100, `"version":2`},
		{"written around the validation", func() error {
			_, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Overwrite: aws.Bool(true),
				Value: aws.String(`{"version": 1, "backfill": {"max_concurrency": 20000, "tolerated_failure_percentage": -1}}`)})
			return err
		}, 8, 100, 100, `"max_concurrency":20000`},
	} {
		t.Run(step.name, func(t *testing.T) {
			if err := step.change(); err != nil {
				t.Fatal(err)
			}
			probe := newProbe(step.peak, 8)
			bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: childMigrate(t, probe), PolicyParameter: name},
				asl.WithResource(statemachine.ResourceSSMGetParameter, ssmGetParameterOn(client)))
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := bf.Run(ctx, "moto-policy", json.RawMessage(`{"prefix":"in/"}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCEEDED" {
				t.Fatalf("backfill %s (%s: %s)", res.Status, res.Error, res.Cause)
			}
			if probe.peak != step.peak {
				t.Errorf("%d child executions at once, want %d", probe.peak, step.peak)
			}
			var out struct {
				MaxConcurrency float64         `json:"max_concurrency"`
				Tolerated      float64         `json:"tolerated_failure_percentage"`
				Policy         json.RawMessage `json:"policy"`
			}
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatal(err)
			}
			if out.MaxConcurrency != step.maxConc || out.Tolerated != step.tolerated {
				t.Errorf("ran with max_concurrency %v, tolerated_failure_percentage %v; want %v, %v", out.MaxConcurrency, out.Tolerated, step.maxConc, step.tolerated)
			}
			if !strings.Contains(string(out.Policy), step.policyHas) {
				t.Errorf("output's policy %s, want it to hold %s", out.Policy, step.policyHas)
			}
		})
	}
}
