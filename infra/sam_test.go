package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/infra/samenv"
)

// `make sam-invoke` runs samenv (infra/cmd/sam-env) on cdk.out's template; these check what it
// produces against the synthesized stack: every function's Ref/GetAtt-valued variable gets a
// concrete value (never a logical ID, which is what SAM passes otherwise), names fixed by context
// are used as they are, and the command line names a function that exists.
func TestSAMEnvVarsAgainstSynthesizedTemplate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ctx   map[string]any
		names map[string]string
		want  map[string]string // variable → value in every function that has it
	}{
		{name: "defaults", want: map[string]string{
			"GEOMIGRATE_STATE_TABLE": "geomigrate-state-table", "GEOMIGRATE_DEST_BUCKET": "geomigrate-destination-bucket"}},
		{name: "given on the make line", names: map[string]string{"StateTable": "jobs", "DestinationBucket": "dst"},
			want: map[string]string{"GEOMIGRATE_STATE_TABLE": "jobs", "GEOMIGRATE_DEST_BUCKET": "dst"}},
		{name: "fixed by context", ctx: map[string]any{"sourceBucketName": "archive-src", "destBucketName": "archive-cloud-native"},
			want: map[string]string{"GEOMIGRATE_DEST_BUCKET": "archive-cloud-native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := synth(t, tc.ctx)
			raw, err := json.Marshal(b.tpl)
			if err != nil {
				t.Fatal(err)
			}
			tpl, err := samenv.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tpl.Resolve(samenv.Names{Region: "eu-west-1", Account: "123456789012", StackName: "Geomigrate", Physical: tc.names})
			if err != nil {
				t.Fatal(err)
			}
			file, err := res.EnvFile()
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]map[string]string
			if err := json.Unmarshal(file, &env); err != nil {
				t.Fatalf("env file is not JSON: %v", err)
			}
			logicalID := regexp.MustCompile(`[A-Za-z]+[0-9A-F]{8}`)
			intrinsics := 0
			for id, r := range b.resources("AWS::Lambda::Function") {
				props, _ := r["Properties"].(map[string]any)
				e, _ := props["Environment"].(map[string]any)
				vars, _ := e["Variables"].(map[string]any)
				for k, v := range vars {
					if _, plain := v.(string); plain {
						if _, ok := env[id][k]; ok {
							t.Errorf("%s %s: a plain template value was overridden", id, k)
						}
						continue
					}
					intrinsics++
					got, ok := env[id][k]
					switch {
					case !ok || got == "":
						t.Errorf("%s %s = %s: no value in the env file", id, k, js(v))
					case strings.Contains(got, "${") || logicalID.MatchString(got):
						t.Errorf("%s %s = %q: still a logical ID or placeholder", id, k, got)
					}
					if w, ok := tc.want[k]; ok && got != w {
						t.Errorf("%s %s = %q, want %q", id, k, got, w)
					}
				}
			}
			if intrinsics == 0 {
				t.Fatal("no function variable is a Ref/GetAtt: the test would check nothing")
			}
			for k := range tc.want {
				seen := false
				for _, vars := range env {
					if _, ok := vars[k]; ok {
						seen = true
					}
				}
				if !seen {
					t.Errorf("%s is in no function's env file entry", k)
				}
			}

			for _, fn := range FunctionNames {
				id, err := tpl.FunctionID(fn)
				if err != nil {
					t.Fatal(err)
				}
				cmd := samenv.Command("cdk.out/Geomigrate.template.json", "events/x.json", "cdk.out/sam-env.json", id, "eu-west-1")
				last := cmd[len(cmd)-1]
				if r, ok := b.tpl["Resources"].(map[string]any)[last].(map[string]any); !ok || r["Type"] != "AWS::Lambda::Function" {
					t.Errorf("%s: the command line's function %q is not a Lambda function of the template", fn, last)
				}
				if samenv.ConstructID(last) != strings.ToUpper(fn[:1])+fn[1:]+"Function" {
					t.Errorf("%s resolved to %s", fn, last)
				}
				want := "sam local invoke --template cdk.out/Geomigrate.template.json --event events/x.json --env-vars cdk.out/sam-env.json --region eu-west-1 " + last
				if got := samenv.ShellJoin(cmd); got != want {
					t.Errorf("command line\n got %s\nwant %s", got, want)
				}
				if _, ok := env[last]; !ok {
					t.Errorf("env file has no entry for %s", last)
				}
			}
		})
	}
}

// `make sam-invoke` must stop at the missing SAM CLI before it synthesizes anything.
func TestSamInvokeChecksSAMBeforeSynth(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed")
	}
	root := repoRoot(t)
	// An empty PATH: no sam, no docker, no cdk. The recipe's checks are shell builtins.
	cmd := exec.Command(mk, "--no-print-directory", "-C", root, "sam-invoke", "FN=convert", "EVENT=events/convert-input.json", "STACK=NoSuchStackForThisTest")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("make sam-invoke without sam: want a failure, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "sam-invoke needs the AWS SAM CLI") {
		t.Errorf("no message about the SAM CLI:\n%s", out)
	}
	if strings.Contains(string(out), "synth") {
		t.Errorf("synthesized before checking for sam:\n%s", out)
	}
}
