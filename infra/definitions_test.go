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

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/statemachine"
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
	if got := strings.Join(Placeholders(text), ","); got != "DeadLetterQueueUrl,MigrateStateMachineArn,PolicyParameterName,ResultsBucket,SourceBucket,SourcePrefixRules" {
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
		var child map[string]any
		for _, v := range proc["States"].(map[string]any) {
			if v.(map[string]any)["Resource"] == "arn:aws:states:::states:startExecution.sync:2" {
				child = v.(map[string]any)
			}
		}
		// An inventory's keys are URL-encoded: the child is told so, and
		// HashCheck decodes (docs/decisions/0100); a listing's are plain.
		input := `{"bucket.$":"$.bucket","dataset_id.$":"$.dataset_id","key.$":"$.key"}`
		if reader["Resource"] == "arn:aws:states:::s3:getObject" {
			input = `{"bucket.$":"$.bucket","dataset_id.$":"$.dataset_id","key.$":"$.key","key_encoding.$":"$.key_encoding"}`
			if sel["key_encoding"] != "url" {
				t.Errorf("%s: item selector %s does not mark the inventory's keys as URL-encoded", name, js(sel))
			}
		}
		if child["Resource"] != "arn:aws:states:::states:startExecution.sync:2" ||
			js(child["Parameters"]) != `{"Input":`+input+`,"StateMachineArn":"${MigrateStateMachineArn}"}` {
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

// expressBackfill builds the EXPRESS variant from the repository's files, expanded as the stack
// expands them.
func expressBackfill(t *testing.T) map[string]any {
	t.Helper()
	root := repoRoot(t)
	mig, err := LoadDefinition(filepath.Join(root, "statemachine", "migrate.asl.json"), MigratePlaceholders)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := LoadDefinition(filepath.Join(root, "statemachine", "backfill.asl.json"), BackfillPlaceholders)
	if err != nil {
		t.Fatal(err)
	}
	m, err := statemachine.ExpandMigrate([]byte(mig), statemachine.DefaultTaskTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := statemachine.ExpandBackfill([]byte(bf), []string{"incoming/"})
	if err != nil {
		t.Fatal(err)
	}
	lambdaOnly, err := WithoutContainerPath(string(m))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExpressBackfill(string(b), lambdaOnly)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, p := range Placeholders(out) {
		vars[p] = "stand-in-" + p
	}
	sub, err := Substitute(out, vars)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asl.Parse([]byte(sub)); err != nil {
		t.Fatalf("EXPRESS backfill does not parse strictly: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(sub), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestExpressBackfillPrefixesInlinedStates(t *testing.T) {
	doc := expressBackfill(t)
	if dup := duplicateStateNames(doc); len(dup) > 0 {
		t.Fatalf("duplicate state names %v", dup)
	}
	for mapName, label := range map[string]string{"BackfillFromPrefix": "BackfillPrefix", "BackfillFromManifest": "BackfillManifest"} {
		proc := doc["States"].(map[string]any)[mapName].(map[string]any)["ItemProcessor"].(map[string]any)
		states := proc["States"].(map[string]any)
		if js(proc["ProcessorConfig"]) != `{"ExecutionType":"EXPRESS","Mode":"DISTRIBUTED"}` {
			t.Errorf("%s: processor config %s", mapName, js(proc["ProcessorConfig"]))
		}
		for name := range states {
			if strings.Contains(name, "MigrateObject") || strings.Contains(name, "ItemFailed") {
				t.Errorf("%s: %s should be replaced by the inlined workflow", mapName, name)
			}
		}
		for _, name := range []string{"Normalize", "HashCheck", "Convert", "Promote", "Classify", "Completed", "RoutedToDeadLetter"} {
			if _, ok := states[label+name]; !ok {
				t.Errorf("%s: no inlined state %s", mapName, label+name)
			}
		}
		// The folder-marker gate now leads into the inlined workflow.
		var gate map[string]any
		for _, v := range states {
			if st := v.(map[string]any); st["Type"] == "Choice" && strings.Contains(js(st), `"StringMatches":"*/"`) {
				gate = st
			}
		}
		if gate == nil || gate["Default"] != label+"Normalize" {
			t.Errorf("%s: folder-marker gate %s, want Default %sNormalize", mapName, js(gate), label)
		}
		// Every transition stays inside the processor and carries the prefix.
		for name, v := range states {
			for _, next := range transitions(v.(map[string]any)) {
				if _, ok := states[next]; !ok {
					t.Errorf("%s: %s goes to %s, which is not in the processor", mapName, name, next)
				}
			}
		}
		// Handlers see the migrate workflow's own state names.
		hc := js(states[label+"HashCheck"].(map[string]any)["Parameters"])
		if !strings.Contains(hc, `"state":"HashCheck"`) || strings.Contains(hc, "$$.State.Name") {
			t.Errorf("%s: HashCheck context %s", mapName, hc)
		}
	}
	if !strings.Contains(js(doc), `"TimeoutSeconds":900`) {
		t.Error("inlined tasks lost their expanded timeouts")
	}
}

func TestExpressBackfillErrors(t *testing.T) {
	migrate := `{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}`
	proc := func(label, states string) string {
		return `{"StartAt":"M","States":{"M":{"Type":"Map",` + label + `"ItemProcessor":{"StartAt":"S","States":` + states + `},"End":true}}}`
	}
	start := `{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","End":true}}`
	for name, tt := range map[string]struct{ backfill, migrate, want string }{
		"no label":          {proc("", start), migrate, "no Label"},
		"no child start":    {proc(`"Label":"L",`, `{"S":{"Type":"Succeed"}}`), migrate, "no startExecution task"},
		"name clash":        {proc(`"Label":"L",`, `{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","Next":"LA"},"LA":{"Type":"Succeed"}}`), migrate, "LA"},
		"sync in migrate":   {proc(`"Label":"L",`, start), `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","End":true}}}`, ".sync"},
		"nested in migrate": {proc(`"Label":"L",`, start), `{"StartAt":"A","States":{"A":{"Type":"Parallel","Branches":[],"End":true}}}`, "nested"},
		"no processor":      {`{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}`, migrate, "no ItemProcessor"},
	} {
		if _, err := ExpressBackfill(tt.backfill, tt.migrate); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tt.want)
		}
	}
}

// TestWithoutContainerPath: the EXPRESS variant's migrate workflow keeps
// every state but the container path, and every Choice still has a rule;
// the full definition is refused by ExpressBackfill (it runs .sync).
func TestWithoutContainerPath(t *testing.T) {
	root := repoRoot(t)
	mig, err := LoadDefinition(filepath.Join(root, "statemachine", "migrate.asl.json"), MigratePlaceholders)
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithoutContainerPath(mig)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "ConvertInContainer") || strings.Contains(out, ".sync") || strings.Contains(out, "ecs:") {
		t.Fatalf("container path left in %s", out)
	}
	var before, after struct{ States map[string]json.RawMessage }
	_ = json.Unmarshal([]byte(mig), &before)
	_ = json.Unmarshal([]byte(out), &after)
	if len(after.States) != len(before.States)-1 {
		t.Fatalf("%d states left of %d, want all but ConvertInContainer", len(after.States), len(before.States))
	}
	if !strings.Contains(string(after.States["ChooseEngine"]), `"Default":"Convert"`) {
		t.Fatalf("ChooseEngine = %s", after.States["ChooseEngine"])
	}
	if _, err := WithoutContainerPath(out); err == nil {
		t.Fatal("a definition without the container path was accepted twice")
	}
	if _, err := ExpressBackfill(`{"StartAt":"x","States":{}}`, mig); err == nil || !strings.Contains(err.Error(), ".sync") {
		t.Fatalf("ExpressBackfill accepted the container path: %v", err)
	}
}
