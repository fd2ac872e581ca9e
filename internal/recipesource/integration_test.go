//go:build integration

package recipesource

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
)

// TestLoadFromSSMOnMoto reads a SecureString recipe through the real SDK
// client from moto_server (GEOMIGRATE_MOTO_ENDPOINT, started by
// scripts/integration-up.sh), by name and pinned to a version.
func TestLoadFromSSMOnMoto(t *testing.T) {
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if ep == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT not set; run make -f test/integration.mk test-integration")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	o := awsconfig.Options{Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"}
	cfg, err := awsconfig.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSSM(cfg, ep)
	name := fmt.Sprintf("/geomigrate-test/recipe-%d", time.Now().UnixNano())
	for _, v := range []string{"version: 1\n", goodRecipe} {
		if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(v),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("PutParameter: %v", err)
		}
	}
	t.Cleanup(func() {
		_, _ = c.DeleteParameter(context.Background(), &ssm.DeleteParameterInput{Name: aws.String(name)})
	})
	l := &Loader{SSM: c}
	latest, err := l.Load(ctx, "ssm:"+name)
	if err != nil || len(latest.Rules) != 1 {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	first, err := l.Load(ctx, "ssm:"+name+":1")
	if err != nil || len(first.Rules) != 0 {
		t.Fatalf("version 1: %+v %v", first, err)
	}
	if _, err := l.Load(ctx, "ssm:"+name+"-missing"); err == nil {
		t.Fatal("loaded a missing parameter")
	}
}
