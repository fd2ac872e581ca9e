package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/tracing"
)

func TestID(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	//lint:ignore SA1029 the plain string key is aws-lambda-go's, which ID must read
	lambdaCtx := context.WithValue(context.Background(), "x-amzn-trace-id", header)
	tests := []struct {
		name string
		ctx  context.Context
		env  string
		want string
	}{
		{"none", context.Background(), "", ""},
		{"set locally", tracing.WithID(context.Background(), "1-00000001-abc"), "", "1-00000001-abc"},
		{"lambda context", lambdaCtx, "", "1-5759e988-bd862e3fe1be46a994272793"},
		{"lambda environment", context.Background(), "Root=1-11111111-222222222222222222222222;Sampled=0", "1-11111111-222222222222222222222222"},
		{"set locally wins", tracing.WithID(lambdaCtx, "mine"), header, "mine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tracing.EnvLambda, tt.env)
			if got := tracing.ID(tt.ctx); got != tt.want {
				t.Errorf("ID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewIDIsXRayFormat(t *testing.T) {
	now := time.Unix(0x5759e988, 0)
	a, b := tracing.NewID(now), tracing.NewID(now)
	re := regexp.MustCompile(`^1-5759e988-[0-9a-f]{24}$`)
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Errorf("ids %q %q", a, b)
	}
}

func TestHandlerAddsTheTraceIDOnce(t *testing.T) {
	t.Setenv(tracing.EnvLambda, "")
	var buf bytes.Buffer
	log := slog.New(tracing.Handler(tracing.Handler(slog.NewJSONHandler(&buf, nil)))).With("execution", "x")
	ctx := tracing.WithID(context.Background(), "1-00000001-aaaaaaaaaaaaaaaaaaaaaaaa")
	log.InfoContext(ctx, "one")
	log.WithGroup("g").InfoContext(context.Background(), "untraced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	if strings.Count(lines[0], tracing.Attr) != 1 {
		t.Errorf("trace id not exactly once: %s", lines[0])
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec[tracing.Attr] != "1-00000001-aaaaaaaaaaaaaaaaaaaaaaaa" || rec["execution"] != "x" {
		t.Errorf("record %v %v", rec, err)
	}
	if strings.Contains(lines[1], tracing.Attr) {
		t.Errorf("a record without a trace got one: %s", lines[1])
	}
}
