// Command convert is the Convert Lambda function (provided.al2023): preflight,
// GDAL conversion, validation, staging upload. It links GDAL through cgo
// (internal/gdal): built against the system GDAL for tests and inside the
// layer image (layers/gdal) for deployment.
// Config (internal/config, from the environment) and clients are built once, at cold
// start; the handler by internal/steps.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/validate"
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	cfg, err := config.LoadLambda()
	if err != nil {
		return err
	}
	app, err := awsapp.New(ctx, cfg.Migration(), cfg.AWS, awsapp.WithLogger(awsapp.NewLambdaLogger(cfg.LogLevel)))
	if err != nil {
		return err
	}
	engine, err := gdal.New(gdal.WithTmpDir(app.Config.WorkDir))
	if err != nil {
		return err
	}
	// The deployment's recipe is checked against this GDAL at cold start:
	// one it cannot apply stops the function here, not at every file. (A
	// recipe file's rules are resolved by hashcheck, which has no GDAL;
	// the engine refuses what they ask that it cannot do, per file.)
	if err := app.Config.Recipe.Check(engine.Capabilities()); err != nil {
		return fmt.Errorf("the deployment's recipe: %w", err)
	}
	lambda.Start(app.Ports().Convert(engine, validate.Output).Handle)
	return nil
}
