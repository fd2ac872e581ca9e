// Package asljudge puts Amazon States Language definitions in front of two
// outside judges that run offline: asl-validator 4.0.0 (JSON schema, paths,
// ARNs, unique state names) and @wmfs/statelint 1.30.0 (the States Language
// rules as written in the specification). Both are npm packages pinned in
// scripts/asl-judges and installed by `make asl-judges`; the statemachine
// and infra tests use this package so that the files in statemachine/ and
// every definition in the synthesized templates are judged the same way.
//
// statelint predates the Distributed Map, so it calls fields Step Functions
// documents "not allowed". Those complaints, and only on a Map state, are
// listed in FalsePositives with the AWS documentation sentence that allows
// the field; any other complaint from either judge is a failure.
package asljudge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Dir is where the judges are installed, relative to the repository root.
const Dir = "scripts/asl-judges"

// RequireEnv, when set (make test sets it), makes a missing judge a test
// failure instead of a skip.
const RequireEnv = "GEOMIGRATE_REQUIRE_JUDGES"

// FalsePositive is a field statelint rejects on a Map state although Step
// Functions documents it.
type FalsePositive struct {
	Field, Doc, URL string
}

const distributedMapDoc = "https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html"

// FalsePositives are the statelint complaints judged false: fields of the
// Distributed Map state, newer than statelint 1.30.0.
var FalsePositives = []FalsePositive{
	{"ItemReader", "Specifies a dataset and its location. The Map state receives its input data from the specified dataset.", distributedMapDoc},
	{"ResultWriter", "Specifies the Amazon S3 location where Step Functions writes all child workflow execution results.", distributedMapDoc},
	{"MaxConcurrencyPath", "If you want to provide a maximum concurrency value dynamically from the state input using a reference path, use MaxConcurrencyPath.", distributedMapDoc},
	{"ToleratedFailurePercentagePath", "If you want to provide a tolerated failure percentage value dynamically from the state input using a reference path, use ToleratedFailurePercentagePath.", distributedMapDoc},
	{"Label", "A string that uniquely identifies a Map state. For each Map Run, Step Functions adds the label to the Map Run ARN.", distributedMapDoc},
}

// Judges runs the installed judges with one Node.js.
type Judges struct {
	node, validator, statelint string
}

// ErrNotInstalled is wrapped by Find when node or a judge is missing.
var ErrNotInstalled = errors.New("asljudge: the ASL judges are not installed (run `make asl-judges`)")

// Find locates node on PATH and the judges under repoRoot/scripts/asl-judges.
func Find(repoRoot string) (*Judges, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("asljudge.Find: node not on PATH: %w", ErrNotInstalled)
	}
	mods := filepath.Join(repoRoot, Dir, "node_modules")
	j := &Judges{
		node:      node,
		validator: filepath.Join(mods, "asl-validator", "dist", "bin", "asl-validator.js"),
		statelint: filepath.Join(mods, "@wmfs", "statelint", "bin", "statelint.js"),
	}
	for _, p := range []string{j.validator, j.statelint} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("asljudge.Find: %s: %w", p, ErrNotInstalled)
		}
	}
	return j, nil
}

// Verdict is what the judges said about one definition.
type Verdict struct {
	Errors  []string // asl-validator errors and statelint complaints not judged false
	Allowed []string // statelint complaints matched by FalsePositives, with the reason
}

// OK is true when no judge complained (allowed false positives aside).
func (v Verdict) OK() bool { return len(v.Errors) == 0 }

var fieldNotAllowed = regexp.MustCompile(`^Field "([^"]+)" not allowed in State Machine\.(.+)$`)

// Judge writes def to a temporary file and runs both judges on it. An error
// means a judge could not run; complaints are in the Verdict.
func (j *Judges) Judge(ctx context.Context, def []byte) (Verdict, error) {
	var doc map[string]any
	if err := json.Unmarshal(def, &doc); err != nil {
		return Verdict{Errors: []string{"not JSON: " + err.Error()}}, nil
	}
	f, err := os.CreateTemp("", "asljudge-*.asl.json")
	if err != nil {
		return Verdict{}, fmt.Errorf("asljudge.Judge: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(def); err != nil {
		f.Close()
		return Verdict{}, fmt.Errorf("asljudge.Judge: %w", err)
	}
	if err := f.Close(); err != nil {
		return Verdict{}, fmt.Errorf("asljudge.Judge: %w", err)
	}

	var v Verdict
	out, failed, err := j.run(ctx, j.validator, "--json-path", f.Name())
	if err != nil {
		return Verdict{}, err
	}
	if failed {
		v.Errors = append(v.Errors, "asl-validator: "+strings.TrimSpace(out))
	}

	out, failed, err = j.run(ctx, j.statelint, f.Name())
	if err != nil {
		return Verdict{}, err
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "ERROR: ") && strings.HasSuffix(line, " is not valid") {
			continue
		}
		if reason, ok := falsePositive(doc, line); ok {
			v.Allowed = append(v.Allowed, line+" — allowed: "+reason)
			continue
		}
		v.Errors = append(v.Errors, "statelint: "+line)
	}
	if failed && len(v.Errors) == 0 && len(v.Allowed) == 0 {
		v.Errors = append(v.Errors, "statelint failed without a complaint: "+strings.TrimSpace(out))
	}
	return v, nil
}

// run runs one judge; failed is a non-zero exit, err a judge that did not run.
func (j *Judges) run(ctx context.Context, script string, args ...string) (out string, failed bool, err error) {
	cmd := exec.CommandContext(ctx, j.node, append([]string{script}, args...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return buf.String(), true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("asljudge.run: %s: %w", filepath.Base(script), err)
	}
	return buf.String(), false, nil
}

// falsePositive reports whether a statelint line rejects a FalsePositives
// field on a state that is a Map, and the documentation that allows it.
func falsePositive(doc map[string]any, line string) (string, bool) {
	m := fieldNotAllowed.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	var node any = doc
	for _, k := range strings.Split(m[2], ".") {
		obj, ok := node.(map[string]any)
		if !ok {
			return "", false
		}
		node = obj[k]
	}
	st, ok := node.(map[string]any)
	if !ok || st["Type"] != "Map" {
		return "", false
	}
	for _, fp := range FalsePositives {
		if fp.Field == m[1] {
			return fmt.Sprintf("%q (%s)", fp.Doc, fp.URL), true
		}
	}
	return "", false
}
