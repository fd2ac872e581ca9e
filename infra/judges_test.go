package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/asljudge"
)

// synthVariants are the context variants infra supports that change the state machines: the
// backfill's child execution type, and a scope and timeouts other than the defaults. Each is
// synthesized once (the synth cache is keyed by context) and judged whole.
var synthVariants = map[string]map[string]any{
	"STANDARD children": nil,
	"EXPRESS children":  {"backfillChildExecutionType": "EXPRESS", "convertTimeoutSeconds": "240"},
	"EXPRESS, two prefixes, short timeouts": {"backfillChildExecutionType": "EXPRESS", "convertTimeoutSeconds": "200",
		"hashcheckTimeoutSeconds": "120", "leaseSeconds": "1000", "sourcePrefixes": `["raw/", "legacy/gis/"]`},
}

func variantNames() []string {
	var names []string
	for n := range synthVariants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// stateMachineDefinitions renders every state machine of a synthesized template to JSON text.
func stateMachineDefinitions(t *testing.T, b *built) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id := range b.resources("AWS::StepFunctions::StateMachine") {
		text, _ := definition(t, b, id)
		out[id] = text
	}
	if len(out) < 2 {
		t.Fatalf("want the migrate and backfill state machines, got %d", len(out))
	}
	return out
}

func requireJudges(t *testing.T) *asljudge.Judges {
	t.Helper()
	j, err := asljudge.Find(repoRoot(t))
	if errors.Is(err, asljudge.ErrNotInstalled) && os.Getenv(asljudge.RequireEnv) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestSynthesizedDefinitionsPassTheJudges: every definition in every synthesized variant parses
// strictly in the project's executor (unique state names included) and passes asl-validator and
// statelint, the statelint complaints listed in asljudge.FalsePositives aside.
func TestSynthesizedDefinitionsPassTheJudges(t *testing.T) {
	j := requireJudges(t)
	for _, variant := range variantNames() {
		b := synth(t, synthVariants[variant])
		for id, text := range stateMachineDefinitions(t, b) {
			t.Run(variant+"/"+id, func(t *testing.T) {
				if _, err := asl.Parse([]byte(text)); err != nil {
					t.Errorf("strict parse: %v", err)
				}
				v, err := j.Judge(context.Background(), []byte(text))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range v.Errors {
					t.Error(e)
				}
				t.Logf("%d statelint complaints allowed as false positives", len(v.Allowed))
			})
		}
	}
}

// cfnLintErrors is the error bit of cfn-lint's exit status (a bit mask: 2 errors, 4 warnings,
// 8 informational).
const cfnLintErrors = 2

// cfnLint runs cfn-lint on a template: errors fail the test, warnings are logged.
func cfnLint(t *testing.T, lint, path, what string) (failed bool, out string) {
	t.Helper()
	raw, err := exec.Command(lint, "--format", "parseable", "--", path).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return false, string(raw)
	case errors.As(err, &exit) && exit.ExitCode()&cfnLintErrors == 0 && exit.ExitCode() > 1:
		t.Logf("%s: cfn-lint warnings or notes:\n%s", what, raw)
		return false, string(raw)
	case errors.As(err, &exit) && exit.ExitCode()&cfnLintErrors != 0:
		return true, string(raw)
	default:
		t.Fatalf("%s: cfn-lint did not run: %v\n%s", what, err, raw)
		return true, ""
	}
}

func requireCfnLint(t *testing.T) string {
	t.Helper()
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		msg := "cfn-lint not found: install it with  pip install cfn-lint==1.51.0"
		if os.Getenv(asljudge.RequireEnv) == "" {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return lint
}

// TestSynthesizedTemplatesPassCfnLint runs the AWS CloudFormation linter on every synthesized
// variant's template; any error fails, warnings are logged.
func TestSynthesizedTemplatesPassCfnLint(t *testing.T) {
	lint := requireCfnLint(t)
	dir := t.TempDir()
	for i, variant := range variantNames() {
		b := synth(t, synthVariants[variant])
		raw, err := json.MarshalIndent(b.tpl, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("variant%d.template.json", i))
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if failed, out := cfnLint(t, lint, path, variant); failed {
			t.Errorf("%s: cfn-lint errors:\n%s", variant, out)
		}
	}
}

// TestCfnLintCanFail: the default template with one function's runtime broken must fail.
func TestCfnLintCanFail(t *testing.T) {
	lint := requireCfnLint(t)
	b := defaultStack(t)
	raw, err := json.Marshal(b.tpl)
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	id, _ := b.one(t, "AWS::Lambda::Function", "ConvertFunction")
	tpl["Resources"].(map[string]any)[id].(map[string]any)["Properties"].(map[string]any)["Runtime"] = "go0.x"
	path := filepath.Join(t.TempDir(), "broken.template.json")
	raw, _ = json.Marshal(tpl)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if failed, out := cfnLint(t, lint, path, "broken runtime"); !failed || !strings.Contains(out, "go0.x") {
		t.Errorf("cfn-lint accepted a function with runtime go0.x:\n%s", out)
	}
}

var getAttFunction = regexp.MustCompile(`^<GetAtt:(\w+)\.Arn>$`)

// TestTaskTimeoutsWithinFunctionTimeoutAndLease: a Lambda task's timeout is at most its
// function's (task <= function) and the function ends before the job's lease does (function <
// lease), so no second execution can claim a job while an invocation still runs. Checked in
// every variant, the inlined EXPRESS children too.
func TestTaskTimeoutsWithinFunctionTimeoutAndLease(t *testing.T) {
	for _, variant := range variantNames() {
		b := synth(t, synthVariants[variant])
		checked := 0
		for id, text := range stateMachineDefinitions(t, b) {
			sm, err := asl.Parse([]byte(text))
			if err != nil {
				t.Fatalf("%s %s: %v", variant, id, err)
			}
			sm.Walk(func(_ []string, name string, st *asl.State) {
				if st.Type != "Task" || st.Resource != "arn:aws:states:::lambda:invoke" {
					return
				}
				var p struct{ FunctionName string }
				if err := json.Unmarshal(st.Parameters, &p); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				m := getAttFunction.FindStringSubmatch(p.FunctionName)
				if m == nil {
					t.Fatalf("%s %s: FunctionName %q is not a function of this stack", variant, name, p.FunctionName)
				}
				fn, ok := b.resources("AWS::Lambda::Function")[m[1]]
				if !ok {
					t.Fatalf("%s %s: no function %s", variant, name, m[1])
				}
				props := fn["Properties"].(map[string]any)
				fnTimeout := int(props["Timeout"].(float64))
				env := props["Environment"].(map[string]any)["Variables"].(map[string]any)
				lease, err := strconv.Atoi(fmt.Sprint(env["GEOMIGRATE_LEASE_SECONDS"]))
				if err != nil {
					t.Fatalf("%s %s: lease %v", variant, m[1], env["GEOMIGRATE_LEASE_SECONDS"])
				}
				checked++
				if st.TimeoutSeconds <= 0 || st.TimeoutSeconds > fnTimeout || fnTimeout >= lease {
					t.Errorf("%s %s %s: task timeout %d s, function timeout %d s, lease %d s: want 0 < task <= function < lease",
						variant, id, name, st.TimeoutSeconds, fnTimeout, lease)
				}
			})
		}
		want := 4 // migrate's four Lambda tasks
		if synthVariants[variant]["backfillChildExecutionType"] == "EXPRESS" {
			want += 2 * 4 // inlined in both backfill processors
			want += 2     // and executionfailed after each Map
		}
		if checked != want {
			t.Errorf("%s: %d Lambda tasks checked, want %d", variant, checked, want)
		}
	}
}

// The judges ride on the synthesized text: a duplicate name there must be caught. This feeds the
// EXPRESS backfill with one inlined state renamed to clash with another.
func TestJudgesRejectASynthesizedDuplicate(t *testing.T) {
	j := requireJudges(t)
	b := synth(t, synthVariants["EXPRESS children"])
	text, _ := definition(t, b, "BackfillStateMachine")
	bad := strings.Replace(text, `"BackfillManifestHashCheck"`, `"BackfillPrefixHashCheck"`, -1)
	if bad == text {
		t.Fatal("the EXPRESS backfill has no BackfillManifestHashCheck state")
	}
	if _, err := asl.Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "BackfillPrefixHashCheck") {
		t.Errorf("strict parse accepted the duplicate: %v", err)
	}
	v, err := j.Judge(context.Background(), []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() || !strings.Contains(strings.Join(v.Errors, "\n"), "BackfillPrefixHashCheck") {
		t.Errorf("judges accepted a duplicate state name: %q", v.Errors)
	}
}
