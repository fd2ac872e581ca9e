// Package tracing carries a trace id through a context and onto every log
// record, so that one file's lines can be followed across its retries and
// into the dead-letter queue: on Lambda the X-Ray trace id of the
// invocation (aws-lambda-go puts the X-Ray header in the context and in
// _X_AMZN_TRACE_ID), locally an id generated per execution in the same
// format.
package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Attr is the log attribute that holds the trace id.
const Attr = "trace_id"

// lambdaContextKey is the context key aws-lambda-go stores the invocation's
// X-Ray header under (lambda/invoke_loop.go: a plain string key).
const lambdaContextKey = "x-amzn-trace-id"

// EnvLambda is the variable Lambda sets to the invocation's X-Ray header
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
const EnvLambda = "_X_AMZN_TRACE_ID"

type idKey struct{}

// WithID returns ctx carrying id as its trace id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// ID is ctx's trace id: one set by WithID, else the Root of the X-Ray
// header of a Lambda invocation (its context, then _X_AMZN_TRACE_ID), else
// "".
func ID(ctx context.Context) string {
	if id, ok := ctx.Value(idKey{}).(string); ok && id != "" {
		return id
	}
	if h, ok := ctx.Value(lambdaContextKey).(string); ok && h != "" {
		return Root(h)
	}
	return Root(os.Getenv(EnvLambda))
}

// Root is the trace id of an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
// → "1-5759e988-bd862e3fe1be46a994272793"); a header without a Root is
// returned as it is.
func Root(header string) string {
	for _, part := range strings.Split(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return header
}

// NewID returns a trace id in X-Ray's format: version 1, the start time in
// seconds as 8 hex digits, 96 random bits as 24 hex digits
// (https://docs.aws.amazon.com/xray/latest/devguide/xray-api-sendingdata.html#xray-api-traceids).
func NewID(now time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return fmt.Sprintf("1-%08x-%s", uint32(now.Unix()), hex.EncodeToString(b[:]))
}

// Handler adds the context's trace id to every record h handles (once:
// a record that carries one already is left alone).
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := ID(ctx); id != "" && !has(r, Attr) {
		r.AddAttrs(slog.String(Attr, id))
	}
	return h.Handler.Handle(ctx, r)
}

func has(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{h.Handler.WithAttrs(as)} }

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }
