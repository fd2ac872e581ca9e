// Package awsconfig builds the AWS SDK clients the adapters use, in one
// place: region, credentials, endpoint URLs (per service, for S3-compatible
// stores and local stand-ins), path-style addressing and the retry policy.
//
// # Endpoints
//
// Endpoints come from the SDK's own configuration: AWS_ENDPOINT_URL (every
// service), AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_SFN) and
// endpoint_url in the shared config profile, as the AWS SDKs and Tools
// Reference Guide describes under "Service-specific endpoints"
// (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html):
// a service-specific endpoint overrides the global one, and an endpoint set
// on the client itself is used regardless of both. An endpoint in Options
// (the CLI's --endpoint-url) is set on the client after the SDK resolved the
// configured ones, so a flag wins over the environment.
//
// # Retries
//
// The state machine owns backoff: its Retry block (4 s, x2, capped at 60 s,
// full jitter, 4 retries) is what spreads retries over minutes. The SDK's own
// retryer is kept deliberately small, DefaultMaxAttempts (2: one immediate
// jittered retry for a dropped connection or a single 5xx), so that the
// number of HTTP attempts per task attempt is known and countable
// (at most DefaultMaxAttempts × the state machine's attempts), and so that a
// throttled Lambda gives its time budget back to the state machine instead
// of sleeping inside the SDK. The client-side retry token bucket is disabled
// (ratelimit.None): under sustained throttling it would turn throttles into
// "retry quota exceeded" errors that hide the real cause.
package awsconfig

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

const (
	// DefaultMaxAttempts is the SDK attempts per API call, the first included.
	DefaultMaxAttempts = 2
	// DefaultMaxBackoff caps the SDK's own delay between those attempts.
	DefaultMaxBackoff = 2 * time.Second
	// DefaultRegion is used when nothing else names one and an endpoint URL
	// is set (local stand-ins accept any region).
	DefaultRegion = "us-east-1"
)

// Options configures client construction. The zero value means: the SDK's
// default credential chain and region, AWS endpoints, virtual-hosted S3,
// DefaultMaxAttempts.
type Options struct {
	Region string
	// EndpointURL overrides the endpoint of every service (an S3-compatible
	// store, a local stand-in), over the SDK's AWS_ENDPOINT_URL* variables.
	// The per-service fields win over it.
	EndpointURL         string
	S3EndpointURL       string
	DynamoDBEndpointURL string
	SQSEndpointURL      string
	SFNEndpointURL      string
	// PathStyle addresses S3 buckets as https://host/bucket/key (needed by
	// most S3-compatible stores, versitygw included). It is on whenever S3
	// has a custom endpoint (from Options or the environment) unless
	// VirtualHostedStyle turns it off.
	PathStyle          bool
	VirtualHostedStyle bool
	// MaxAttempts per API call including the first (0: DefaultMaxAttempts;
	// 1 disables SDK retries).
	MaxAttempts int
	// MaxBackoff caps the SDK's delay between attempts (0: DefaultMaxBackoff).
	MaxBackoff time.Duration
	// Static credentials (tests, S3-compatible stores). Empty: the SDK's
	// default chain (environment, shared config, the Lambda role).
	AccessKeyID, SecretAccessKey, SessionToken string
	// ChecksumWhenRequired sends request checksums only where the API
	// requires them (the SDK's pre-2025 behaviour), for S3-compatible
	// stores that reject the newer default CRC32 trailers.
	ChecksumWhenRequired bool
	// HTTPClient replaces the SDK's HTTP client (tests).
	HTTPClient aws.HTTPClient
}

func (o Options) maxAttempts() int {
	if o.MaxAttempts > 0 {
		return o.MaxAttempts
	}
	return DefaultMaxAttempts
}

// NewRetryer returns the SDK retryer described in the package comment.
func (o Options) NewRetryer() aws.Retryer {
	backoff := o.MaxBackoff
	if backoff <= 0 {
		backoff = DefaultMaxBackoff
	}
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = o.maxAttempts()
		so.MaxBackoff = backoff
		so.RateLimiter = ratelimit.None
	})
}

func (o Options) anyEndpoint() bool {
	return o.EndpointURL != "" || o.S3EndpointURL != "" || o.DynamoDBEndpointURL != "" ||
		o.SQSEndpointURL != "" || o.SFNEndpointURL != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
}

// Load builds the shared aws.Config.
func Load(ctx context.Context, o Options) (aws.Config, error) {
	lo := []func(*config.LoadOptions) error{
		config.WithRetryer(o.NewRetryer),
	}
	if o.Region != "" {
		lo = append(lo, config.WithRegion(o.Region))
	} else if o.anyEndpoint() {
		lo = append(lo, config.WithDefaultRegion(DefaultRegion))
	}
	if o.AccessKeyID != "" {
		lo = append(lo, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)))
	}
	if o.HTTPClient != nil {
		lo = append(lo, config.WithHTTPClient(o.HTTPClient))
	}
	if o.ChecksumWhenRequired {
		lo = append(lo,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		if pe := profileError(err); pe != err {
			return aws.Config{}, pe
		}
		return aws.Config{}, fmt.Errorf("awsconfig: load: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if o.AccessKeyID == "" {
		cfg = withCredentialsHint(cfg)
	}
	return cfg, nil
}

func pick(specific, all string) *string {
	switch {
	case specific != "":
		return aws.String(strings.TrimRight(specific, "/"))
	case all != "":
		return aws.String(strings.TrimRight(all, "/"))
	}
	return nil
}

// NewS3 returns an S3 client for cfg and o.
func NewS3(cfg aws.Config, o Options) *s3.Client {
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		if ep := pick(o.S3EndpointURL, o.EndpointURL); ep != nil {
			so.BaseEndpoint = ep
		}
		// so.BaseEndpoint also holds what the SDK resolved from
		// AWS_ENDPOINT_URL(_S3) before this function runs.
		so.UsePathStyle = o.PathStyle || (so.BaseEndpoint != nil && !o.VirtualHostedStyle)
		// Ranged GETs and stores without checksums make the SDK log a
		// "no supported checksum" line per response; nothing to act on.
		so.DisableLogOutputChecksumValidationSkipped = true
	})
}

// NewDynamoDB returns a DynamoDB client for cfg and o.
func NewDynamoDB(cfg aws.Config, o Options) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if ep := pick(o.DynamoDBEndpointURL, o.EndpointURL); ep != nil {
			do.BaseEndpoint = ep
		}
	})
}

// NewSQS returns an SQS client for cfg and o.
func NewSQS(cfg aws.Config, o Options) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(qo *sqs.Options) {
		if ep := pick(o.SQSEndpointURL, o.EndpointURL); ep != nil {
			qo.BaseEndpoint = ep
		}
	})
}

// NewSFN returns a Step Functions client for cfg and o.
func NewSFN(cfg aws.Config, o Options) *sfn.Client {
	return sfn.NewFromConfig(cfg, func(fo *sfn.Options) {
		if ep := pick(o.SFNEndpointURL, o.EndpointURL); ep != nil {
			fo.BaseEndpoint = ep
		}
	})
}

// S3Endpoint returns the custom endpoint c sends to ("" for AWS's own),
// whether it came from Options or from the environment.
func S3Endpoint(c *s3.Client) string { return aws.ToString(c.Options().BaseEndpoint) }

// DynamoDBEndpoint is S3Endpoint for a DynamoDB client.
func DynamoDBEndpoint(c *dynamodb.Client) string { return aws.ToString(c.Options().BaseEndpoint) }

// SQSEndpoint is S3Endpoint for an SQS client.
func SQSEndpoint(c *sqs.Client) string { return aws.ToString(c.Options().BaseEndpoint) }
