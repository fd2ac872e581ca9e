package asl

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// failingLambda fails with the given TaskError names in order, then
// succeeds with {"ok":true}; it records $$.State.RetryCount via payload.
type failingLambda struct {
	mu      sync.Mutex
	errs    []string
	calls   int
	retries []int
}

func (f *failingLambda) fn(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var in struct{ RetryCount int }
	_ = json.Unmarshal(p, &in)
	f.retries = append(f.retries, in.RetryCount)
	f.calls++
	if f.calls <= len(f.errs) {
		return nil, TaskError{Name: f.errs[f.calls-1], Cause: "c"}
	}
	return json.RawMessage(`{"ok":true}`), nil
}

func taskWith(retry, catch string) string {
	s := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"f","Payload":{"RetryCount.$":"$$.State.RetryCount"}},"OutputPath":"$.Payload"`
	if retry != "" {
		s += `,"Retry":` + retry
	}
	if catch != "" {
		s += `,"Catch":` + catch
	}
	s += `,"End":true}`
	if catch != "" {
		s += `,"C":{"Type":"Pass","End":true}`
	}
	return s + `}}`
}

func secs(f ...float64) []time.Duration {
	out := make([]time.Duration, len(f))
	for i, s := range f {
		out[i] = time.Duration(s * float64(time.Second))
	}
	return out
}

func TestRetry(t *testing.T) {
	catchAll := `[{"ErrorEquals":["States.ALL"],"Next":"C"}]`
	tests := []struct {
		name       string
		retry      string
		catch      string
		errs       []string
		wantStatus string
		wantError  string
		wantSleeps []time.Duration
		wantCalls  int
	}{
		{"defaults: 1s, x2, 3 attempts", `[{"ErrorEquals":["E"]}]`, "", []string{"E", "E", "E", "E"}, StatusFailed, "E", secs(1, 2, 4), 4},
		{"succeeds after retries", `[{"ErrorEquals":["E"]}]`, "", []string{"E", "E"}, StatusSucceeded, "", secs(1, 2), 3},
		{"interval, backoff, max delay cap", `[{"ErrorEquals":["E"],"IntervalSeconds":4,"BackoffRate":2,"MaxAttempts":6,"MaxDelaySeconds":20,"JitterStrategy":"NONE"}]`, "",
			[]string{"E", "E", "E", "E", "E", "E"}, StatusSucceeded, "", secs(4, 8, 16, 20, 20, 20), 7},
		{"fractional backoff", `[{"ErrorEquals":["E"],"IntervalSeconds":2,"BackoffRate":1.5,"MaxAttempts":3}]`, "", []string{"E", "E", "E"}, StatusSucceeded, "", secs(2, 3, 4.5), 4},
		{"MaxAttempts 0 never retries", `[{"ErrorEquals":["E"],"MaxAttempts":0}]`, "", []string{"E"}, StatusFailed, "E", nil, 1},
		{"no matching retrier", `[{"ErrorEquals":["Other"]}]`, "", []string{"E"}, StatusFailed, "E", nil, 1},
		// AWS docs example: ErrorA, ErrorB, ErrorC, ErrorB with retriers
		// [A,B]x2 and [C]@5s; the fourth error exhausts the first retrier.
		{"per-retrier counters", `[{"ErrorEquals":["ErrorA","ErrorB"],"IntervalSeconds":1,"BackoffRate":2,"MaxAttempts":2},{"ErrorEquals":["ErrorC"],"IntervalSeconds":5}]`, catchAll,
			[]string{"ErrorA", "ErrorB", "ErrorC", "ErrorB"}, StatusSucceeded, "", secs(1, 2, 5), 4},
		{"first matching retrier wins even when exhausted", `[{"ErrorEquals":["E"],"MaxAttempts":1},{"ErrorEquals":["States.ALL"],"MaxAttempts":5}]`, "",
			[]string{"E", "E"}, StatusFailed, "E", secs(1), 2},
		{"States.TaskFailed matches custom errors", `[{"ErrorEquals":["States.TaskFailed"],"MaxAttempts":1}]`, "", []string{"Custom"}, StatusSucceeded, "", secs(1), 2},
		{"States.TaskFailed does not match States.Timeout", `[{"ErrorEquals":["States.TaskFailed"]}]`, "", []string{"States.Timeout"}, StatusFailed, "States.Timeout", nil, 1},
		{"States.Timeout retried explicitly", `[{"ErrorEquals":["States.Timeout"],"MaxAttempts":1}]`, "", []string{"States.Timeout"}, StatusSucceeded, "", secs(1), 2},
		{"States.ALL matches States.Timeout", `[{"ErrorEquals":["States.ALL"],"MaxAttempts":1}]`, "", []string{"States.Timeout"}, StatusSucceeded, "", secs(1), 2},
		{"caught after exhaustion", `[{"ErrorEquals":["E"],"MaxAttempts":1}]`, catchAll, []string{"E", "E"}, StatusSucceeded, "", secs(1), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &failingLambda{errs: tt.errs}
			res, clk := runDef(t, taskWith(tt.retry, tt.catch), `{}`, WithLambda("f", fl.fn))
			if res.Status != tt.wantStatus || res.Error != tt.wantError {
				t.Fatalf("got %s %q %q", res.Status, res.Error, res.Cause)
			}
			if got := clk.Sleeps(); !equalDurations(got, tt.wantSleeps) {
				t.Errorf("sleeps %v, want %v", got, tt.wantSleeps)
			}
			if fl.calls != tt.wantCalls {
				t.Errorf("calls %d, want %d", fl.calls, tt.wantCalls)
			}
			for i, rc := range fl.retries {
				if rc != i {
					t.Errorf("$$.State.RetryCount on call %d = %d", i, rc)
				}
			}
			rs := eventsOf(res, EventRetryScheduled)
			if len(rs) != len(tt.wantSleeps) {
				t.Fatalf("RetryScheduled events %d, want %d", len(rs), len(tt.wantSleeps))
			}
			for i, ev := range rs {
				if ev.Attempt != i+1 || ev.Wait != tt.wantSleeps[i] {
					t.Errorf("RetryScheduled[%d] attempt %d wait %v", i, ev.Attempt, ev.Wait)
				}
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFullJitter checks that FULL jitter draws each wait uniformly from
// [0, min(4*2^(n-1), 60)] using the injected random source.
func TestFullJitter(t *testing.T) {
	retry := `[{"ErrorEquals":["TransientError"],"IntervalSeconds":4,"BackoffRate":2,"MaxAttempts":6,"MaxDelaySeconds":60,"JitterStrategy":"FULL"}]`
	for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
		fl := &failingLambda{errs: []string{"TransientError", "TransientError", "TransientError", "TransientError", "TransientError", "TransientError"}}
		res, clk := runDef(t, taskWith(retry, ""), `{}`, WithLambda("f", fl.fn), WithRand(func() float64 { return r }))
		mustSucceed(t, res)
		sleeps := clk.Sleeps()
		if len(sleeps) != 6 {
			t.Fatalf("rand %v: sleeps %v", r, sleeps)
		}
		for i, d := range sleeps {
			capped := math.Min(4*math.Pow(2, float64(i)), 60)
			if d < 0 || d > time.Duration(capped*float64(time.Second)) {
				t.Errorf("rand %v retry %d: wait %v outside [0, %vs]", r, i+1, d, capped)
			}
			if want := time.Duration(r * capped * float64(time.Second)); d != want {
				t.Errorf("rand %v retry %d: wait %v, want %v", r, i+1, d, want)
			}
		}
	}
	// With the default source the waits still stay within bounds.
	fl := &failingLambda{errs: []string{"TransientError", "TransientError", "TransientError", "TransientError", "TransientError"}}
	_, clk := runDef(t, taskWith(retry, ""), `{}`, WithLambda("f", fl.fn))
	for i, d := range clk.Sleeps() {
		if capped := math.Min(4*math.Pow(2, float64(i)), 60); d < 0 || d > time.Duration(capped*float64(time.Second)) {
			t.Errorf("default rand retry %d: wait %v outside [0, %vs]", i+1, d, capped)
		}
	}
}

func TestCatch(t *testing.T) {
	tests := []struct {
		name, catch, input, want string
	}{
		{"default ResultPath replaces input", `[{"ErrorEquals":["E"],"Next":"C"}]`, `{"a":1}`, `{"Error":"E","Cause":"c"}`},
		{"ResultPath merges into input", `[{"ErrorEquals":["E"],"ResultPath":"$.error","Next":"C"}]`, `{"a":1}`, `{"a":1,"error":{"Error":"E","Cause":"c"}}`},
		{"ResultPath null keeps input", `[{"ErrorEquals":["E"],"ResultPath":null,"Next":"C"}]`, `{"a":1}`, `{"a":1}`},
		{"first matching catcher", `[{"ErrorEquals":["X"],"ResultPath":"$.x","Next":"C"},{"ErrorEquals":["States.ALL"],"ResultPath":"$.all","Next":"C"}]`, `{}`, `{"all":{"Error":"E","Cause":"c"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := &failingLambda{errs: []string{"E"}}
			res, _ := runDef(t, taskWith("", tt.catch), tt.input, WithLambda("f", fl.fn))
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, tt.want)
			if ev := eventsOf(res, EventCatchTaken); len(ev) != 1 || ev[0].Error != "E" {
				t.Errorf("CatchTaken events %+v", ev)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	r := Retrier{IntervalSeconds: 4, BackoffRate: 2, MaxDelaySeconds: 60, JitterStrategy: "NONE"}
	want := []float64{4, 8, 16, 32, 60, 60}
	for n, w := range want {
		if got := retryDelay(r, n+1, nil); got != time.Duration(w*float64(time.Second)) {
			t.Errorf("retry %d: %v, want %vs", n+1, got, w)
		}
	}
}

// An unregistered resource is a States.TaskFailed and therefore retriable.
func TestUnregisteredResourceIsRetriable(t *testing.T) {
	res, clk := runDef(t, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::x:y","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":2}],"End":true}}}`, `{}`)
	if res.Error != ErrTaskFailed || len(clk.Sleeps()) != 2 || !strings.Contains(res.Cause, "x:y") {
		t.Fatalf("got %s %s sleeps %v", res.Error, res.Cause, clk.Sleeps())
	}
}

// TestRetryScale: WithRetryScale shortens every back-off by the same factor
// (interval, growth and cap alike) and leaves the policy itself alone: the
// same number of retries, the same order; scale 1 and no option are
// Step Functions' timing.
func TestRetryScale(t *testing.T) {
	retry := `[{"ErrorEquals":["E"],"IntervalSeconds":4,"BackoffRate":2,"MaxDelaySeconds":10,"MaxAttempts":4,"JitterStrategy":"NONE"}]`
	for _, tt := range []struct {
		name string
		opts []Option
		want []time.Duration
	}{
		{"unset", nil, secs(4, 8, 10, 10)},
		{"1", []Option{WithRetryScale(1)}, secs(4, 8, 10, 10)},
		{"0.01", []Option{WithRetryScale(0.01)}, secs(0.04, 0.08, 0.1, 0.1)},
		{"not positive keeps 1", []Option{WithRetryScale(0)}, secs(4, 8, 10, 10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fl := &failingLambda{errs: []string{"E", "E", "E", "E"}}
			res, clk := runDef(t, taskWith(retry, ""), `{}`, append(tt.opts, WithLambda("f", fl.fn))...)
			mustSucceed(t, res)
			got := clk.Sleeps()
			if len(got) != len(tt.want) {
				t.Fatalf("sleeps %v, want %v", got, tt.want)
			}
			for i := range got {
				if d := got[i] - tt.want[i]; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("retry %d: %v, want %v", i+1, got[i], tt.want[i])
				}
			}
			for i, ev := range eventsOf(res, EventRetryScheduled) {
				if ev.Wait != got[i] {
					t.Errorf("RetryScheduled[%d].Wait %v, slept %v", i, ev.Wait, got[i])
				}
			}
		})
	}
}
