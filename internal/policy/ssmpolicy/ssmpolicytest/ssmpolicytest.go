// Package ssmpolicytest stands in for Step Functions' SSM SDK integration
// when a test runs the backfill state machine in the local executor against
// a real (moto) Parameter Store. Only tests import it: the adapter
// ssmpolicy stays free of the executor.
package ssmpolicytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/policy/ssmpolicy"
)

// GetParameterTask answers a state machine's
// arn:aws:states:::aws-sdk:ssm:getParameter task (the backfill's
// ReadPolicy) with a real GetParameter call, as the SDK integration does:
// the response members under their API names, an API error as
// Ssm.<Code> with the Exception suffix
// (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).
func GetParameterTask(c ssmpolicy.Client) asl.ResourceFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p struct{ Name string }
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("ssmpolicytest.GetParameterTask: %w", err)
		}
		out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p.Name)})
		var api smithy.APIError
		switch {
		case errors.As(err, &api):
			return nil, asl.TaskError{Name: "Ssm." + strings.TrimSuffix(api.ErrorCode(), "Exception") + "Exception", Cause: api.ErrorMessage()}
		case err != nil:
			return nil, asl.TaskError{Name: "Ssm.SdkClientException", Cause: err.Error()}
		}
		return json.Marshal(map[string]any{"Parameter": out.Parameter})
	}
}
