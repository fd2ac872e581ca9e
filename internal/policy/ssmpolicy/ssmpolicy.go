// Package ssmpolicy keeps the run-time policy document (internal/policy) in
// an SSM Parameter Store parameter: the adapter that fetches it for a
// policy.Source, and stores a new one only once it validates. The document
// format and its validation are internal/policy's, which knows nothing of
// AWS.
package ssmpolicy

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/geomigrate/geomigrate/internal/policy"
)

// Client is the SSM calls made: GetParameter
// (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html)
// and PutParameter
// (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html).
type Client interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, opts ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
}

// Parameter is a policy.Fetcher of the document in the parameter Name; its
// revision is the parameter's version, which every PutParameter increments.
type Parameter struct {
	Client Client
	Name   string
}

// Fetch implements policy.Fetcher.
func (p Parameter) Fetch(ctx context.Context) ([]byte, string, error) {
	out, err := p.Client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p.Name)})
	if err != nil {
		return nil, "", fmt.Errorf("ssmpolicy.Fetch: %s: %w", p.Name, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return nil, "", fmt.Errorf("ssmpolicy.Fetch: %s: the parameter has no value", p.Name)
	}
	return []byte(*out.Parameter.Value), p.Name + ":" + strconv.FormatInt(out.Parameter.Version, 10), nil
}

// Put validates doc and, only when it is valid, stores it as the new
// version of the parameter, returning that version. A refused document is
// a *policy.InvalidError and the parameter is left as it was. The white
// space around the document is not stored: the backfill state machine
// parses the value only when it starts with { and ends with } (its
// CheckPolicyDocument state).
func (p Parameter) Put(ctx context.Context, doc []byte) (int64, error) {
	doc = bytes.TrimSpace(doc)
	if _, err := policy.Parse(doc); err != nil {
		return 0, fmt.Errorf("ssmpolicy.Put: %s: %w", p.Name, err)
	}
	out, err := p.Client.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(p.Name), Value: aws.String(string(doc)), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("ssmpolicy.Put: %s: %w", p.Name, err)
	}
	return out.Version, nil
}

// NewClient is the SSM client of cfg (the SDK reads AWS_ENDPOINT_URL_SSM
// and AWS_ENDPOINT_URL itself; endpoint, when not "", wins).
func NewClient(cfg aws.Config, endpoint string) *ssm.Client {
	return ssm.NewFromConfig(cfg, func(o *ssm.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
