package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/policy"
)

// ssmGetParameter stands in for arn:aws:states:::aws-sdk:ssm:getParameter
// with doc (the --policy file) as the parameter name: {Name} in, the
// GetParameter answer out, {Parameter: {Name, Type, Value, Version, ...}}
// (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html).
// Errors are named as the SDK integration names SSM's,
// ServiceName.ErrorName with the Exception suffix
// (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html):
// no document, or another name than the one substituted, is
// Ssm.ParameterNotFoundException; a file that cannot be read is
// Ssm.SsmException. A file has no version: it is reported as version 1.
// The content is passed as it is, unvalidated, as SSM would: the state
// machine must cope with whatever the parameter holds.
func ssmGetParameter(name string, doc policy.Fetcher) asl.ResourceFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p struct{ Name string }
		if err := json.Unmarshal(raw, &p); err != nil || p.Name == "" {
			return nil, asl.TaskError{Name: "Ssm.SsmException", Cause: fmt.Sprintf("Name is required: %s", raw)}
		}
		notFound := asl.TaskError{Name: "Ssm.ParameterNotFoundException", Cause: "parameter " + p.Name + " not found"}
		if doc == nil || p.Name != name {
			return nil, notFound
		}
		data, _, err := doc.Fetch(ctx)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, notFound
		case err != nil:
			return nil, asl.TaskError{Name: "Ssm.SsmException", Cause: err.Error()}
		}
		return json.Marshal(map[string]any{"Parameter": map[string]any{
			"Name": p.Name, "Type": "String", "DataType": "text", "Value": string(data), "Version": 1,
			"ARN":              "arn:aws:ssm:local:000000000000:parameter" + p.Name,
			"LastModifiedDate": time.Now().UTC().Format(time.RFC3339),
		}})
	}
}
