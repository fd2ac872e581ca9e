// Command classify is the Classify Lambda function (provided.al2023): caught {Error, Cause} → tier, route, queue message.
// Config and clients are built once, at cold start; see internal/awsapp.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/geomigrate/geomigrate/internal/awsapp"
)

func main() {
	if err := realMain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "classify:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	app, err := awsapp.Load(ctx, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(app.Classify().Handle)
	return nil
}
