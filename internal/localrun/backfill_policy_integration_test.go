//go:build integration

package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy/ssmpolicytest"
	"github.com/geomigrate/geomigrate/statemachine"
)

// motoPutParameter stores value as the parameter name with moto's SSM
// API (JSON protocol, unsigned: moto does not check signatures), around
// the validation ssmpolicy.Parameter.Put does.
func motoPutParameter(ctx context.Context, endpoint, name, value string) error {
	body, _ := json.Marshal(map[string]any{"Name": name, "Value": value, "Type": "String", "Overwrite": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AmazonSSM.PutParameter")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=geomigrate-test/20260101/us-east-1/ssm/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PutParameter: %s: %s", resp.Status, msg)
	}
	return nil
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
			return motoPutParameter(ctx, ep, name, `{"version": 1, "backfill": {"max_concurrency": 20000, "tolerated_failure_percentage": -1}}`)
		}, 8, 100, 100, `"max_concurrency":20000`},
	} {
		t.Run(step.name, func(t *testing.T) {
			if err := step.change(); err != nil {
				t.Fatal(err)
			}
			probe := newProbe(step.peak, 8)
			bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: childMigrate(t, probe), PolicyParameter: name},
				asl.WithResource(statemachine.ResourceSSMGetParameter, ssmpolicytest.GetParameterTask(client)))
			if err != nil {
				t.Fatal(err)
			}
			res, outs, err := bf.Run(ctx, "moto-policy", json.RawMessage(`{"prefix":"in/"}`))
			t.Cleanup(func() { outs.Close() })
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCEEDED" {
				t.Fatalf("backfill %s (%s: %s)", res.Status, res.Error, res.Cause)
			}
			if probe.peak != step.peak {
				t.Errorf("%d child executions at once, want %d", probe.peak, step.peak)
			}
			checkBackfillOutput(t, res.Output, step.maxConc, step.tolerated, step.policyHas)
		})
	}
}
