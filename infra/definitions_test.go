package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func TestSubstitute(t *testing.T) {
	def := `{"Comment":"placeholders ${...} are substituted","States":{"A":{"Parameters":{"FunctionName":"${Fn}","Q":"${Queue}"}}}}`
	out, err := Substitute(def, map[string]string{"Fn": "arn:fn", "Queue": "https://q"})
	if err != nil || !strings.Contains(out, `"FunctionName":"arn:fn"`) || !strings.Contains(out, `"Q":"https://q"`) {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := Substitute(def, map[string]string{"Fn": "x"}); err == nil {
		t.Error("a placeholder without a value was accepted")
	}
	if _, err := Substitute(def, map[string]string{"Fn": "x", "Queue": "y", "Extra": "z"}); err == nil {
		t.Error("a value without a placeholder was accepted")
	}
	if _, err := Substitute(`{"States":{"A":{"Parameters":{"X":"${not closed"}}}}`, nil); err == nil {
		t.Error("a stray ${ was accepted")
	}
	if LeftoverDollarBrace(`{"Comment":"${x}","States":{}}`) != "" {
		t.Error("Comment fields are prose and are skipped")
	}
	if w := LeftoverDollarBrace(`{"States":{"A":{"Result":"${x}"}}}`); w != "$.States.A.Result" {
		t.Errorf("leftover at %q", w)
	}
}

func readBackfill(t *testing.T) (string, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "statemachine", "backfill.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return string(b), doc
}

// aslFields: the fields the Amazon States Language allows per state type (the subset this
// project uses is checked strictly; the lead's executor parses it strictly too).
var aslFields = map[string][]string{
	"Task":    {"Type", "Comment", "Resource", "Parameters", "ResultSelector", "ResultPath", "InputPath", "OutputPath", "Retry", "Catch", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Credentials", "Next", "End"},
	"Pass":    {"Type", "Comment", "Result", "ResultPath", "Parameters", "InputPath", "OutputPath", "Next", "End"},
	"Choice":  {"Type", "Comment", "Choices", "Default", "InputPath", "OutputPath"},
	"Succeed": {"Type", "Comment", "InputPath", "OutputPath"},
	"Fail":    {"Type", "Comment", "Error", "ErrorPath", "Cause", "CausePath"},
	"Map": {"Type", "Comment", "ItemProcessor", "ItemsPath", "ItemReader", "ItemSelector", "ItemBatcher", "ResultWriter", "MaxConcurrency", "MaxConcurrencyPath",
		"ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "ToleratedFailureCount", "ToleratedFailureCountPath", "Label",
		"ResultPath", "ResultSelector", "InputPath", "OutputPath", "Retry", "Catch", "Next", "End"},
}

func checkKeys(t *testing.T, where string, m map[string]any, allowed ...string) {
	t.Helper()
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	var bad []string
	for k := range m {
		if !ok[k] {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%s: unknown fields %v", where, bad)
	}
}

func walkStates(t *testing.T, where string, states map[string]any, fn func(name string, st map[string]any)) {
	for name, v := range states {
		st := v.(map[string]any)
		fn(where+name, st)
		if p, ok := st["ItemProcessor"].(map[string]any); ok {
			walkStates(t, where+name+" > ", p["States"].(map[string]any), fn)
		}
	}
}

func TestBackfillDefinition(t *testing.T) {
	text, doc := readBackfill(t)
	if got := strings.Join(Placeholders(text), ","); got != "MigrateStateMachineArn,ResultsBucket,SourceBucket" {
		t.Errorf("placeholders %s", got)
	}
	checkKeys(t, "top level", doc, "Comment", "StartAt", "States", "TimeoutSeconds", "Version")
	states := doc["States"].(map[string]any)
	maps := 0
	walkStates(t, "", states, func(name string, st map[string]any) {
		typ, _ := st["Type"].(string)
		allowed, ok := aslFields[typ]
		if !ok {
			t.Errorf("%s: type %q", name, typ)
			return
		}
		checkKeys(t, name, st, allowed...)
		for _, r := range asList(st["Retry"]) {
			checkKeys(t, name+" Retry", r.(map[string]any), "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy")
		}
		for _, c := range asList(st["Catch"]) {
			checkKeys(t, name+" Catch", c.(map[string]any), "ErrorEquals", "Next", "ResultPath")
		}
		if typ == "Task" && (len(asList(st["Retry"])) == 0 || len(asList(st["Catch"])) == 0) {
			t.Errorf("%s: every Task needs Retry and Catch", name)
		}
		if typ != "Map" {
			return
		}
		maps++
		proc := st["ItemProcessor"].(map[string]any)
		checkKeys(t, name+" ItemProcessor", proc, "ProcessorConfig", "StartAt", "States")
		if js(proc["ProcessorConfig"]) != `{"ExecutionType":"STANDARD","Mode":"DISTRIBUTED"}` {
			t.Errorf("%s: ProcessorConfig %s", name, js(proc["ProcessorConfig"]))
		}
		reader := st["ItemReader"].(map[string]any)
		checkKeys(t, name+" ItemReader", reader, "Resource", "Parameters", "ReaderConfig")
		switch reader["Resource"] {
		case "arn:aws:states:::s3:listObjectsV2":
			if js(reader["Parameters"]) != `{"Bucket":"${SourceBucket}","Prefix.$":"$.prefix"}` {
				t.Errorf("%s: listing parameters %s", name, js(reader["Parameters"]))
			}
		case "arn:aws:states:::s3:getObject":
			if js(reader["ReaderConfig"]) != `{"InputType":"MANIFEST"}` {
				t.Errorf("%s: manifest reader config %s", name, js(reader["ReaderConfig"]))
			}
		default:
			t.Errorf("%s: reader %v", name, reader["Resource"])
		}
		if st["MaxConcurrencyPath"] != "$.max_concurrency" || st["ToleratedFailurePercentagePath"] != "$.tolerated_failure_percentage" {
			t.Errorf("%s: concurrency/tolerance not from input", name)
		}
		if js(st["ResultWriter"]) != `{"Parameters":{"Bucket":"${ResultsBucket}","Prefix":"backfill-results/"},"Resource":"arn:aws:states:::s3:putObject"}` {
			t.Errorf("%s: result writer %s", name, js(st["ResultWriter"]))
		}
		sel := st["ItemSelector"].(map[string]any)
		if sel["key.$"] != "$$.Map.Item.Value.Key" || sel["dataset_id.$"] != "$.dataset_id" || (sel["bucket"] == nil && sel["bucket.$"] == nil) {
			t.Errorf("%s: item selector %s", name, js(sel))
		}
		child := proc["States"].(map[string]any)["MigrateObject"].(map[string]any)
		if child["Resource"] != "arn:aws:states:::states:startExecution.sync:2" ||
			js(child["Parameters"]) != `{"Input":{"bucket.$":"$.bucket","dataset_id.$":"$.dataset_id","key.$":"$.key"},"StateMachineArn":"${MigrateStateMachineArn}"}` {
			t.Errorf("%s: child start %s", name, js(child))
		}
	})
	if maps != 2 {
		t.Errorf("want two Distributed Maps (prefix listing, inventory manifest), got %d", maps)
	}
	// Choice between the two item sources, with defaults applied from the input first.
	choice := js(states["ChooseItemSource"])
	if !strings.Contains(choice, `"Variable":"$.manifest"`) || !strings.Contains(choice, `"Variable":"$.prefix"`) {
		t.Errorf("item source choice: %s", choice)
	}
	for state, want := range map[string]string{"DefaultMaxConcurrency": "100", "DefaultToleratedFailure": "100"} {
		if js(states[state].(map[string]any)["Result"]) != want {
			t.Errorf("%s default %s, want %s", state, js(states[state].(map[string]any)["Result"]), want)
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// The cdk-nag wiring really reports: an unencrypted queue without a DLQ fails AwsSolutions.
func TestCdkNagDetectsViolations(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("NagProbe"), nil)
	awssqs.NewQueue(stack, jsii.String("Bad"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	assertions.Template_FromStack(stack, nil)
	errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-SQS[234]")))
	if len(*errs) < 2 {
		t.Errorf("cdk-nag did not report the bad queue: %d errors", len(*errs))
	}
}
