// Package cost estimates what running the migrate state machine over a set
// of files costs on AWS: Step Functions (Standard and Express), Lambda,
// S3 requests, DynamoDB and SQS. It is pure arithmetic over three tables —
// list prices (prices.json), conversion throughput measured on this machine
// (throughput.json) and requests per file counted from the handlers
// (PerFile) — and the states an execution enters, read from the ASL file
// (Walks). `geomigrate plan` and docs/scale.md both use Estimate.
package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
)

//go:embed prices.json
var pricesJSON []byte

// Prices are on-demand list prices in USD, in the units AWS quotes them.
type Prices struct {
	Region  string   `json:"region"`
	AsOf    string   `json:"as_of"`
	Sources []string `json:"sources"`
	Notes   string   `json:"notes"`

	StepFunctionsStandardPer1000Transitions float64 `json:"stepfunctions_standard_per_1000_transitions"`
	StepFunctionsExpressPerMillionRequests  float64 `json:"stepfunctions_express_per_million_requests"`
	StepFunctionsExpressPerGBSecond         float64 `json:"stepfunctions_express_per_gb_second"`
	// StepFunctionsExpressMemoryMB is the memory an Express execution is
	// billed for (64 MB chunks; a definition and payloads this small fit in
	// the first).
	StepFunctionsExpressMemoryMB    float64 `json:"stepfunctions_express_memory_mb"`
	StepFunctionsExpressIncrementMS float64 `json:"stepfunctions_express_increment_ms"`

	LambdaPerMillionRequests float64 `json:"lambda_per_million_requests"`
	LambdaArm64PerGBSecond   float64 `json:"lambda_arm64_per_gb_second"`
	LambdaX8664PerGBSecond   float64 `json:"lambda_x86_64_per_gb_second"`

	S3PutCopyPostListPer1000 float64 `json:"s3_put_copy_post_list_per_1000"`
	S3GetHeadPer1000         float64 `json:"s3_get_head_per_1000"`

	DynamoDBPerMillionWriteUnits float64 `json:"dynamodb_per_million_write_units"`
	DynamoDBPerMillionReadUnits  float64 `json:"dynamodb_per_million_read_units"`

	SQSPerMillionRequests float64 `json:"sqs_per_million_requests"`

	// S3StandardPerGBMonth prices the quarantined sources of routed files
	// (one month); CloudWatchLogsPerGB the ingestion of execution logs.
	S3StandardPerGBMonth float64 `json:"s3_standard_per_gb_month"`
	CloudWatchLogsPerGB  float64 `json:"cloudwatch_logs_ingest_per_gb"`
}

// DefaultPrices are the embedded us-east-1 prices (prices.json).
func DefaultPrices() Prices {
	p, err := decodePrices(bytes.NewReader(pricesJSON), Prices{})
	if err != nil {
		panic("cost: embedded prices.json: " + err.Error()) // a build defect, caught by the tests
	}
	return p
}

// OverridePrices reads a JSON object from r and lays the fields it has over
// base; an unknown field (a typo) is an error, so is a negative price.
func OverridePrices(r io.Reader, base Prices) (Prices, error) {
	p, err := decodePrices(r, base)
	if err != nil {
		return Prices{}, fmt.Errorf("cost.OverridePrices: %w", err)
	}
	return p, nil
}

func decodePrices(r io.Reader, base Prices) (Prices, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	p := base
	if err := dec.Decode(&p); err != nil {
		return Prices{}, err
	}
	for name, v := range map[string]float64{
		"stepfunctions_standard_per_1000_transitions": p.StepFunctionsStandardPer1000Transitions,
		"stepfunctions_express_per_million_requests":  p.StepFunctionsExpressPerMillionRequests,
		"stepfunctions_express_per_gb_second":         p.StepFunctionsExpressPerGBSecond,
		"stepfunctions_express_memory_mb":             p.StepFunctionsExpressMemoryMB,
		"stepfunctions_express_increment_ms":          p.StepFunctionsExpressIncrementMS,
		"lambda_per_million_requests":                 p.LambdaPerMillionRequests,
		"lambda_arm64_per_gb_second":                  p.LambdaArm64PerGBSecond,
		"lambda_x86_64_per_gb_second":                 p.LambdaX8664PerGBSecond,
		"s3_put_copy_post_list_per_1000":              p.S3PutCopyPostListPer1000,
		"s3_get_head_per_1000":                        p.S3GetHeadPer1000,
		"s3_standard_per_gb_month":                    p.S3StandardPerGBMonth,
		"cloudwatch_logs_ingest_per_gb":               p.CloudWatchLogsPerGB,
		"dynamodb_per_million_write_units":            p.DynamoDBPerMillionWriteUnits,
		"dynamodb_per_million_read_units":             p.DynamoDBPerMillionReadUnits,
		"sqs_per_million_requests":                    p.SQSPerMillionRequests,
	} {
		if v < 0 {
			return Prices{}, fmt.Errorf("%s is negative (%g)", name, v)
		}
	}
	return p, nil
}
