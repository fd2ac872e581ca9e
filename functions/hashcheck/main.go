// Command hashcheck is the HashCheck Lambda function (provided.al2023): fingerprint the source, compare, claim.
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
		fmt.Fprintln(os.Stderr, "hashcheck:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	app, err := awsapp.Load(ctx, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(app.HashCheck().Handle)
	return nil
}
