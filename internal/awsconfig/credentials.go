package awsconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// CredentialsError is a workstation without usable AWS credentials, said
// in one line with what to do. Without it the first request fails with the
// SDK's text of every provider it tried ("get identity: get credentials:
// failed to refresh cached credentials, no EC2 IMDS role found, …"),
// which names no next step.
type CredentialsError struct {
	Msg string
	Err error
}

func (e *CredentialsError) Error() string { return e.Msg }
func (e *CredentialsError) Unwrap() error { return e.Err }

// nextStep is what a user without credentials can do, for AWS and for an
// S3-compatible store alike.
const nextStep = `set AWS_PROFILE to a configured profile, run "aws configure" (or "aws sso login"), ` +
	`or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; for an S3-compatible store, ` +
	`pass --endpoint-url with that store's keys`

// profileError turns the SDK's refusal of an unknown profile into a
// CredentialsError; other errors are returned as they are.
func profileError(err error) error {
	var pe config.SharedConfigProfileNotExistError
	if !errors.As(err, &pe) {
		return err
	}
	return &CredentialsError{Err: err, Msg: fmt.Sprintf(
		`awsconfig.Load: AWS profile %q (AWS_PROFILE) is in neither the shared config nor the credentials file: `+
			`run "aws configure --profile %s", or set AWS_PROFILE to a profile "aws configure list-profiles" lists`,
		pe.Profile, pe.Profile)}
}

// hintingProvider retrieves through the SDK's chain and replaces a failed
// retrieval by a CredentialsError: every provider of the chain having
// failed, there are no credentials to use.
type hintingProvider struct{ inner aws.CredentialsProvider }

func (h hintingProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := h.inner.Retrieve(ctx)
	if err == nil || ctx.Err() != nil {
		return c, err
	}
	return c, &CredentialsError{Err: err, Msg: "awsconfig.Credentials: no AWS credentials found " +
		"(environment, shared config and credentials files, SSO, container or instance role): " + nextStep}
}

// withCredentialsHint wraps cfg's credential chain so that its failure
// reads as a CredentialsError.
func withCredentialsHint(cfg aws.Config) aws.Config {
	if cfg.Credentials != nil {
		cfg.Credentials = aws.NewCredentialsCache(hintingProvider{inner: cfg.Credentials})
	}
	return cfg
}
