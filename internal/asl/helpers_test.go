package asl

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

var testStart = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// runDef parses def and runs it on a FakeClock; it returns the result and
// the clock.
func runDef(t *testing.T, def, input string, opts ...Option) (*Result, *FakeClock) {
	t.Helper()
	sm, err := Parse([]byte(def))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	clk := NewFakeClock(testStart)
	opts = append([]Option{WithClock(clk), WithStateMachineName("sm")}, opts...)
	res, err := NewExecutor(sm, opts...).Run(context.Background(), "exec1", json.RawMessage(input))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, clk
}

func mustJSONEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	g, err := decodeValue(got)
	if err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	w, err := decodeValue([]byte(want))
	if err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	if !equalValues(g, w) {
		t.Errorf("JSON mismatch\n got: %s\nwant: %s", got, want)
	}
}

func mustSucceed(t *testing.T, res *Result) {
	t.Helper()
	if res.Status != StatusSucceeded {
		t.Fatalf("status %s, error %s: %s", res.Status, res.Error, res.Cause)
	}
}

func eventsOf(res *Result, typ string) []Event {
	var out []Event
	for _, ev := range res.History {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// lambdaReturning returns a LambdaFunc that echoes a fixed payload.
func lambdaReturning(out string) LambdaFunc {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(out), nil }
}
