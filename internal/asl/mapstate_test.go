package asl

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParallel(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","Parameters":{"v.$":"$.v"},"ResultPath":"$.out","End":true,"Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Pass","Result":"a","End":true}}},
	  {"StartAt":"B","States":{"B":{"Type":"Wait","Seconds":1,"Next":"B2"},"B2":{"Type":"Pass","InputPath":"$.v","End":true}}}]}}}`
	res, _ := runDef(t, def, `{"v":42}`)
	mustSucceed(t, res)
	mustJSONEqual(t, res.Output, `{"v":42,"out":["a",42]}`)

	failing := `{"StartAt":"P","States":{"P":{"Type":"Parallel","Next":"C","Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":100,"End":true}}},
	  {"StartAt":"B","States":{"B":{"Type":"Fail","Error":"Boom","Cause":"b"}}}],
	  "Catch":[{"ErrorEquals":["Boom"],"ResultPath":"$.err","Next":"C"}]},"C":{"Type":"Pass","End":true}}}`
	res, _ = runDef(t, failing, `{}`)
	mustSucceed(t, res)
	mustJSONEqual(t, res.Output, `{"err":{"Error":"Boom","Cause":"b"}}`)
}

func TestParallelRetry(t *testing.T) {
	var calls atomic.Int32
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,
	  "Retry":[{"ErrorEquals":["errorString"],"IntervalSeconds":2,"MaxAttempts":2}],
	  "Branches":[{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"OutputPath":"$.Payload","End":true}}}]}}}`
	res, clk := runDef(t, def, `{}`, WithLambda("f", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, errString("first")
		}
		return json.RawMessage(`"ok"`), nil
	}))
	mustSucceed(t, res)
	mustJSONEqual(t, res.Output, `["ok"]`)
	if got := clk.Sleeps(); len(got) != 1 || got[0] != 2*time.Second {
		t.Errorf("sleeps %v", got)
	}
}

type errorString struct{ s string }

func (e *errorString) Error() string { return e.s }

func errString(s string) error { return &errorString{s} }

func TestMapInline(t *testing.T) {
	tests := []struct {
		name, state, input, want string
	}{
		{"items path and result path", `{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.out","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","Parameters":{"d.$":"States.MathAdd($.v, $.v)"},"End":true}}},"End":true}`,
			`{"items":[{"v":1},{"v":2}]}`, `{"items":[{"v":1},{"v":2}],"out":[{"d":2},{"d":4}]}`},
		{"item selector with context", `{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"i.$":"$$.Map.Item.Index","val.$":"$$.Map.Item.Value","k.$":"$.k"},"ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}`,
			`{"k":"K","items":["a","b"]}`, `[{"i":0,"val":"a","k":"K"},{"i":1,"val":"b","k":"K"}]`},
		{"legacy iterator and parameters", `{"Type":"Map","ItemsPath":"$.items","Parameters":{"x.$":"$$.Map.Item.Value"},"Iterator":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}`,
			`{"items":[1]}`, `[{"x":1}]`},
		{"empty array", `{"Type":"Map","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}`, `[]`, `[]`},
		{"result selector", `{"Type":"Map","ResultSelector":{"n.$":"States.ArrayLength($)"},"ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}`, `[1,2,3]`, `{"n":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runDef(t, `{"StartAt":"M","States":{"M":`+tt.state+`}}`, tt.input)
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, tt.want)
		})
	}
}

func TestMapInlineFailureAndConcurrency(t *testing.T) {
	var mu sync.Mutex
	running, peak := 0, 0
	fn := func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		if string(p) == `"bad"` {
			return nil, TaskError{Name: "ItemError", Cause: "bad item"}
		}
		return p, nil
	}
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":2,"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:local:0:function:f","End":true}}},"End":true}}}`
	res, _ := runDef(t, def, `["a","b","c","d","e"]`, WithLambda("f", fn))
	mustSucceed(t, res)
	mustJSONEqual(t, res.Output, `["a","b","c","d","e"]`)
	if peak > 2 || peak < 1 {
		t.Errorf("peak concurrency %d, MaxConcurrency 2", peak)
	}
	if n := len(eventsOf(res, EventMapIterationStarted)); n != 5 {
		t.Errorf("%d MapIterationStarted events", n)
	}
	res, _ = runDef(t, def, `["a","bad","c"]`, WithLambda("f", fn))
	if res.Status != StatusFailed || res.Error != "ItemError" {
		t.Fatalf("inline item failure: %s %s", res.Status, res.Error)
	}
}

func distributedMap(extra string) string {
	return `{"StartAt":"M","States":{"M":{"Type":"Map",` + extra + `"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
	  "StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.ok","BooleanEquals":false,"Next":"F"}],"Default":"P"},
	  "F":{"Type":"Fail","Error":"ItemFailed","Cause":"nope"},"P":{"Type":"Pass","End":true}}},"End":true}}}`
}

func TestMapDistributedTolerance(t *testing.T) {
	items := `[{"ok":true},{"ok":false},{"ok":true},{"ok":true}]` // 1 of 4 = 25% fails
	tests := []struct {
		name, extra string
		wantErr     string
	}{
		{"no tolerance", ``, ErrExceedToleratedFailureThreshold},
		{"count tolerated", `"ToleratedFailureCount":1,`, ""},
		{"count exceeded", `"ToleratedFailureCount":0,`, ErrExceedToleratedFailureThreshold},
		{"percent tolerated", `"ToleratedFailurePercentage":25,`, ""},
		{"percent exceeded", `"ToleratedFailurePercentage":20,`, ErrExceedToleratedFailureThreshold},
		{"percent path", `"ToleratedFailurePercentagePath":"$$.Execution.Input.tol",`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := items
			if strings.Contains(tt.extra, "Path") {
				input = `{"tol":50,"items":` + items + `}`
				tt.extra += `"ItemsPath":"$.items",`
			}
			res, _ := runDef(t, distributedMap(tt.extra), input)
			if tt.wantErr != "" {
				if res.Status != StatusFailed || res.Error != tt.wantErr {
					t.Fatalf("got %s %s", res.Status, res.Error)
				}
				return
			}
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, `[{"ok":true},{"Error":"ItemFailed","Cause":"nope"},{"ok":true},{"ok":true}]`)
		})
	}
}

func TestMapReaderBatcherWriter(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":3,
	  "ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket.$":"$.bucket","Prefix":"in/"}},
	  "ItemSelector":{"key.$":"$$.Map.Item.Value.Key","bucket.$":"$.bucket"},
	  "ItemBatcher":{"MaxItemsPerBatch":2,"BatchInput":{"run.$":"$$.Execution.Name"}},
	  "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"results"}},
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},"StartAt":"X","States":{"X":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.Items)","run.$":"$.BatchInput.run","first.$":"$.Items[0].key"},"End":true}}},
	  "End":true}}}`
	var readerParams, writerParams json.RawMessage
	res, _ := runDef(t, def, `{"bucket":"src"}`,
		WithResource("arn:aws:states:::s3:listObjectsV2", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
			readerParams = p
			return json.RawMessage(`{"Contents":[{"Key":"in/a"},{"Key":"in/b"},{"Key":"in/c"}]}`), nil
		}),
		WithResource("arn:aws:states:::s3:putObject", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
			writerParams = p
			return json.RawMessage(`{"ResultWriterDetails":{"Bucket":"out","Key":"results/manifest.json"}}`), nil
		}))
	mustSucceed(t, res)
	mustJSONEqual(t, readerParams, `{"Bucket":"src","Prefix":"in/"}`)
	mustJSONEqual(t, writerParams, `{"Bucket":"out","Prefix":"results","Results":[{"n":2,"run":"exec1","first":"in/a"},{"n":1,"run":"exec1","first":"in/c"}]}`)
	mustJSONEqual(t, res.Output, `{"ResultWriterDetails":{"Bucket":"out","Key":"results/manifest.json"}}`)
}

func TestMapItemReaderUnregistered(t *testing.T) {
	def := distributedMap(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON"},"Parameters":{"Bucket":"b","Key":"k"}},`)
	res, _ := runDef(t, def, `{}`)
	if res.Status != StatusFailed || res.Error != ErrItemReaderFailed || !strings.Contains(res.Cause, "s3:getObject") {
		t.Fatalf("got %s %s %s", res.Status, res.Error, res.Cause)
	}
}

// TestMapItemReaderListingShapes: S3 leaves Contents out of an empty
// listing, which is zero items; a Contents that is not an array is a
// reader failure.
func TestMapItemReaderListingShapes(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map",
	  "ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"src","Prefix":"none/"}},
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},
	  "End":true}}}`
	for _, tc := range []struct {
		name, listing, want string
	}{
		{"no Contents", `{"KeyCount":0,"IsTruncated":false}`, `[]`},
		{"null Contents", `{"Contents":null}`, `[]`},
		{"empty Contents", `{"Contents":[]}`, `[]`},
		{"one object", `{"Contents":[{"Key":"none/a"}]}`, `[{"Key":"none/a"}]`},
		{"Contents not an array", `{"Contents":"none/a"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := runDef(t, def, `{}`,
				WithResource("arn:aws:states:::s3:listObjectsV2", func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(tc.listing), nil
				}))
			if tc.want == "" {
				if res.Status != StatusFailed || res.Error != ErrItemReaderFailed {
					t.Fatalf("got %s %s %s, want %s", res.Status, res.Error, res.Cause, ErrItemReaderFailed)
				}
				return
			}
			mustSucceed(t, res)
			mustJSONEqual(t, res.Output, tc.want)
		})
	}
}

// TestMapDistributedKeepsItemEventsOutOfTheParent: the iterations of a
// distributed Map are child executions, so the parent's history holds the
// Map state's own events whatever the item count (a backfill's history
// does not grow with its items), while observers still see every event.
func TestMapDistributedKeepsItemEventsOutOfTheParent(t *testing.T) {
	for _, n := range []int{1, 50} {
		items := make([]string, n)
		for i := range items {
			items[i] = `{"ok":true}`
		}
		var mu sync.Mutex
		seen := map[string]int{}
		res, _ := runDef(t, distributedMap(""), "["+strings.Join(items, ",")+"]", WithHistory(func(ev Event) {
			mu.Lock()
			seen[ev.Type+" "+ev.State]++
			mu.Unlock()
		}))
		mustSucceed(t, res)
		for _, ev := range res.History {
			if ev.State == "C" || ev.State == "P" || strings.HasPrefix(ev.Type, "MapIteration") {
				t.Errorf("%d items: parent history holds item event %s %s", n, ev.Type, ev.State)
			}
		}
		if len(res.History) != 4 { // ExecutionStarted, StateEntered M, StateExited M, ExecutionSucceeded
			t.Errorf("%d items: parent history has %d events, want 4", n, len(res.History))
		}
		for i, ev := range res.History {
			if ev.ID != i+1 {
				t.Errorf("event %d has ID %d", i, ev.ID)
			}
		}
		if seen["StateEntered C"] != n || seen["MapIterationSucceeded M"] != n {
			t.Errorf("%d items: observers saw %d StateEntered C and %d MapIterationSucceeded", n, seen["StateEntered C"], seen["MapIterationSucceeded M"])
		}
	}
}

// recordingSink is a ResultSink that notes what it was given.
type recordingSink struct {
	params    string
	added     []string
	failed    int
	finished  bool
	discarded bool
}

func (s *recordingSink) Add(r json.RawMessage, failed bool) error {
	s.added = append(s.added, string(r))
	if failed {
		s.failed++
	}
	return nil
}

func (s *recordingSink) Finish(context.Context) (json.RawMessage, error) {
	s.finished = true
	return json.RawMessage(`{"written":` + strconv.Itoa(len(s.added)) + `}`), nil
}

func (s *recordingSink) Discard() { s.discarded = true }

// A streaming ResultWriter gets each item's result as its iteration ends,
// before the next one starts at MaxConcurrency 1 (the Map keeps none of
// them), the failed items flagged; its Finish is the Map's result, and a
// Map that fails discards it.
func TestMapResultWriterStreams(t *testing.T) {
	tests := []struct {
		name, extra string
		wantStatus  string
		wantOutput  string
	}{
		{"tolerated", `"ToleratedFailureCount":1,`, StatusSucceeded, `{"written":4}`},
		{"exceeded", `"ToleratedFailureCount":0,`, StatusFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recordingSink{}
			var seenAtStart []int
			def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":1,` + tt.extra + `
			  "ItemReader":{"Resource":"list"},
			  "ResultWriter":{"Resource":"write","Parameters":{"Bucket":"ops","Prefix.$":"$.prefix"}},
			  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"T","States":{"T":{"Type":"Task","Resource":"item","End":true}}},"End":true}}}`
			res, _ := runDef(t, def, `{"prefix":"results/"}`,
				WithResource("list", func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(`[{"ok":true},{"ok":false},{"ok":true},{"ok":true}]`), nil
				}),
				WithResource("item", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
					seenAtStart = append(seenAtStart, len(sink.added))
					if strings.Contains(string(p), "false") {
						return nil, &TaskError{Name: "ItemFailed", Cause: "nope"}
					}
					return p, nil
				}),
				WithResource("write", func(context.Context, json.RawMessage) (json.RawMessage, error) {
					t.Error("the batch ResultWriter was called: the streaming one takes precedence")
					return nil, nil
				}),
				WithResultWriter("write", func(_ context.Context, params json.RawMessage) (ResultSink, error) {
					sink.params = string(params)
					return sink, nil
				}))
			if res.Status != tt.wantStatus {
				t.Fatalf("status %s (%s: %s), want %s", res.Status, res.Error, res.Cause, tt.wantStatus)
			}
			mustJSONEqual(t, json.RawMessage(sink.params), `{"Bucket":"ops","Prefix":"results/"}`)
			if tt.wantStatus == StatusSucceeded {
				mustJSONEqual(t, res.Output, tt.wantOutput)
				if !sink.finished || sink.discarded {
					t.Errorf("finished %v, discarded %v: want finished only", sink.finished, sink.discarded)
				}
				if want := []int{0, 1, 2, 3}; !slices.Equal(seenAtStart, want) {
					t.Errorf("results written before each item started: %v, want %v", seenAtStart, want)
				}
				if sink.failed != 1 || sink.added[1] != `{"Cause":"nope","Error":"ItemFailed"}` {
					t.Errorf("added %v (%d failed), want the second as its error", sink.added, sink.failed)
				}
				return
			}
			if res.Error != ErrExceedToleratedFailureThreshold || !sink.discarded || sink.finished {
				t.Errorf("error %s, discarded %v, finished %v: want the threshold error and the sink discarded", res.Error, sink.discarded, sink.finished)
			}
		})
	}
}
