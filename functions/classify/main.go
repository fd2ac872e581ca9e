// Command classify is the Classify Lambda function (provided.al2023): caught {Error, Cause} → tier, route, queue message.
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
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "classify:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	cfg, err := config.LoadLambda()
	if err != nil {
		return err
	}
	app, err := awsapp.New(ctx, cfg.Migration(), cfg.AWS, awsapp.WithLogger(awsapp.NewLambdaLogger(cfg.LogLevel)),
		awsapp.WithQuarantineCopyLimit(cfg.QuarantineCopyLimit), awsapp.WithQuarantineCopyInput(cfg.QuarantineCopyInput))
	if err != nil {
		return err
	}
	lambda.Start(app.Ports().Classify().Handle)
	return nil
}
