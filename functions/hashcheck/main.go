// Command hashcheck is the HashCheck Lambda function (provided.al2023): fingerprint the source, compare, claim.
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
	"github.com/geomigrate/geomigrate/internal/recipesource"
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "hashcheck:", err)
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
	ports := app.Ports()
	if cfg.Recipe != "" {
		// Read once here: the job carries each file's resolved recipe on.
		loader := &recipesource.Loader{Store: app.Store, SSM: recipesource.NewSSM(app.AWS, "")}
		if ports.Config.Recipes, err = loader.Book(ctx, cfg.Recipe); err != nil {
			return err
		}
	}
	lambda.Start(ports.HashCheck().Handle)
	return nil
}
