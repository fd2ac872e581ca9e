package samenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tpl = `{"Resources": {
 "Jobs1A2B3C4D": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
 "Named5E6F7A8B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "fixed-bucket"}},
 "Work9C0D1E2F": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Join": ["-", ["app", "work"]]}}},
 "Flow3A4B5C6D": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"StateMachineName": "flow"}},
 "Alarm7E8F9A0B": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
 "HandlerFunctionAABBCCDD": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
   "TABLE": {"Ref": "Jobs1A2B3C4D"},
   "TABLE_ARN": {"Fn::GetAtt": ["Jobs1A2B3C4D", "Arn"]},
   "BUCKET": {"Ref": "Named5E6F7A8B"},
   "BUCKET_OBJECTS": {"Fn::Sub": "${Named5E6F7A8B.Arn}/in/*"},
   "QUEUE_URL": {"Ref": "Work9C0D1E2F"},
   "QUEUE_ARN": {"Fn::GetAtt": ["Work9C0D1E2F", "Arn"]},
   "FLOW": {"Ref": "Flow3A4B5C6D"},
   "REGION": {"Ref": "AWS::Region"},
   "PLAIN": "as-is"}}}},
 "OtherFunction11223344": {"Type": "AWS::Lambda::Function", "Properties": {}}
}}`

func TestResolve(t *testing.T) {
	tp, err := Parse([]byte(tpl))
	if err != nil {
		t.Fatal(err)
	}
	n := Names{Region: "eu-west-1", Account: "111122223333", StackName: "App"}
	res, err := tp.Resolve(n)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"TABLE":          "app-jobs",
		"TABLE_ARN":      "arn:aws:dynamodb:eu-west-1:111122223333:table/app-jobs",
		"BUCKET":         "fixed-bucket",
		"BUCKET_OBJECTS": "arn:aws:s3:::fixed-bucket/in/*",
		"QUEUE_URL":      "https://sqs.eu-west-1.amazonaws.com/111122223333/app-work",
		"QUEUE_ARN":      "arn:aws:sqs:eu-west-1:111122223333:app-work",
		"FLOW":           "arn:aws:states:eu-west-1:111122223333:stateMachine:flow",
		"REGION":         "eu-west-1",
	}
	got := res.Env["HandlerFunctionAABBCCDD"]
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["PLAIN"]; ok || len(got) != len(want) {
		t.Errorf("only intrinsic values belong in the file: %v", got)
	}
	if _, ok := res.Env["OtherFunction11223344"]; ok {
		t.Error("a function without intrinsic variables got an entry")
	}
	if len(res.Defaulted) != 1 || !strings.HasPrefix(res.Defaulted[0], "Jobs1A2B3C4D → app-jobs") {
		t.Errorf("defaulted: %v", res.Defaulted)
	}

	// Physical IDs (describe-stack-resources or -name) win over defaults; -set wins over all.
	n.Physical = map[string]string{"Jobs": "deployed-jobs", "Work9C0D1E2F": "http://127.0.0.1:5000/111122223333/deployed-work"}
	n.Set = map[string]string{"BUCKET": "override", "PLAIN": "changed"}
	res, err = tp.Resolve(n)
	if err != nil {
		t.Fatal(err)
	}
	got = res.Env["HandlerFunctionAABBCCDD"]
	for k, v := range map[string]string{
		"TABLE": "deployed-jobs", "TABLE_ARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/deployed-jobs",
		"QUEUE_URL": "http://127.0.0.1:5000/111122223333/deployed-work", "QUEUE_ARN": "arn:aws:sqs:eu-west-1:111122223333:deployed-work",
		"BUCKET": "override", "PLAIN": "changed",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(res.Defaulted) != 0 {
		t.Errorf("nothing should be defaulted: %v", res.Defaulted)
	}
}

func TestResolveRefusesWhatItCannotName(t *testing.T) {
	tp, err := Parse([]byte(`{"Resources": {
 "Alarm7E8F9A0B": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
 "FnFunctionAABBCCDD": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {
   "ALARM": {"Ref": "Alarm7E8F9A0B"}, "GONE": {"Ref": "Missing"}, "ODD": {"Fn::GetAtt": ["Alarm7E8F9A0B", "Arn"]}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tp.Resolve(Names{Region: "eu-west-1", Account: "111122223333"})
	if err == nil {
		t.Fatal("unresolvable references accepted")
	}
	for _, want := range []string{"ALARM", "GONE", "ODD", "SAM_NAMES=Alarm=..."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// Given by hand, the same reference resolves.
	res, err := tp.Resolve(Names{Region: "eu-west-1", Account: "111122223333", Set: map[string]string{"GONE": "x", "ODD": "y"},
		Physical: map[string]string{"Alarm": "my-alarm"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Env["FnFunctionAABBCCDD"]["ALARM"] != "my-alarm" {
		t.Errorf("%v", res.Env)
	}
}

func TestFunctionID(t *testing.T) {
	tp, err := Parse([]byte(tpl))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"handler": "HandlerFunctionAABBCCDD", "HandlerFunction": "HandlerFunctionAABBCCDD",
		"HandlerFunctionAABBCCDD": "HandlerFunctionAABBCCDD", "other": "OtherFunction11223344",
	} {
		if got, err := tp.FunctionID(in); err != nil || got != want {
			t.Errorf("FunctionID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := tp.FunctionID("jobs"); err == nil || !strings.Contains(err.Error(), "HandlerFunctionAABBCCDD") {
		t.Errorf("a non-function must be refused with the list of functions: %v", err)
	}
}

func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"sam", "--event", "a b.json", "it's", ""})
	if want := `sam --event 'a b.json' 'it'\''s' ''`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
}

func TestLoadStackResources(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resources.json")
	// The shape of `aws cloudformation describe-stack-resources` output.
	doc := `{"StackResources": [
 {"StackName": "App", "LogicalResourceId": "Jobs1A2B3C4D", "PhysicalResourceId": "App-Jobs1A2B3C4D-XYZ", "ResourceType": "AWS::DynamoDB::Table", "ResourceStatus": "CREATE_COMPLETE"},
 {"StackName": "App", "LogicalResourceId": "Layer", "ResourceType": "AWS::Lambda::LayerVersion", "ResourceStatus": "CREATE_COMPLETE"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadStackResources(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m["Jobs1A2B3C4D"] != "App-Jobs1A2B3C4D-XYZ" {
		t.Errorf("%v", m)
	}
	if err := os.WriteFile(p, []byte(`{"Stacks": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadStackResources(p); err == nil {
		t.Error("a file without StackResources accepted")
	}
}
