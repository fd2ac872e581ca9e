package asl

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestInputOutputProcessing follows the AWS order InputPath → Parameters →
// result → ResultSelector → ResultPath → OutputPath.
func TestInputOutputProcessing(t *testing.T) {
	tests := []struct {
		name, state, input, want string
	}{
		{"pass through", `{"Type":"Pass","End":true}`, `{"a":1}`, `{"a":1}`},
		{"result replaces", `{"Type":"Pass","Result":{"x":1},"End":true}`, `{"a":1}`, `{"x":1}`},
		{"result path merges", `{"Type":"Pass","Result":"r","ResultPath":"$.b.c","End":true}`, `{"a":1}`, `{"a":1,"b":{"c":"r"}}`},
		{"result path null discards", `{"Type":"Pass","Result":"r","ResultPath":null,"End":true}`, `{"a":1}`, `{"a":1}`},
		{"result path $ replaces", `{"Type":"Pass","Result":"r","ResultPath":"$","End":true}`, `{"a":1}`, `"r"`},
		{"input path", `{"Type":"Pass","InputPath":"$.a","End":true}`, `{"a":{"b":2}}`, `{"b":2}`},
		{"input path null", `{"Type":"Pass","InputPath":null,"End":true}`, `{"a":1}`, `{}`},
		{"output path", `{"Type":"Pass","OutputPath":"$.a.b","End":true}`, `{"a":{"b":[1,2]}}`, `[1,2]`},
		{"output path null", `{"Type":"Pass","OutputPath":null,"End":true}`, `{"a":1}`, `{}`},
		{"parameters static and paths", `{"Type":"Pass","InputPath":"$.in","Parameters":{"k":"v","x.$":"$.x","nested":{"y.$":"$.y[1]"},"list":[{"z.$":"$.x"}]},"End":true}`, `{"in":{"x":"X","y":[0,"Y"]}}`, `{"k":"v","x":"X","nested":{"y":"Y"},"list":[{"z":"X"}]}`},
		{"parameters with bracket and wildcard", `{"Type":"Pass","Parameters":{"n.$":"$['a b']","all.$":"$.l[*].v","last.$":"$.l[-1:]"},"End":true}`, `{"a b":1,"l":[{"v":1},{"v":2}]}`, `{"n":1,"all":[1,2],"last":[{"v":2}]}`},
		{"parameters context object", `{"Type":"Pass","Parameters":{"name.$":"$$.Execution.Name","state.$":"$$.State.Name","id.$":"$$.Execution.Id","sm.$":"$$.StateMachine.Id","retry.$":"$$.State.RetryCount","in.$":"$$.Execution.Input.a","start.$":"$$.Execution.StartTime","entered.$":"$$.State.EnteredTime"},"End":true}`, `{"a":7}`,
			`{"name":"exec1","state":"S","id":"arn:aws:states:local:000000000000:execution:sm:exec1","sm":"arn:aws:states:local:000000000000:stateMachine:sm","retry":0,"in":7,"start":"2024-05-01T12:00:00.000Z","entered":"2024-05-01T12:00:00.000Z"}`},
		{"parameters intrinsic", `{"Type":"Pass","Parameters":{"msg.$":"States.Format('{} has {} items', $.name, States.ArrayLength($.items))"},"End":true}`, `{"name":"box","items":[1,2,3]}`, `{"msg":"box has 3 items"}`},
		{"result path into array element", `{"Type":"Pass","Result":9,"ResultPath":"$.l[1]","End":true}`, `{"l":[1,2]}`, `{"l":[1,9]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runDef(t, `{"StartAt":"S","States":{"S":`+tt.state+`}}`, tt.input)
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, tt.want)
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		name, state, input, cause string
	}{
		{"missing parameters path", `{"Type":"Pass","Parameters":{"x.$":"$.nope"},"End":true}`, `{}`, "could not be found"},
		{"missing input path", `{"Type":"Pass","InputPath":"$.nope","End":true}`, `{}`, "InputPath"},
		{"missing output path", `{"Type":"Pass","OutputPath":"$.nope","End":true}`, `{}`, "OutputPath"},
		{"bad intrinsic argument", `{"Type":"Pass","Parameters":{"x.$":"States.StringToJson($.s)"},"End":true}`, `{"s":"{bad"}`, "States.StringToJson"},
		{"fail error path not string", `{"Type":"Fail","ErrorPath":"$.e"}`, `{"e":1}`, "must resolve to a string"},
		{"choice variable missing", `{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"S"}]}`, `{}`, "invalid path"},
		// States.ALL does not catch States.Runtime (AWS error-handling docs).
		{"runtime not caught by States.ALL", `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f","Payload.$":"$.missing"},"Retry":[{"ErrorEquals":["States.ALL"]}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"S"}],"End":true}`, `{}`, "could not be found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, clk := runDef(t, `{"StartAt":"S","States":{"S":`+tt.state+`}}`, tt.input, WithLambda("f", lambdaReturning(`{}`)))
			if res.Status != StatusFailed || res.Error != ErrRuntime || !strings.Contains(res.Cause, tt.cause) {
				t.Fatalf("got %s %s %q, want FAILED States.Runtime containing %q", res.Status, res.Error, res.Cause, tt.cause)
			}
			if len(clk.Sleeps()) != 0 {
				t.Errorf("runtime error was retried: sleeps %v", clk.Sleeps())
			}
		})
	}
}

func TestResultPathMatchFailureIsCatchable(t *testing.T) {
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"ResultPath":"$.a.b","Catch":[{"ErrorEquals":["States.ResultPathMatchFailure"],"Next":"Done"}],"End":true},
	  "Done":{"Type":"Succeed"}}}`
	res, _ := runDef(t, def, `{"a":"scalar"}`, WithLambda("f", lambdaReturning(`1`)))
	mustSucceed(t, res)
	if got := eventsOf(res, EventCatchTaken); len(got) != 1 || got[0].Error != ErrResultPathMatchFailure {
		t.Fatalf("catch events %+v", got)
	}
}

func TestFailAndSucceed(t *testing.T) {
	tests := []struct {
		name, def, input, status, err, cause, output string
	}{
		{"fail static", `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Routed.DeadLetter","Cause":"why"}}}`, `{}`, StatusFailed, "Routed.DeadLetter", "why", ""},
		{"fail paths", `{"StartAt":"F","States":{"F":{"Type":"Fail","ErrorPath":"$.e","CausePath":"States.Format('code {}', $.c)"}}}`, `{"e":"E1","c":7}`, StatusFailed, "E1", "code 7", ""},
		{"succeed with paths", `{"StartAt":"S","States":{"S":{"Type":"Succeed","InputPath":"$.a","OutputPath":"$.b"}}}`, `{"a":{"b":5}}`, StatusSucceeded, "", "", `5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runDef(t, tt.def, tt.input)
			if res.Status != tt.status || res.Error != tt.err || res.Cause != tt.cause {
				t.Fatalf("got %s %q %q", res.Status, res.Error, res.Cause)
			}
			if tt.output != "" {
				mustJSONEqual(t, res.Output, tt.output)
			}
		})
	}
}

func TestWait(t *testing.T) {
	tests := []struct {
		name, state, input string
		want               time.Duration
	}{
		{"seconds", `{"Type":"Wait","Seconds":5,"End":true}`, `{}`, 5 * time.Second},
		{"seconds path", `{"Type":"Wait","SecondsPath":"$.s","End":true}`, `{"s":7}`, 7 * time.Second},
		{"timestamp", `{"Type":"Wait","Timestamp":"2024-05-01T12:01:00Z","End":true}`, `{}`, time.Minute},
		{"timestamp path", `{"Type":"Wait","TimestampPath":"$.t","End":true}`, `{"t":"2024-05-01T13:00:00+01:00"}`, 0},
		{"timestamp in the past", `{"Type":"Wait","Timestamp":"2020-01-01T00:00:00Z","End":true}`, `{}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, clk := runDef(t, `{"StartAt":"W","States":{"W":`+tt.state+`}}`, tt.input)
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, tt.input)
			if got := clk.Sleeps(); len(got) != 1 || got[0] != tt.want {
				t.Fatalf("sleeps %v, want [%v]", got, tt.want)
			}
			if got := clk.Now().Sub(testStart); got != tt.want {
				t.Errorf("clock advanced %v", got)
			}
		})
	}
}

func TestExecutionTimeout(t *testing.T) {
	def := `{"StartAt":"W","TimeoutSeconds":10,"States":{"W":{"Type":"Wait","Seconds":60,"Next":"P"},"P":{"Type":"Pass","End":true}}}`
	res, clk := runDef(t, def, `{}`)
	if res.Status != StatusTimedOut || res.Error != ErrTimeout {
		t.Fatalf("got %s %s", res.Status, res.Error)
	}
	if got := clk.Now().Sub(testStart); got != 10*time.Second {
		t.Errorf("clock at +%v, want +10s (the deadline)", got)
	}
	if len(eventsOf(res, EventExecutionTimedOut)) != 1 {
		t.Error("no ExecutionTimedOut event")
	}

	// A Catch on States.ALL does not catch the execution timeout.
	def = `{"StartAt":"T","TimeoutSeconds":5,"States":{
	  "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},
	       "Retry":[{"ErrorEquals":["States.ALL"],"IntervalSeconds":3,"MaxAttempts":5}],
	       "Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}],"End":true},
	  "C":{"Type":"Succeed"}}}`
	res, _ = runDef(t, def, `{}`, WithLambda("f", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("boom")
	}))
	if res.Status != StatusTimedOut {
		t.Fatalf("got %s %s", res.Status, res.Error)
	}

	// Real time: a handler blocking past TimeoutSeconds on the real clock.
	sm, _ := Parse([]byte(`{"StartAt":"T","TimeoutSeconds":1,"States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"End":true}}}`))
	if testing.Short() {
		return
	}
	res, err := NewExecutor(sm, WithLambda("f", func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})).Run(context.Background(), "", nil)
	if err != nil || res.Status != StatusTimedOut {
		t.Fatalf("real-time timeout: %v %+v", err, res)
	}
}

func TestLambdaInvokeShape(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:convert:live","Payload.$":"$"},
	  "ResultSelector":{"body.$":"$.Payload","code.$":"$.StatusCode","ver.$":"$.ExecutedVersion","http.$":"$.SdkHttpMetadata.HttpStatusCode","rid.$":"$.SdkResponseMetadata.RequestId"},
	  "ResultPath":"$.out","End":true}}}`
	var got json.RawMessage
	res, _ := runDef(t, def, `{"k":"v"}`, WithLambda("convert", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		got = p
		return json.RawMessage(`{"ok":true}`), nil
	}))
	mustSucceed(t, res)
	mustJSONEqual(t, got, `{"k":"v"}`)
	out, _ := decodeValue(res.Output)
	o := out.(map[string]any)["out"].(map[string]any)
	mustJSONEqual(t, encodeValue(o["body"]), `{"ok":true}`)
	if n, _ := intOf(o["code"]); n != 200 || o["ver"] != "$LATEST" {
		t.Errorf("StatusCode/ExecutedVersion: %v", o)
	}
	if n, _ := intOf(o["http"]); n != 200 || o["rid"] == "" {
		t.Errorf("SdkHttpMetadata/SdkResponseMetadata: %v", o)
	}
}

type DataError struct{ Code string }

func (e *DataError) Error() string { return "data error " + e.Code }

type valueError struct{}

func (valueError) Error() string { return "value" }

func TestLambdaErrorNames(t *testing.T) {
	tests := []struct {
		name      string
		fn        LambdaFunc
		wantError string
		wantCause string
	}{
		{"errors.New", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("boom") },
			"errorString", `{"errorMessage":"boom","errorType":"errorString","stackTrace":[]}`},
		{"fmt.Errorf %w", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("wrap: %w", errors.New("inner"))
		}, "wrapError", `{"errorMessage":"wrap: inner","errorType":"wrapError","stackTrace":[]}`},
		{"pointer type", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, &DataError{"MissingCRS"} },
			"DataError", `{"errorMessage":"data error MissingCRS","errorType":"DataError","stackTrace":[]}`},
		{"value type", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, valueError{} },
			"valueError", `{"errorMessage":"value","errorType":"valueError","stackTrace":[]}`},
		{"TaskError verbatim", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, TaskError{Name: "Lambda.ServiceException", Cause: "svc"}
		}, "Lambda.ServiceException", "svc"},
		{"*TaskError wrapped", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("ctx: %w", &TaskError{Name: "States.Timeout", Cause: "slow"})
		}, "States.Timeout", "slow"},
		{"panic", func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("kaboom") },
			"string", `{"errorMessage":"kaboom","errorType":"string","stackTrace":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"End":true}}}`
			res, _ := runDef(t, def, `{}`, WithLambda("f", tt.fn))
			if res.Status != StatusFailed || res.Error != tt.wantError || res.Cause != tt.wantCause {
				t.Fatalf("got %s %q %q", res.Status, res.Error, res.Cause)
			}
			evType := EventTaskFailed
			if tt.wantError == ErrTimeout {
				evType = EventTaskTimedOut
			}
			if ev := eventsOf(res, evType); len(ev) != 1 || ev[0].Error != tt.wantError {
				t.Errorf("TaskFailed events %+v", ev)
			}
		})
	}
}

func TestTaskDispatch(t *testing.T) {
	var sent []string
	sqs := WithSQS(func(_ context.Context, url, body string) (string, error) {
		sent = append(sent, url+" "+body)
		return "mid-1", nil
	})
	tests := []struct {
		name, state, input string
		opts               []Option
		check              func(t *testing.T, res *Result)
	}{
		{"bare lambda arn gets effective input", `{"Type":"Task","Resource":"arn:aws:lambda:eu-west-1:1:function:f","InputPath":"$.in","End":true}`, `{"in":{"a":1}}`,
			[]Option{WithLambda("f", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil })},
			func(t *testing.T, res *Result) { mustSucceed(t, res); mustJSONEqual(t, res.Output, `{"a":1}`) }},
		{"sqs object body is serialized", `{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"q","MessageBody":{"x.$":"$.x"}},"End":true}`, `{"x":1}`,
			[]Option{sqs}, func(t *testing.T, res *Result) {
				mustSucceed(t, res)
				if sent[len(sent)-1] != `q {"x":1}` {
					t.Errorf("sent %q", sent)
				}
				out, _ := decodeValue(res.Output)
				if out.(map[string]any)["MessageId"] != "mid-1" || out.(map[string]any)["MD5OfMessageBody"] != md5hex(`{"x":1}`) {
					t.Errorf("output %s", res.Output)
				}
			}},
		{"sqs string body verbatim", `{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"q","MessageBody":"hi"},"End":true}`, `{}`,
			[]Option{sqs}, func(t *testing.T, res *Result) {
				mustSucceed(t, res)
				if sent[len(sent)-1] != `q hi` {
					t.Errorf("sent %q", sent)
				}
			}},
		{"generic resource", `{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","Parameters":{"Input.$":"$"},"End":true}`, `{"a":1}`,
			[]Option{WithResource("arn:aws:states:::states:startExecution.sync:2", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"got":` + string(p) + `}`), nil
			})}, func(t *testing.T, res *Result) {
				mustSucceed(t, res)
				mustJSONEqual(t, res.Output, `{"got":{"Input":{"a":1}}}`)
			}},
		{"generic resource error", `{"Type":"Task","Resource":"arn:aws:states:::s3:putObject","End":true}`, `{}`,
			[]Option{WithResource("arn:aws:states:::s3:putObject", func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("denied")
			})}, func(t *testing.T, res *Result) {
				if res.Error != ErrTaskFailed || res.Cause != "denied" {
					t.Errorf("got %s %s", res.Error, res.Cause)
				}
			}},
		{"unregistered resource", `{"Type":"Task","Resource":"arn:aws:states:::dynamodb:putItem","End":true}`, `{}`, nil,
			func(t *testing.T, res *Result) {
				if res.Error != ErrTaskFailed || !strings.Contains(res.Cause, "dynamodb:putItem") {
					t.Errorf("got %s %s", res.Error, res.Cause)
				}
			}},
		{"unregistered function", `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"ghost"},"End":true}`, `{}`, nil,
			func(t *testing.T, res *Result) {
				if res.Error != ErrTaskFailed || !strings.Contains(res.Cause, "ghost") {
					t.Errorf("got %s %s", res.Error, res.Cause)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runDef(t, `{"StartAt":"T","States":{"T":`+tt.state+`}}`, tt.input, tt.opts...)
			tt.check(t, res)
		})
	}
}

func TestTaskTimeout(t *testing.T) {
	for _, field := range []string{`"TimeoutSeconds":1`, `"TimeoutSecondsPath":"$.t"`} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			if testing.Short() {
				t.Skip("waits one real second")
			}
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},` + field + `,
			  "Retry":[{"ErrorEquals":["States.TaskFailed"]}],"Catch":[{"ErrorEquals":["States.Timeout"],"Next":"C"}],"End":true},"C":{"Type":"Pass","End":true}}}`
			cancelled := make(chan struct{})
			slow := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			}
			res, clk := runDef(t, def, `{"t":1}`, WithLambda("f", slow))
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, `{"Error":"States.Timeout","Cause":"task timed out after 1 seconds"}`)
			if len(clk.Sleeps()) != 0 || len(eventsOf(res, EventTaskTimedOut)) != 1 {
				t.Errorf("States.TaskFailed retried a timeout: %v", clk.Sleeps())
			}
			select {
			case <-cancelled:
			case <-time.After(time.Second):
				t.Error("the function's context was not cancelled")
			}
		})
	}
}

func TestHistoryObserverAndEvents(t *testing.T) {
	var streamed []string
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Succeed"}}}`
	res, _ := runDef(t, def, `{}`, WithHistory(func(ev Event) { streamed = append(streamed, ev.Type) }))
	want := []string{EventExecutionStarted, EventStateEntered, EventStateExited, EventStateEntered, EventStateExited, EventExecutionSucceeded}
	if strings.Join(streamed, ",") != strings.Join(want, ",") {
		t.Fatalf("streamed %v", streamed)
	}
	for i, ev := range res.History {
		if ev.ID != i+1 || ev.Type != want[i] {
			t.Errorf("history[%d] = %+v", i, ev)
		}
	}
	if res.ExecutionArn != "arn:aws:states:local:000000000000:execution:sm:exec1" || res.Name != "exec1" {
		t.Errorf("arn %s name %s", res.ExecutionArn, res.Name)
	}
}

func TestExecutionHistoryObserverNamesTheExecution(t *testing.T) {
	sm, err := Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	e := NewExecutor(sm, WithExecutionHistory(func(execution string, ev Event) {
		mu.Lock()
		defer mu.Unlock()
		seen[execution] = append(seen[execution], ev.Type)
	}))
	names := []string{"one", "two", "three"}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			if _, err := e.Run(context.Background(), n, json.RawMessage(`{}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	want := strings.Join([]string{EventExecutionStarted, EventStateEntered, EventStateExited, EventExecutionSucceeded}, ",")
	for _, n := range names {
		if got := strings.Join(seen[n], ","); got != want {
			t.Errorf("execution %s: observed %s, want %s", n, got, want)
		}
	}
	if len(seen) != len(names) {
		t.Errorf("observed executions %v, want %v", seen, names)
	}
}

func TestRunInvalidInput(t *testing.T) {
	sm, _ := Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	if _, err := NewExecutor(sm).Run(context.Background(), "x", json.RawMessage(`{bad`)); err == nil {
		t.Fatal("want error for invalid input JSON")
	}
	res, err := NewExecutor(sm).Run(context.Background(), "", nil)
	if err != nil || res.Status != StatusSucceeded || string(res.Output) != `{}` || res.Name == "" {
		t.Fatalf("empty input: %v %+v", err, res)
	}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
