package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// One jsii process for the whole package: jsii.Close once, in TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	for _, a := range builtAssets {
		a.Cleanup()
	}
	os.Exit(code)
}

var (
	builtMu     sync.Mutex
	builtAssets []*Assets
	builtCache  = map[string]*built{}
)

type built struct {
	st       *Stack
	template assertions.Template
	tpl      map[string]any
}

// migrateStandIn is used only while statemachine/migrate.asl.json does not exist yet.
const migrateStandIn = `{"Comment":"stand-in","StartAt":"HashCheck","States":{
"HashCheck":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${HashCheckFunctionArn}","Payload.$":"$"},"Next":"Convert"},
"Convert":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${ConvertFunctionArn}","Payload.$":"$"},"Next":"Promote"},
"Promote":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${PromoteFunctionArn}","Payload.$":"$"},"Next":"Classify"},
"Classify":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${ClassifyFunctionArn}","Payload.$":"$"},"Next":"Rem"},
"Rem":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"${RemediationQueueUrl}","MessageBody.$":"$"},"Next":"Dlq"},
"Dlq":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"${DeadLetterQueueUrl}","MessageBody.$":"$"},"End":true}}}`

func repoRoot(t testing.TB) string {
	t.Helper()
	r, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// baseContext: stand-in assets (no build needed) and the migrate definition or its stand-in.
func baseContext(t testing.TB) map[string]any {
	ctx := map[string]any{"placeholderAssets": "true", "buildDir": filepath.Join(os.TempDir(), "geomigrate-infra-test-no-build")}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "statemachine", "migrate.asl.json")); err != nil {
		p := filepath.Join(os.TempDir(), "geomigrate-migrate-standin.asl.json")
		if err := os.WriteFile(p, []byte(migrateStandIn), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx["migrateDefinition"] = p
	}
	return ctx
}

// synth builds (once per distinct context) the app and returns the stack and its template.
func synth(t testing.TB, extra map[string]any) *built {
	t.Helper()
	ctx := baseContext(t)
	for k, v := range extra {
		ctx[k] = v
	}
	keyb, _ := json.Marshal(ctx)
	builtMu.Lock()
	defer builtMu.Unlock()
	if b, ok := builtCache[string(keyb)]; ok {
		return b
	}
	_, st, assets, err := NewApp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	builtAssets = append(builtAssets, assets)
	tmpl := assertions.Template_FromStack(st.Stack, nil)
	raw, _ := json.Marshal(tmpl.ToJSON())
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	b := &built{st: st, template: tmpl, tpl: tpl}
	builtCache[string(keyb)] = b
	return b
}

func defaultStack(t testing.TB) *built { return synth(t, nil) }

// must turns an assertions panic (AssertionError) into a test failure.
func must(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

func (b *built) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range b.tpl["Resources"].(map[string]any) {
		rm := r.(map[string]any)
		if rm["Type"] == typ {
			out[id] = rm
		}
	}
	return out
}

// one returns the single resource of typ whose logical ID starts with prefix.
func (b *built) one(t *testing.T, typ, prefix string) (string, map[string]any) {
	t.Helper()
	var ids []string
	for id := range b.resources(typ) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want exactly one %s with logical ID %s*, got %v", typ, prefix, ids)
	}
	r := b.resources(typ)[ids[0]]
	props, _ := r["Properties"].(map[string]any)
	return ids[0], props
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// render flattens a CloudFormation value to a string: intrinsics become <Ref:X> / <GetAtt:X.Attr>.
func render(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		if r, ok := t["Ref"]; ok {
			return fmt.Sprintf("<Ref:%v>", r)
		}
		if g, ok := t["Fn::GetAtt"].([]any); ok {
			return fmt.Sprintf("<GetAtt:%v.%v>", g[0], g[1])
		}
		if j, ok := t["Fn::Join"].([]any); ok {
			parts := j[1].([]any)
			var sb strings.Builder
			for i, p := range parts {
				if i > 0 {
					sb.WriteString(j[0].(string))
				}
				sb.WriteString(render(p))
			}
			return sb.String()
		}
		return js(t)
	default:
		return js(t)
	}
}

// statements returns the policy statements attached to the role whose logical ID starts with rolePrefix.
func (b *built) statements(t *testing.T, rolePrefix string) []map[string]any {
	t.Helper()
	roleID, _ := b.one(t, "AWS::IAM::Role", rolePrefix)
	var out []map[string]any
	for _, p := range b.resources("AWS::IAM::Policy") {
		props := p["Properties"].(map[string]any)
		attached := false
		for _, r := range props["Roles"].([]any) {
			if render(r) == "<Ref:"+roleID+">" {
				attached = true
			}
		}
		if !attached {
			continue
		}
		for _, s := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no policy statements for role %s", roleID)
	}
	return out
}

func list(v any) []string {
	switch t := v.(type) {
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, render(e))
		}
		return out
	case nil:
		return nil
	default:
		return []string{render(t)}
	}
}

// grants flattens statements into "action on resource" strings, sorted.
func grants(stmts []map[string]any) []string {
	var out []string
	for _, s := range stmts {
		if s["Effect"] != "Allow" {
			continue
		}
		for _, a := range list(s["Action"]) {
			for _, r := range list(s["Resource"]) {
				out = append(out, a+" on "+r)
			}
		}
	}
	sort.Strings(out)
	return out
}
