package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/geomigrate/geomigrate/events"
	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// s3ObjectCreatedDetail is the detail of an EventBridge "Object Created"
// event from S3 (aws-lambda-go leaves detail as raw JSON).
type s3ObjectCreatedDetail struct {
	Version string `json:"version"`
	Bucket  struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key       string `json:"key"`
		Size      int64  `json:"size"`
		ETag      string `json:"etag"`
		VersionID string `json:"version-id,omitempty"`
		Sequencer string `json:"sequencer"`
	} `json:"object"`
	RequestID       string `json:"request-id"`
	Requester       string `json:"requester"`
	SourceIPAddress string `json:"source-ip-address"`
	Reason          string `json:"reason"`
}

// eventBridgeS3 is the whole EventBridge event with its S3 detail typed.
type eventBridgeS3 struct {
	lambdaevents.CloudWatchEvent
	Detail s3ObjectCreatedDetail `json:"detail"`
}

// typeFor is the Go type each sample is decoded into.
func typeFor(t *testing.T, name string) any {
	t.Helper()
	switch {
	case name == "s3-put-notification.json":
		return &lambdaevents.S3Event{}
	case strings.HasPrefix(name, "eventbridge-"):
		return &lambdaevents.CloudWatchEvent{}
	case strings.HasPrefix(name, "console-start"):
		return &migration.Source{}
	}
	switch events.Kinds[name] {
	case events.KindHashCheck:
		return &migration.HashCheckInput{}
	case events.KindConvert:
		return &migration.ConvertInput{}
	case events.KindPromote:
		return &migration.PromoteInput{}
	case events.KindClassify:
		return &migration.ClassifyInput{}
	case events.KindExecutionFailed:
		return &migration.ExecutionStatusChange{}
	}
	t.Fatalf("%s: no Go type; add it to events.Kinds and typeFor", name)
	return nil
}

func sampleNames(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(events.Files, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	onDisk, _ := filepath.Glob("*.json")
	if len(onDisk) != len(names) {
		t.Fatalf("embedded %v, on disk %v", names, onDisk)
	}
	return names
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// TestRoundTrip decodes every sample strictly (unknown fields fail: a field
// the Go type would drop), re-encodes it, checks that every value of the
// original survived, and compares with the golden file.
func TestRoundTrip(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			if _, ok := events.Kinds[name]; !ok {
				t.Fatalf("%s is not in events.Kinds", name)
			}
			// From disk, not the embedded copy: TestFunctionInputsAgree
			// (agree_test.go, run first) may just have rewritten it.
			raw, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			v := typeFor(t, name)
			if err := decodeStrict(raw, v); err != nil {
				t.Fatalf("decode into %T: %v", v, err)
			}
			if cw, ok := v.(*lambdaevents.CloudWatchEvent); ok {
				var d s3ObjectCreatedDetail
				if err := decodeStrict(cw.Detail, &d); err != nil {
					t.Fatalf("detail: %v", err)
				}
				if cw.DetailType != "Object Created" || cw.Source != "aws.s3" || d.Bucket.Name == "" || d.Object.Key == "" {
					t.Errorf("not an S3 Object Created event: %+v %+v", cw, d)
				}
				v = &eventBridgeS3{CloudWatchEvent: *cw, Detail: d}
			}
			out, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			if missing := lost(t, raw, out); len(missing) > 0 {
				t.Errorf("values lost in the round trip through %T: %v", v, missing)
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".json")+".golden.json")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./events -update)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("%s differs from %s (run go test ./events -update if intended):\n%s", name, golden, out)
			}
		})
	}
}

// lost lists the paths of original leaf values that are absent or changed
// in the re-encoded document.
func lost(t *testing.T, orig, round []byte) []string {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(orig, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(round, &b); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, _ := y.(map[string]any)
			for k, v := range xv {
				walk(path+"."+k, v, yv[k])
			}
		case []any:
			yv, _ := y.([]any)
			for i, v := range xv {
				var w any
				if i < len(yv) {
					w = yv[i]
				}
				walk(fmt.Sprintf("%s[%d]", path, i), v, w)
			}
		default:
			if xs, ok := x.(string); ok {
				// time.Time re-encodes RFC 3339 without trailing zeros.
				if ta, err := time.Parse(time.RFC3339Nano, xs); err == nil {
					if ys, ok := y.(string); ok {
						if tb, err := time.Parse(time.RFC3339Nano, ys); err == nil && ta.Equal(tb) {
							return
						}
					}
				}
			}
			if !reflect.DeepEqual(x, y) {
				missing = append(missing, fmt.Sprintf("%s: %v → %v", path, x, y))
			}
		}
	}
	walk("$", a, b)
	sort.Strings(missing)
	return missing
}

// TestS3NotificationKeyDecoding: aws-lambda-go's URLDecodedKey and the
// pipeline's own decoding agree on the notification's key.
func TestS3NotificationKeyDecoding(t *testing.T) {
	raw, _ := events.Files.ReadFile("s3-put-notification.json")
	var ev lambdaevents.S3Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	obj := ev.Records[0].S3.Object
	const want = "survey/2024/München dem (1m).tif"
	if obj.URLDecodedKey != want {
		t.Errorf("aws-lambda-go URLDecodedKey = %q, want %q", obj.URLDecodedKey, want)
	}
	got, err := migration.Source{Key: obj.Key, KeyEncoding: "url"}.DecodedKey()
	if err != nil || got != want {
		t.Errorf("migration DecodedKey = %q, %v; want %q", got, err, want)
	}
}

// normalizeRun runs input through the real migrate definition with a stub
// HashCheck that records its payload and answers decision skip.
func normalizeRun(t *testing.T, input []byte) (*asl.Result, json.RawMessage) {
	t.Helper()
	sm, err := localrun.ParsedMigrate()
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		payload json.RawMessage
	)
	stub := func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		payload = append(json.RawMessage(nil), p...)
		mu.Unlock()
		var in migration.HashCheckInput
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		return json.Marshal(migration.HashCheckOutput{Source: in.Source, Decision: migration.DecisionSkip, Reason: migration.ReasonAlreadyMigrated})
	}
	ex := asl.NewExecutor(sm, asl.WithLambda(localrun.HashCheckFunction, stub), asl.WithClock(asl.NewFakeClock(time.Unix(0, 0))))
	res, err := ex.Run(context.Background(), "normalize", input)
	if err != nil {
		t.Fatal(err)
	}
	return res, payload
}

// TestNormalizeTriggers runs the three trigger shapes through Normalize and
// checks the canonical source each hands to HashCheck; then the real
// HashCheck resolves that source against a store holding the decoded key.
func TestNormalizeTriggers(t *testing.T) {
	cases := []struct {
		file       string
		source     migration.Source // what Normalize produces
		resolved   string           // the object key HashCheck finds
		dataset    string           // after HashCheck's defaults
		rawPresent bool             // the store also holds the undecoded key
	}{
		{"s3-put-notification.json", migration.Source{Bucket: "geo-archive-src", Key: "survey/2024/M%C3%BCnchen+dem+%281m%29.tif", KeyEncoding: "url"},
			"survey/2024/München dem (1m).tif", "geo-archive-src", false},
		{"eventbridge-object-created.json", migration.Source{Bucket: "geo-archive-src", Key: "parcels/county+parcels.gpkg", KeyEncoding: "url"},
			"parcels/county parcels.gpkg", "geo-archive-src", false},
		{"console-start.json", migration.Source{Bucket: "geo-archive-src", Key: "landcover/lc_2020.img", DatasetID: "landcover"},
			"landcover/lc_2020.img", "landcover", false},
		{"console-start-no-dataset.json", migration.Source{Bucket: "geo-archive-src", Key: "roads/roads.shp"},
			"roads/roads.shp", "geo-archive-src", false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			input, err := events.Files.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			res, payload := normalizeRun(t, input)
			if res.Status != asl.StatusSucceeded {
				t.Fatalf("status %s %s %s", res.Status, res.Error, res.Cause)
			}
			var in migration.HashCheckInput
			if err := decodeStrict(payload, &in); err != nil {
				t.Fatalf("HashCheck payload %s: %v", payload, err)
			}
			if in.Source != c.source {
				t.Errorf("canonical source %+v, want %+v", in.Source, c.source)
			}
			if in.Context.State != "HashCheck" || in.Context.Attempt != 0 || !strings.HasSuffix(in.Context.Execution, ":normalize") {
				t.Errorf("context %+v", in.Context)
			}
			var out struct {
				Status string `json:"status"`
				Reason string `json:"reason"`
			}
			if err := json.Unmarshal(res.Output, &out); err != nil || out.Status != "skipped" || out.Reason != migration.ReasonAlreadyMigrated {
				t.Errorf("output %s", res.Output)
			}

			// The real HashCheck resolves the canonical source.
			ctx := context.Background()
			store := memstore.New("geo-archive-src", "geo-archive-cog")
			put := func(key string) {
				if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "geo-archive-src", Key: key, Body: strings.NewReader("bytes of " + key), Size: -1}); err != nil {
					t.Fatal(err)
				}
			}
			put(c.resolved)
			tracker := statestore.NewTracker(statestoretest.NewMemory())
			hc := migration.NewHashCheck(migration.Config{DestBucket: "geo-archive-cog"}, store, tracker,
				migration.StoreFingerprinter{Store: store}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			got, err := localrun.LambdaFunc(hc.Handle)(ctx, payload)
			if err != nil {
				t.Fatalf("HashCheck: %v", err)
			}
			var hout migration.HashCheckOutput
			if err := json.Unmarshal(got, &hout); err != nil {
				t.Fatal(err)
			}
			want := migration.Source{Bucket: "geo-archive-src", Key: c.resolved, KeyEncoding: "plain", DatasetID: c.dataset}
			if hout.Source != want || hout.Job.SourceKey != c.resolved || hout.Decision != migration.DecisionConvert {
				t.Errorf("HashCheck resolved %+v (job key %q, decision %s), want %+v", hout.Source, hout.Job.SourceKey, hout.Decision, want)
			}
		})
	}
}

// TestNormalizeRawKeyFallback: an event source that did not URL-encode
// ("a+b.tif" is the real key) still resolves, to the raw key.
func TestNormalizeRawKeyFallback(t *testing.T) {
	ctx := context.Background()
	store := memstore.New("b", "d")
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "a+b.tif", Body: strings.NewReader("x"), Size: 1}); err != nil {
		t.Fatal(err)
	}
	hc := migration.NewHashCheck(migration.Config{DestBucket: "d"}, store, statestore.NewTracker(statestoretest.NewMemory()),
		migration.StoreFingerprinter{Store: store}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	out, err := hc.Handle(ctx, migration.HashCheckInput{Source: migration.Source{Bucket: "b", Key: "a+b.tif", KeyEncoding: "url"}, Context: migration.Invocation{Execution: "e"}})
	if err != nil || out.Source.Key != "a+b.tif" {
		t.Errorf("resolved %q, %v; want the raw key a+b.tif", out.Source.Key, err)
	}
}

func TestUnrecognizedInputFails(t *testing.T) {
	// No shape matches: the execution fails with Input.Unrecognized before
	// any work (the manual shape is recognized by IsPresent, which, unlike
	// IsString, tolerates a missing member).
	for _, in := range []string{`{"Records":[]}`, `{"key": "k"}`, `{}`} {
		res, payload := normalizeRun(t, []byte(in))
		if res.Status != asl.StatusFailed || res.Error != "Input.Unrecognized" || payload != nil {
			t.Errorf("%s: status %s error %s cause %s payload %s", in, res.Status, res.Error, res.Cause, payload)
		}
	}
	// A manual shape with a wrong type reaches HashCheck, whose input
	// decoding refuses it (and the failure is classified and routed).
	if _, payload := normalizeRun(t, []byte(`{"bucket": 7, "key": "k"}`)); payload == nil {
		t.Error("manual input with a numeric bucket did not reach HashCheck")
	}
}

// TestClassifyErrorPayloads: the Step Functions error samples classify as
// the error contract says, and a function error's Cause is the Lambda error
// JSON Classify reads the message and attempt from.
func TestClassifyErrorPayloads(t *testing.T) {
	want := map[string]struct {
		tier, route, code string
		attempts          int
		jsonCause         bool
	}{
		"classify-data-error.json":           {"data_specific", migration.RouteRemediation, "MissingCRS", 1, true},
		"classify-transient-exhausted.json":  {"transient", migration.RouteDeadLetter, "", 5, true},
		"classify-lambda-service-error.json": {"transient", migration.RouteDeadLetter, "", 0, false},
	}
	tracker := statestore.NewTracker(statestoretest.NewMemory())
	cl := migration.NewClassify(tracker, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			raw, err := events.Files.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var in migration.ClassifyInput
			if err := decodeStrict(raw, &in); err != nil {
				t.Fatal(err)
			}
			var lc struct{ ErrorMessage, ErrorType string }
			isJSON := json.Unmarshal([]byte(in.Error.Cause), &lc) == nil && lc.ErrorType == in.Error.Error
			if isJSON != w.jsonCause {
				t.Errorf("Cause is Lambda error JSON with errorType = Error: %v, want %v", isJSON, w.jsonCause)
			}
			out, err := cl.Handle(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Tier != w.tier || out.Route != w.route || out.Message.Code != w.code || out.Message.Attempts != w.attempts {
				t.Errorf("got tier %s route %s code %s attempts %d; want %+v", out.Tier, out.Route, out.Message.Code, out.Message.Attempts, w)
			}
		})
	}
}

// TestFolderMarkerEventIsSkipped (docs/decisions/0016): a console "Create
// folder" marker arriving as an EventBridge Object Created event runs
// Normalize → HashCheck (the real one) and ends skipped with a reason, not
// in remediation.
func TestFolderMarkerEventIsSkipped(t *testing.T) {
	raw, err := events.Files.ReadFile("eventbridge-object-created.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	obj := ev["detail"].(map[string]any)["object"].(map[string]any)
	obj["key"], obj["size"] = "parcels/new+folder/", 0
	input, _ := json.Marshal(ev)

	ctx := context.Background()
	store := memstore.New("geo-archive-src", "geo-archive-cog")
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "geo-archive-src", Key: "parcels/new folder/", Body: strings.NewReader(""), Size: 0}); err != nil {
		t.Fatal(err)
	}
	hc := migration.NewHashCheck(migration.Config{DestBucket: "geo-archive-cog"}, store, statestore.NewTracker(statestoretest.NewMemory()),
		migration.StoreFingerprinter{Store: store}, slog.New(slog.DiscardHandler))
	sm, err := localrun.ParsedMigrate()
	if err != nil {
		t.Fatal(err)
	}
	res, err := asl.NewExecutor(sm, asl.WithLambda(localrun.HashCheckFunction, localrun.LambdaFunc(hc.Handle))).Run(ctx, "marker", input)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Status, Reason string }
	if res.Status != asl.StatusSucceeded || json.Unmarshal(res.Output, &out) != nil || out.Status != "skipped" || out.Reason != migration.ReasonFolderMarker {
		t.Fatalf("execution %s %s %s, output %s; want skipped/%s", res.Status, res.Error, res.Cause, res.Output, migration.ReasonFolderMarker)
	}
}

// TestExecutionFailedSample: the sample event closes the job its execution
// claimed (HashCheck over the sample's own input, as that execution), and
// the dead-letter message carries the execution ARN.
func TestExecutionFailedSample(t *testing.T) {
	raw, err := events.Files.ReadFile("executionfailed-timed-out.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev migration.ExecutionStatusChange
	if err := decodeStrict(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := memstore.New("geo-archive-src", "geo-archive-cog")
	if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "geo-archive-src", Key: "dem/elevation.asc", Body: strings.NewReader("ncols 1\n"), Size: -1}); err != nil {
		t.Fatal(err)
	}
	tracker := statestore.NewTracker(statestoretest.NewMemory())
	cfg := migration.Config{DestBucket: "geo-archive-cog"}
	hc := migration.NewHashCheck(cfg, store, tracker, migration.StoreFingerprinter{Store: store}, slog.New(slog.DiscardHandler))
	src, ok := migration.SourceFromExecutionInput([]byte(*ev.Detail.Input))
	if !ok {
		t.Fatalf("no source in %s", *ev.Detail.Input)
	}
	claimed, err := hc.Handle(ctx, migration.HashCheckInput{Source: src, Context: migration.Invocation{Execution: ev.Detail.ExecutionArn, State: "HashCheck"}})
	if err != nil || claimed.Decision != migration.DecisionConvert {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	var sent []string
	dlq := sendFunc(func(_ context.Context, body string) (string, error) { sent = append(sent, body); return "m1", nil })
	h := migration.NewExecutionFailed(cfg, store, tracker, dlq, slog.New(slog.DiscardHandler)).ForStateMachine(ev.Detail.StateMachineArn)
	out, err := h.Handle(ctx, ev)
	if err != nil || out.Outcome != migration.EndedClosed || out.JobID != claimed.Job.ID || len(sent) != 1 {
		t.Fatalf("outcome %+v %v, %d messages", out, err, len(sent))
	}
	var m migration.RouteMessage
	if err := json.Unmarshal([]byte(sent[0]), &m); err != nil || m.Execution != ev.Detail.ExecutionArn || m.Error != "States.Timeout" || m.Replay != claimed.Source {
		t.Fatalf("message %s (%v)", sent[0], err)
	}
	if rec, _ := tracker.Get(ctx, claimed.Job.ID); rec.Status != statestore.Quarantined {
		t.Fatalf("record %s", rec.Status)
	}
}

type sendFunc func(ctx context.Context, body string) (string, error)

func (f sendFunc) Send(ctx context.Context, body string) (string, error) { return f(ctx, body) }
