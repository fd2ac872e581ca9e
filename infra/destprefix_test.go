package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/geomigrate/geomigrate/statemachine"
)

// TestFinalKeyGrantsFollowTheDestinationPrefix: hashcheck's and promote's
// grants on final keys are the destination prefix's; with the default
// empty prefix (the whole bucket) staging and the quarantine bundles are
// denied to them explicitly and the synth warns.
func TestFinalKeyGrantsFollowTheDestinationPrefix(t *testing.T) {
	denies := func(stmts []map[string]any) []string {
		var out []string
		for _, s := range stmts {
			if s["Effect"] != "Deny" {
				continue
			}
			for _, a := range list(s["Action"]) {
				for _, r := range list(s["Resource"]) {
					out = append(out, a+" on "+r)
				}
			}
		}
		return out
	}
	const dest = `<GetAtt:DestinationBucket\w+\.Arn>`
	for _, tc := range []struct {
		name  string
		extra map[string]any
		final string // the final keys' resource, as a regexp
		deny  map[string][]string
		warns bool
	}{
		{"empty prefix", nil, dest + `/\*`, map[string][]string{
			"HashcheckRole": {`s3:GetObject on ` + dest + `/_staging/\*`},
			"PromoteRole":   nil,
		}, true},
		{"out/", map[string]any{"destPrefix": "out/"}, dest + `/out/\*`, map[string][]string{"HashcheckRole": nil, "PromoteRole": nil}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := synth(t, tc.extra)
			final := regexp.MustCompile("^" + tc.final + "$")
			for role, wantDeny := range tc.deny {
				stmts := b.statements(t, role)
				found := false
				for _, g := range grants(stmts) {
					if r := g[strings.Index(g, " on ")+4:]; strings.HasPrefix(g, "s3:GetObject on ") && final.MatchString(r) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: no s3:GetObject on %s; grants %v", role, tc.final, grants(stmts))
				}
				got := denies(stmts)
				if len(got) != len(wantDeny) {
					t.Errorf("%s denies %v, want %v", role, got, wantDeny)
					continue
				}
				for _, w := range wantDeny {
					re, ok := regexp.MustCompile("^"+w+"$"), false
					for _, g := range got {
						ok = ok || re.MatchString(g)
					}
					if !ok {
						t.Errorf("%s: no Deny %s among %v", role, w, got)
					}
				}
			}
			warnings := assertions.Annotations_FromStack(b.st.Stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("destPrefix is empty.*")))
			if got := len(*warnings) > 0; got != tc.warns {
				t.Errorf("empty-prefix warning %v, want %v", got, tc.warns)
			}
		})
	}
}

// TestContainerTaskFitsTheDeployedExecution: in the deployed migrate
// definition, HashCheck, RunConvertTask, ReadConvertResult and Promote at
// their TimeoutSeconds fit the execution's TimeoutSeconds, and a throttled
// RunTask is retried.
func TestContainerTaskFitsTheDeployedExecution(t *testing.T) {
	b := defaultStack(t)
	def := b.st.MigrateDefinition
	var m struct {
		TimeoutSeconds int
		States         map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(def), &m); err != nil {
		t.Fatalf("migrate definition: %v", err)
	}
	timeout := func(raw json.RawMessage) int {
		var st struct{ TimeoutSeconds int }
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		return st.TimeoutSeconds
	}
	var par struct {
		Branches []struct{ States map[string]json.RawMessage }
	}
	if err := json.Unmarshal(m.States["ConvertInContainer"], &par); err != nil || len(par.Branches) != 1 {
		t.Fatalf("ConvertInContainer: %v", err)
	}
	run := timeout(par.Branches[0].States["RunConvertTask"])
	path := timeout(m.States["HashCheck"]) + run + timeout(par.Branches[0].States["ReadConvertResult"]) + timeout(m.States["Promote"])
	if run < b.st.FunctionTimeouts["convert"] || path > m.TimeoutSeconds {
		t.Errorf("RunConvertTask %d s; HashCheck + container + result read + Promote = %d s, execution %d s", run, path, m.TimeoutSeconds)
	}
	if want, err := statemachine.ContainerTaskTimeout(m.TimeoutSeconds, statemachine.TaskTimeouts{HashCheck: b.st.FunctionTimeouts["hashcheck"],
		Convert: b.st.FunctionTimeouts["convert"], Promote: b.st.FunctionTimeouts["promote"], Classify: b.st.FunctionTimeouts["classify"]}); err != nil || run != want {
		t.Errorf("RunConvertTask %d s, derived %d s (%v)", run, want, err)
	}
	if !strings.Contains(string(par.Branches[0].States["RunConvertTask"]), `"ECS.InvalidParameterException"`) {
		t.Error("RunConvertTask does not retry ECS.InvalidParameterException")
	}
}
