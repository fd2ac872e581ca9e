// Command infra is the geomigrate CDK app. Run it through the CDK CLI from the repository root
// (`make synth`, `make deploy`); cdk.json points here. Configuration comes from CDK context,
// documented in docs/deploy.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// NewApp builds the app and its stack; context overrides CLI/cdk.json context (used by tests).
func NewApp(context map[string]interface{}) (awscdk.App, *Stack, *Assets, error) {
	// Feature flags the stack relies on live here, not in cdk.json, so the tests get them too.
	ctx := map[string]interface{}{
		"@aws-cdk/aws-lambda:recognizeLayerVersion":                  true,
		"@aws-cdk/core:checkSecretUsage":                             true,
		"@aws-cdk/core:validateSnapshotRemovalPolicy":                true,
		"@aws-cdk/aws-s3:createDefaultLoggingPolicy":                 true,
		"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy":            true,
		"@aws-cdk/aws-events:eventsTargetQueueSameAccount":           true,
		"@aws-cdk/aws-stepfunctions:useDistributedMapResultWriterV2": true,
	}
	for k, v := range context {
		ctx[k] = v
	}
	props := &awscdk.AppProps{Context: &ctx}
	app := awscdk.NewApp(props)
	cfg, err := LoadConfig(app)
	if err != nil {
		return nil, nil, nil, err
	}
	assets, err := ResolveAssets(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	// No env: the stack is environment-agnostic, so synth needs no credentials or lookups.
	st, err := NewGeomigrateStack(app, cfg, assets, &awscdk.StackProps{
		Description: jsii.String("geomigrate: serverless migration of geospatial files to cloud-native formats"),
	})
	if err != nil {
		assets.Cleanup()
		return nil, nil, nil, err
	}
	// cdk-nag AwsSolutions: any unsuppressed error fails synth.
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return app, st, assets, nil
}

func main() {
	defer jsii.Close()
	app, _, assets, err := NewApp(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "geomigrate infra:", err)
		jsii.Close()
		os.Exit(1)
	}
	app.Synth(nil)
	assets.Cleanup()
}
