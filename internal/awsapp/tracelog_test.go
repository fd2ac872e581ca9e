package awsapp_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/tracing"
)

// TestLambdaLoggerCarriesTheTraceID: every line a handler logs during an
// invocation names the X-Ray trace that aws-lambda-go put in the context,
// in both of the logger's shapes (Lambda's JSON log format or not).
func TestLambdaLoggerCarriesTheTraceID(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	//lint:ignore SA1029 the plain string key is aws-lambda-go's (lambda/invoke_loop.go)
	ctx := context.WithValue(context.Background(), "x-amzn-trace-id", header)
	for _, format := range []string{"", "JSON"} {
		t.Run("format="+format, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_LOG_FORMAT", format)
			t.Setenv(tracing.EnvLambda, "")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout := os.Stdout
			os.Stdout = w
			log := awsapp.NewLambdaLogger("info")
			os.Stdout = stdout
			log.With("execution", "arn:x", "attempt", 2, "retry", true).InfoContext(ctx, "convert")
			w.Close()
			b, _ := io.ReadAll(r)
			// lambdacontext picks JSON or text by more than this variable;
			// either way the trace id is an attribute of the line.
			out := string(b)
			if !strings.Contains(out, `trace_id`) || !strings.Contains(out, "1-5759e988-bd862e3fe1be46a994272793") || strings.Count(out, "1-5759e988") != 1 {
				t.Errorf("line without the trace id: %s", out)
			}
		})
	}
}
