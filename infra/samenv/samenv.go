// Package samenv turns a synthesized CloudFormation template into what `sam local invoke` needs
// to run one of its functions with real resource names: the --env-vars file and the command line.
//
// SAM CLI resolves a function's environment from the template, but it cannot resolve a Ref or
// Fn::GetAtt to a resource that does not exist yet: it passes the logical ID instead (a function
// would look for the table "StateTable9728C7E5"). SAM overrides template variables from a JSON
// file keyed by function logical ID ({"<LogicalId>": {"VAR": "value"}}, AWS SAM developer guide,
// "Locally invoke Lambda functions with AWS SAM", environment variable file). This package writes
// that file: every variable whose template value is an intrinsic function gets the value
// CloudFormation would give it, computed from the physical names the caller knows (a deployed
// stack's describe-stack-resources, or names given by hand) or, failing those, from the names the
// template fixes itself (BucketName, TableName, QueueName, ...) and, last, from a stated default.
package samenv

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Template is the part of a CloudFormation template this package reads.
type Template struct {
	Resources map[string]Resource `json:"Resources"`
}

// Resource is one template resource.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// Parse reads a template from JSON.
func Parse(b []byte) (*Template, error) {
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("samenv.Parse: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, fmt.Errorf("samenv.Parse: template has no Resources")
	}
	return &t, nil
}

// Load reads a template file.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samenv.Load: %w", err)
	}
	return Parse(b)
}

// Names is what the caller knows about the account and the physical resources.
type Names struct {
	Region, Account, Partition string
	StackName                  string
	// Physical maps a logical ID, or a construct ID (the logical ID without CDK's 8-hex
	// suffix, e.g. "StateTable"), to the resource's physical ID as CloudFormation's Ref
	// returns it: bucket and table names, a queue URL, a state machine or topic ARN.
	Physical map[string]string
	// Set overrides an environment variable by name in every function; it wins over the rest.
	Set map[string]string
}

// LoadStackResources reads the output of `aws cloudformation describe-stack-resources` (JSON)
// into a logical ID → physical ID map.
func LoadStackResources(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samenv.LoadStackResources: %w", err)
	}
	var doc struct {
		StackResources []struct {
			LogicalResourceID  string `json:"LogicalResourceId"`
			PhysicalResourceID string `json:"PhysicalResourceId"`
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("samenv.LoadStackResources: %s: %w", path, err)
	}
	out := map[string]string{}
	for _, r := range doc.StackResources {
		if r.LogicalResourceID != "" && r.PhysicalResourceID != "" {
			out[r.LogicalResourceID] = r.PhysicalResourceID
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("samenv.LoadStackResources: %s lists no StackResources", path)
	}
	return out, nil
}

var cdkHash = regexp.MustCompile(`^(.+?)[0-9A-F]{8}$`)

// ConstructID is a CDK logical ID without its 8-hex hash suffix ("StateTable9728C7E5" → "StateTable").
func ConstructID(logicalID string) string {
	if m := cdkHash.FindStringSubmatch(logicalID); m != nil {
		return m[1]
	}
	return logicalID
}

// Functions lists the logical IDs of the template's Lambda functions, sorted.
func (t *Template) Functions() []string {
	var out []string
	for id, r := range t.Resources {
		if r.Type == "AWS::Lambda::Function" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// FunctionID finds a function's logical ID from a logical ID, a construct ID
// ("ConvertFunction") or the short name the Makefile uses ("convert").
func (t *Template) FunctionID(name string) (string, error) {
	if r, ok := t.Resources[name]; ok && r.Type == "AWS::Lambda::Function" {
		return name, nil
	}
	want := map[string]bool{name: true}
	if name != "" {
		title := strings.ToUpper(name[:1]) + name[1:]
		want[title] = true
		want[title+"Function"] = true
	}
	var found []string
	for _, id := range t.Functions() {
		if want[ConstructID(id)] {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("samenv: no Lambda function %q in the template (functions: %s)", name, strings.Join(t.Functions(), ", "))
	default:
		return "", fmt.Errorf("samenv: %q matches several functions: %s", name, strings.Join(found, ", "))
	}
}

// Result is the resolved environment and what was assumed to get it.
type Result struct {
	// Env maps function logical ID → variable → value, for every variable whose template
	// value is an intrinsic function (plain strings are left to the template).
	Env map[string]map[string]string
	// Defaulted lists the resources whose names were neither given nor fixed by the template,
	// each with the name used ("StateTable9728C7E5 → geomigrate-state-table").
	Defaulted []string
}

// Resolve computes every function's intrinsic-valued environment variables.
func (t *Template) Resolve(n Names) (*Result, error) {
	if n.Partition == "" {
		n.Partition = "aws"
	}
	r := &resolver{t: t, n: n, defaulted: map[string]string{}}
	res := &Result{Env: map[string]map[string]string{}}
	var errs []string
	for _, fn := range t.Functions() {
		vars := envVariables(t.Resources[fn])
		out := map[string]string{}
		for _, k := range sortedKeys(vars) {
			v := vars[k]
			if set, ok := n.Set[k]; ok {
				out[k] = set
				continue
			}
			if _, plain := v.(string); plain {
				continue
			}
			s, err := r.value(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s %s: %v", fn, k, err))
				continue
			}
			out[k] = s
		}
		if len(out) > 0 {
			res.Env[fn] = out
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("samenv.Resolve:\n  %s", strings.Join(errs, "\n  "))
	}
	for _, id := range sortedKeys(r.defaulted) {
		res.Defaulted = append(res.Defaulted, id+" → "+r.defaulted[id])
	}
	return res, nil
}

// EnvFile is the --env-vars document.
func (res *Result) EnvFile() ([]byte, error) {
	b, err := json.MarshalIndent(res.Env, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("samenv.EnvFile: %w", err)
	}
	return append(b, '\n'), nil
}

// Command is the `sam local invoke` command line for one function.
func Command(templatePath, eventPath, envFile, functionID, region string) []string {
	args := []string{"sam", "local", "invoke", "--template", templatePath, "--event", eventPath, "--env-vars", envFile}
	if region != "" {
		args = append(args, "--region", region)
	}
	return append(args, functionID)
}

// ShellJoin quotes args for a POSIX shell.
func ShellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func envVariables(r Resource) map[string]any {
	env, _ := r.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

type resolver struct {
	t         *Template
	n         Names
	defaulted map[string]string
}

func (r *resolver) value(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case float64, bool:
		return fmt.Sprint(t), nil
	case map[string]any:
		if len(t) != 1 {
			return "", fmt.Errorf("not an intrinsic function: %v", t)
		}
		for fn, arg := range t {
			switch fn {
			case "Ref":
				id, _ := arg.(string)
				return r.ref(id)
			case "Fn::GetAtt":
				id, attr, err := getAttArgs(arg)
				if err != nil {
					return "", err
				}
				return r.getAtt(id, attr)
			case "Fn::Join":
				a, _ := arg.([]any)
				if len(a) != 2 {
					return "", fmt.Errorf("Fn::Join: %v", arg)
				}
				sep, _ := a[0].(string)
				parts, _ := a[1].([]any)
				var out []string
				for _, p := range parts {
					s, err := r.value(p)
					if err != nil {
						return "", err
					}
					out = append(out, s)
				}
				return strings.Join(out, sep), nil
			case "Fn::Sub":
				return r.sub(arg)
			case "Fn::Select":
				a, _ := arg.([]any)
				if len(a) != 2 {
					return "", fmt.Errorf("Fn::Select: %v", arg)
				}
				idx, _ := a[0].(float64)
				list, _ := a[1].([]any)
				if int(idx) < 0 || int(idx) >= len(list) {
					return "", fmt.Errorf("Fn::Select: index %v of %d", a[0], len(list))
				}
				return r.value(list[int(idx)])
			}
			return "", fmt.Errorf("intrinsic %s is not resolved by samenv", fn)
		}
	}
	return "", fmt.Errorf("cannot resolve %v", v)
}

func getAttArgs(arg any) (string, string, error) {
	switch a := arg.(type) {
	case []any:
		if len(a) == 2 {
			id, _ := a[0].(string)
			attr, _ := a[1].(string)
			return id, attr, nil
		}
	case string:
		if id, attr, ok := strings.Cut(a, "."); ok {
			return id, attr, nil
		}
	}
	return "", "", fmt.Errorf("Fn::GetAtt: %v", arg)
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (r *resolver) sub(arg any) (string, error) {
	var text string
	vars := map[string]any{}
	switch a := arg.(type) {
	case string:
		text = a
	case []any:
		if len(a) != 2 {
			return "", fmt.Errorf("Fn::Sub: %v", arg)
		}
		text, _ = a[0].(string)
		if m, ok := a[1].(map[string]any); ok {
			vars = m
		}
	}
	var err error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		var s string
		var e error
		if v, ok := vars[name]; ok {
			s, e = r.value(v)
		} else if id, attr, ok := strings.Cut(name, "."); ok {
			s, e = r.getAtt(id, attr)
		} else {
			s, e = r.ref(name)
		}
		if e != nil && err == nil {
			err = e
		}
		return s
	})
	return out, err
}

func (r *resolver) ref(id string) (string, error) {
	switch id {
	case "AWS::Region":
		return r.n.Region, nil
	case "AWS::AccountId":
		return r.n.Account, nil
	case "AWS::Partition":
		return r.n.Partition, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return r.n.StackName, nil
	}
	res, ok := r.t.Resources[id]
	if !ok {
		//lint:ignore ST1005 the message starts with the CloudFormation intrinsic it resolves, spelt as in the template
		return "", fmt.Errorf("Ref %s: no such resource", id)
	}
	if p := r.physical(id); p != "" {
		return p, nil
	}
	name, err := r.name(id, res)
	if err != nil {
		return "", err
	}
	switch res.Type {
	case "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", r.n.Region, r.n.Account, name), nil
	case "AWS::SNS::Topic":
		return r.arn("sns", name), nil
	case "AWS::StepFunctions::StateMachine":
		return r.arn("states", "stateMachine:"+name), nil
	}
	return name, nil
}

func (r *resolver) getAtt(id, attr string) (string, error) {
	res, ok := r.t.Resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	ref, err := r.ref(id)
	if err != nil {
		return "", err
	}
	name := ref
	switch res.Type {
	case "AWS::SQS::Queue":
		name = ref[strings.LastIndex(ref, "/")+1:]
	case "AWS::SNS::Topic", "AWS::StepFunctions::StateMachine":
		name = ref[strings.LastIndex(ref, ":")+1:]
	}
	switch res.Type + "." + attr {
	case "AWS::S3::Bucket.Arn":
		return fmt.Sprintf("arn:%s:s3:::%s", r.n.Partition, name), nil
	case "AWS::S3::Bucket.RegionalDomainName":
		return fmt.Sprintf("%s.s3.%s.amazonaws.com", name, r.n.Region), nil
	case "AWS::DynamoDB::Table.Arn":
		return r.arn("dynamodb", "table/"+name), nil
	case "AWS::SQS::Queue.Arn":
		return r.arn("sqs", name), nil
	case "AWS::SQS::Queue.QueueName":
		return name, nil
	case "AWS::SQS::Queue.QueueUrl":
		return ref, nil
	case "AWS::Lambda::Function.Arn":
		return r.arn("lambda", "function:"+name), nil
	case "AWS::IAM::Role.Arn":
		return fmt.Sprintf("arn:%s:iam::%s:role/%s", r.n.Partition, r.n.Account, name), nil
	case "AWS::SNS::Topic.TopicArn", "AWS::StepFunctions::StateMachine.Arn":
		return ref, nil
	case "AWS::SNS::Topic.TopicName", "AWS::StepFunctions::StateMachine.Name":
		return name, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s: attribute of %s not resolved by samenv", id, attr, res.Type)
}

func (r *resolver) arn(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", r.n.Partition, service, r.n.Region, r.n.Account, resource)
}

func (r *resolver) physical(id string) string {
	if p := r.n.Physical[id]; p != "" {
		return p
	}
	return r.n.Physical[ConstructID(id)]
}

// nameProperty is the property that fixes a resource's name, by type.
var nameProperty = map[string]string{
	"AWS::S3::Bucket":                  "BucketName",
	"AWS::DynamoDB::Table":             "TableName",
	"AWS::SQS::Queue":                  "QueueName",
	"AWS::SNS::Topic":                  "TopicName",
	"AWS::StepFunctions::StateMachine": "StateMachineName",
	"AWS::Lambda::Function":            "FunctionName",
	"AWS::IAM::Role":                   "RoleName",
	"AWS::Logs::LogGroup":              "LogGroupName",
}

func (r *resolver) name(id string, res Resource) (string, error) {
	prop, ok := nameProperty[res.Type]
	if !ok {
		//lint:ignore ST1005 the message starts with the CloudFormation intrinsic it resolves, spelt as in the template
		return "", fmt.Errorf("Ref %s: %s is not resolved by samenv; give its physical ID (SAM_NAMES=%s=...)", id, res.Type, ConstructID(id))
	}
	if v, ok := res.Properties[prop]; ok {
		s, err := r.value(v)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %w", id, prop, err)
		}
		return s, nil
	}
	d := defaultName(r.n.StackName, ConstructID(id))
	r.defaulted[id] = d
	return d, nil
}

var wordStart = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// defaultName is "<stack>-<construct-id>" in lower kebab case ("geomigrate-state-table"):
// valid as a bucket, table or queue name, and predictable, so it can be created locally.
func defaultName(stack, construct string) string {
	s := strings.ToLower(wordStart.ReplaceAllString(construct, "$1-$2"))
	if stack != "" {
		s = strings.ToLower(stack) + "-" + s
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
