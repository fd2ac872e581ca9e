package asl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// sized is a JSON object {"s":"…"} of exactly n bytes, its string made of
// rune r (a multi-byte rune makes the byte count differ from the
// character count, and the quota is in bytes).
func sized(t *testing.T, n int, r rune) string {
	t.Helper()
	const frame = len(`{"s":""}`)
	w := len(string(r))
	if (n-frame)%w != 0 {
		t.Fatalf("%d bytes cannot be made of %q", n, r)
	}
	doc := `{"s":"` + strings.Repeat(string(r), (n-frame)/w) + `"}`
	if len(doc) != n {
		t.Fatalf("built %d bytes, want %d", len(doc), n)
	}
	return doc
}

// grown is an input under the quota that the template {"x.$":"$.a",
// "y.$":"$.a","z.$":"$.b"} turns into exactly n bytes: states grow
// payloads past the quota from inputs within it.
func grown(t *testing.T, n int) (input string) {
	t.Helper()
	a := `"` + strings.Repeat("a", 100000) + `"`
	b := n - 2*len(a) - len(`{"x":,"y":,"z":}`)
	in := `{"a":` + a + `,"b":` + sized(t, b, 'b') + `}`
	if len(in) > MaxPayloadBytes {
		t.Fatalf("input of %d bytes is over the quota itself", len(in))
	}
	return in
}

const growTemplate = `{"x.$":"$.a","y.$":"$.a","z.$":"$.b"}`

// TestDataLimitExceededAtTheQuota: a payload of 262,144 bytes passes and
// one of 262,145 fails the execution with States.DataLimitExceeded, which
// neither a States.ALL Retry nor a States.ALL Catch handles, wherever Step
// Functions measures: the task's result (before ResultSelector), the state's
// output (after ResultSelector, ResultPath and OutputPath), the input after
// Parameters, a Map iteration's input.
func TestDataLimitExceededAtTheQuota(t *testing.T) {
	const catchAll = `"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":3}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Caught"}]`
	const caught = `,"Caught":{"Type":"Succeed"}`
	const fn = "arn:aws:lambda:local:000000000000:function:f"
	task := func(fields string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fn + `",` + fields + catchAll + `,"End":true}` + caught + `}}`
	}
	type shape struct {
		name string
		def  string
		// input and result (what the function returns; "" for none) for
		// a measured payload of n bytes.
		input, result func(t *testing.T, n int) string
		// step is the size step (2 for two-byte runes).
		step int
	}
	empty := func(*testing.T, int) string { return `{}` }
	shapes := []shape{
		{name: "task result", def: task(``), input: empty,
			result: func(t *testing.T, n int) string { return sized(t, n, 'a') }, step: 1},
		// 131,072 two-byte characters are 262,144 bytes, over nothing.
		{name: "task result in UTF-8 bytes", def: task(``), input: empty,
			result: func(t *testing.T, n int) string { return sized(t, n, 'é') }, step: 2},
		// ResultSelector would keep one number: the result is measured
		// before it.
		{name: "task result before ResultSelector", def: task(`"ResultSelector":{"n":1},`), input: empty,
			result: func(t *testing.T, n int) string { return sized(t, n, 'a') }, step: 1},
		// A result within the quota placed by ResultPath beside the
		// input: the state output {"k":"kk","r":R} is measured.
		{name: "task output after ResultPath", def: task(`"ResultPath":"$.r",`),
			input:  func(*testing.T, int) string { return `{"k":"kk"}` },
			result: func(t *testing.T, n int) string { return sized(t, n-len(`{"k":"kk","r":}`), 'a') }, step: 1},
		{name: "pass output after ResultPath and OutputPath",
			def:   `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":` + growTemplate + `,"ResultPath":"$.out","OutputPath":"$.out","End":true}}}`,
			input: grown, step: 1},
		{name: "input after Parameters", def: task(`"Parameters":` + growTemplate + `,`), input: grown,
			result: func(*testing.T, int) string { return `{}` }, step: 1},
		{name: "map iteration input",
			def:   `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemSelector":` + growTemplate + `,"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","Result":1,"End":true}}},` + catchAll + `,"End":true}` + caught + `}}`,
			input: func(t *testing.T, n int) string { return strings.Replace(grown(t, n), `{"a":`, `{"items":[1],"a":`, 1) }, step: 1},
	}
	for _, sh := range shapes {
		for _, n := range []int{MaxPayloadBytes, MaxPayloadBytes + sh.step} {
			t.Run(sh.name+"/"+itoa(n), func(t *testing.T) {
				var opts []Option
				calls := 0
				if sh.result != nil {
					out := sh.result(t, n)
					opts = append(opts, WithLambda(fn, func(context.Context, json.RawMessage) (json.RawMessage, error) {
						calls++
						return json.RawMessage(out), nil
					}))
				}
				res, _ := runDef(t, sh.def, sh.input(t, n), opts...)
				if n <= MaxPayloadBytes {
					if res.Status != StatusSucceeded {
						t.Fatalf("at %d bytes: status %s, error %s: %.200s", n, res.Status, res.Error, res.Cause)
					}
					if len(eventsOf(res, EventCatchTaken)) != 0 {
						t.Errorf("a Catch was taken at %d bytes", n)
					}
					return
				}
				if res.Status != StatusFailed || res.Error != ErrDataLimitExceeded {
					t.Fatalf("at %d bytes: status %s, error %q (%.200s), want FAILED States.DataLimitExceeded", n, res.Status, res.Error, res.Cause)
				}
				if !strings.Contains(res.Cause, itoa(n)+" bytes") {
					t.Errorf("cause %q does not give the size %d", res.Cause, n)
				}
				if got := len(eventsOf(res, EventCatchTaken)); got != 0 {
					t.Errorf("States.ALL caught States.DataLimitExceeded (%d catches)", got)
				}
				if got := len(eventsOf(res, EventRetryScheduled)); got != 0 {
					t.Errorf("States.ALL retried States.DataLimitExceeded (%d retries)", got)
				}
				if calls > 1 {
					t.Errorf("the task ran %d times", calls)
				}
			})
		}
	}
}

// TestExecutionInputOverTheQuotaIsRefused: StartExecution refuses an input
// over the quota; Run does too, and runs nothing.
func TestExecutionInputOverTheQuotaIsRefused(t *testing.T) {
	sm, err := Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := NewExecutor(sm, WithClock(NewFakeClock(testStart)))
	for _, n := range []int{MaxPayloadBytes, MaxPayloadBytes + 1} {
		res, err := e.Run(context.Background(), "x", json.RawMessage(sized(t, n, 'a')))
		switch {
		case n <= MaxPayloadBytes && (err != nil || res.Status != StatusSucceeded):
			t.Errorf("%d bytes: %v %+v", n, err, res)
		case n > MaxPayloadBytes && (err == nil || res != nil):
			t.Errorf("%d bytes: accepted (%v)", n, err)
		}
	}
}
