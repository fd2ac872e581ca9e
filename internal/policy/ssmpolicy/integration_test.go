//go:build integration

package ssmpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

const toDLQ = `{"version": 1, "classification": {"datasets": {"parcels": [
	{"error": "DataError", "code": "MissingCRS", "tier": "data_specific", "route": "dlq"}]}}}`

// motoSSM is an SSM client of moto_server (GEOMIGRATE_MOTO_ENDPOINT,
// started by scripts/integration-up.sh) and a fresh parameter name.
func motoSSM(t *testing.T) (*ssm.Client, string, string) {
	t.Helper()
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if ep == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT not set; run make -f test/integration.mk test-integration")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Options{Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"})
	if err != nil {
		t.Fatal(err)
	}
	c := ssmpolicy.NewClient(cfg, ep)
	name := fmt.Sprintf("/geomigrate-test/policy-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = c.DeleteParameter(context.Background(), &ssm.DeleteParameterInput{Name: aws.String(name)})
	})
	return c, name, ep
}

// TestDocumentChangeRoutesTheNextExecutionOnMoto: Classify over the
// parameter routes a MissingCRS DataError of dataset parcels to
// remediation; the document is changed in SSM (no restart, the same
// handler) and, once the TTL passed, the next execution's error goes to
// the dead-letter queue. A document written around the validation (a plain
// PutParameter) is refused and changes nothing; Put refuses it before
// storing.
func TestDocumentChangeRoutesTheNextExecutionOnMoto(t *testing.T) {
	ctx := context.Background()
	c, name, _ := motoSSM(t)
	param := ssmpolicy.Parameter{Client: c, Name: name}
	if _, err := param.Put(ctx, policy.Default().JSON()); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	src := policy.NewSource(param, 30*time.Second, slog.New(slog.DiscardHandler), policy.WithClock(func() time.Time { return now }))
	if _, err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	tracker := statestore.NewTracker(statestoretest.NewMemory())
	classify := migration.NewClassify(tracker, nil, slog.New(slog.DiscardHandler)).WithRuleBook(src)
	execution := 0
	route := func() string {
		t.Helper()
		execution++
		out, err := classify.Handle(ctx, migration.ClassifyInput{
			Source:  migration.Source{Bucket: "archive", Key: fmt.Sprintf("parcels/%d.shp", execution), KeyEncoding: "plain", DatasetID: "parcels"},
			Error:   migration.CaughtError{Error: "DataError", Cause: "MissingCRS: the source has no CRS"},
			Context: migration.Invocation{Execution: fmt.Sprintf("arn:aws:states:us-east-1:1:execution:m:%d", execution), State: "Convert"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Route
	}
	if got := route(); got != migration.RouteRemediation {
		t.Fatalf("default document: %s", got)
	}
	v, err := param.Put(ctx, []byte(toDLQ))
	if err != nil || v != 2 {
		t.Fatalf("Put: version %d, %v", v, err)
	}
	if got := route(); got != migration.RouteRemediation {
		t.Errorf("within the TTL: %s (the cached document serves)", got)
	}
	now = now.Add(31 * time.Second)
	if got := route(); got != migration.RouteDeadLetter {
		t.Fatalf("changed document: %s", got)
	}

	// Put validates first: the parameter keeps version 2.
	bad := strings.Replace(toDLQ, `"dlq"}`, `"quarantine"}`, 1)
	var inv *policy.InvalidError
	if _, err := param.Put(ctx, []byte(bad)); !errors.As(err, &inv) {
		t.Fatalf("Put of a bad document: %v", err)
	}
	// A bad document stored around Put is refused by the readers.
	if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(bad),
		Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(31 * time.Second)
	if got := route(); got != migration.RouteDeadLetter {
		t.Errorf("after a bad document: %s, want the last good one's dlq", got)
	}
	if err := src.Refused(); err == nil || !strings.Contains(err.Error(), name+":3") ||
		!strings.Contains(err.Error(), "/classification/datasets/parcels/0/route") {
		t.Errorf("Refused: %v", err)
	}
}

// TestLambdaWiringReadsTheParameterOnMoto: awsapp.New, as each function
// calls it at cold start, builds the Source of GEOMIGRATE_POLICY_PARAMETER
// and its handlers' Classify uses it.
func TestLambdaWiringReadsTheParameterOnMoto(t *testing.T) {
	ctx := context.Background()
	c, name, ep := motoSSM(t)
	if _, err := (ssmpolicy.Parameter{Client: c, Name: name}).Put(ctx, []byte(toDLQ)); err != nil {
		t.Fatal(err)
	}
	settings := config.DefaultLambda()
	settings.StateTable, settings.DestBucket, settings.ConditionalCopy = "jobs", "dest", "client"
	settings.PolicyParameter = name
	t.Setenv("AWS_ENDPOINT_URL_SSM", ep) // as a deployment could; the SDK reads it
	app, err := awsapp.New(ctx, settings.Migration(), settings.AWS, awsapp.WithLogger(slog.New(slog.DiscardHandler)),
		awsapp.WithAWSOptions(func(o *awsconfig.Options) {
			o.Region, o.AccessKeyID, o.SecretAccessKey = "us-east-1", "geomigrate-test", "geomigrate-test-secret"
		}))
	if err != nil {
		t.Fatal(err)
	}
	if app.Policy == nil || app.Ports().Policy != app.Policy {
		t.Fatal("no policy source wired")
	}
	r := migration.Match(append(app.Policy.RulesFor(ctx, "parcels"), migration.DefaultRules...), "DataError", "MissingCRS")
	if r.Route != migration.RouteDeadLetter || app.Policy.Refused() != nil {
		t.Errorf("rule %+v, refused %v", r, app.Policy.Refused())
	}
}
