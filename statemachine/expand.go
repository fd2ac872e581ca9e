package statemachine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Value placeholders of Migrate: the Lambda tasks' TimeoutSeconds, written
// in the file as the JSON strings "${Name}" and expanded to numbers by
// ExpandMigrate.
const (
	HashCheckTimeoutSeconds = "HashCheckTimeoutSeconds"
	ConvertTimeoutSeconds   = "ConvertTimeoutSeconds"
	PromoteTimeoutSeconds   = "PromoteTimeoutSeconds"
	ClassifyTimeoutSeconds  = "ClassifyTimeoutSeconds"
	// ContainerTaskTimeoutSeconds is RunConvertTask's, derived from the
	// others by ContainerTaskTimeout.
	ContainerTaskTimeoutSeconds = "ContainerTaskTimeoutSeconds"
)

// ContainerResultReadSeconds is ReadConvertResult's TimeoutSeconds: the
// container path's read of its result object, between the task and
// Promote.
const ContainerResultReadSeconds = 60

// ContainerTaskTimeout is RunConvertTask's TimeoutSeconds: what the
// execution's TimeoutSeconds leaves after HashCheck, the result read and
// Promote at their own timeouts, so that a container that runs to its
// limit still leaves Promote (or Classify and a queue, which take less)
// the time to finish before the execution times out and executionfailed
// has to close the job (docs/decisions/0103). It is an error when that
// leaves the container less than the Convert Lambda has: the container
// path exists for conversions longer than the Lambda's.
func ContainerTaskTimeout(execution int, t TaskTimeouts) (int, error) {
	c := execution - t.HashCheck - ContainerResultReadSeconds - max(t.Promote, t.Classify)
	if c < t.Convert {
		return 0, fmt.Errorf("statemachine.ContainerTaskTimeout: the execution's %d s leave the container task %d s after HashCheck (%d s), the result read (%d s) and Promote (%d s): less than the Convert Lambda's %d s",
			execution, c, t.HashCheck, ContainerResultReadSeconds, t.Promote, t.Convert)
	}
	return c, nil
}

// SourcePrefixRules is the value placeholder of Backfill: the Or list of the
// Choice that keeps an S3 Inventory item only when its key lies under one of
// the source prefixes, expanded by ExpandBackfill.
const SourcePrefixRules = "SourcePrefixRules"

// TaskTimeouts are the TimeoutSeconds of Migrate's Lambda tasks. On AWS they
// equal the functions' timeouts (infra reads both from one configuration),
// so Step Functions never gives up on an invocation Lambda still runs, and
// each stays below the state store lease so no second execution can claim a
// job whose first attempt is still running.
type TaskTimeouts struct {
	HashCheck, Convert, Promote, Classify int
}

// DefaultTaskTimeouts are the local executor's task timeouts, the same as
// infra's default function timeouts (hashcheckTimeoutSeconds and
// convertTimeoutSeconds 900 s, promote 900 s, classify 60 s).
var DefaultTaskTimeouts = TaskTimeouts{HashCheck: 900, Convert: 900, Promote: 900, Classify: 60}

// Longest is the longest of the four timeouts, in seconds: a state store
// lease must exceed it.
func (t TaskTimeouts) Longest() int {
	return max(t.HashCheck, t.Convert, t.Promote, t.Classify)
}

// Values maps each timeout placeholder to its number; a timeout that is
// not positive is an error.
func (t TaskTimeouts) Values() (map[string]any, error) {
	v := map[string]any{
		HashCheckTimeoutSeconds: t.HashCheck,
		ConvertTimeoutSeconds:   t.Convert,
		PromoteTimeoutSeconds:   t.Promote,
		ClassifyTimeoutSeconds:  t.Classify,
	}
	for name, s := range v {
		if s.(int) <= 0 {
			return nil, fmt.Errorf("statemachine.TaskTimeouts.Values: %s must be positive, got %d", name, s)
		}
	}
	return v, nil
}

// ExpandMigrate expands the task timeouts of a migrate definition (Migrate
// or a file with the same placeholders). Its string placeholders (function
// ARNs, queue URLs) are left for the caller.
func ExpandMigrate(def []byte, t TaskTimeouts) ([]byte, error) {
	v, err := t.Values()
	if err != nil {
		return nil, err
	}
	var top struct{ TimeoutSeconds int }
	if err := json.Unmarshal(def, &top); err != nil {
		return nil, fmt.Errorf("statemachine.ExpandMigrate: %w", err)
	}
	if bytes.Contains(def, []byte(`"${`+ContainerTaskTimeoutSeconds+`}"`)) {
		if v[ContainerTaskTimeoutSeconds], err = ContainerTaskTimeout(top.TimeoutSeconds, t); err != nil {
			return nil, err
		}
	}
	return ExpandValues(def, v)
}

// ExpandBackfill expands the source-prefix filter of a backfill definition.
// An empty list, or one holding "", keeps every key. Its string placeholders
// (buckets, the migrate state machine) are left for the caller.
func ExpandBackfill(def []byte, sourcePrefixes []string) ([]byte, error) {
	return ExpandValues(def, map[string]any{SourcePrefixRules: PrefixRules("$.key", sourcePrefixes)})
}

// PrefixRules returns Choice rules, one per prefix, that match a string
// variable starting with that prefix: StringMatches with the prefix escaped
// (\ and * are the pattern's only special characters) and a trailing *.
func PrefixRules(variable string, prefixes []string) []map[string]any {
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	var rules []map[string]any
	for _, p := range prefixes {
		pattern := strings.NewReplacer(`\`, `\\`, `*`, `\*`).Replace(p) + "*"
		rules = append(rules, map[string]any{"Variable": variable, "StringMatches": pattern})
	}
	return rules
}

// ExpandValues replaces each value placeholder of def: the whole JSON string
// "${Name}", quotes included, becomes values[Name] encoded as JSON (a number,
// a list, an object). The file stays valid JSON before expansion, and string
// placeholders inside longer strings ("${FunctionArn}") are untouched, for
// the caller's textual substitution (CDK tokens on AWS, local ARNs in the
// executor). A name without its quoted placeholder, or one also used inside a
// longer string, is an error.
func ExpandValues(def []byte, values map[string]any) ([]byte, error) {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	out := def
	for _, name := range names {
		quoted := []byte(`"${` + name + `}"`)
		if !bytes.Contains(out, quoted) {
			return nil, fmt.Errorf("statemachine.ExpandValues: no \"${%s}\" value placeholder in the definition", name)
		}
		v, err := json.Marshal(values[name])
		if err != nil {
			return nil, fmt.Errorf("statemachine.ExpandValues: %s: %w", name, err)
		}
		out = bytes.ReplaceAll(out, quoted, v)
		if bytes.Contains(out, []byte("${"+name+"}")) {
			return nil, fmt.Errorf("statemachine.ExpandValues: ${%s} is also used inside a longer string; a value placeholder must be a whole JSON string", name)
		}
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("statemachine.ExpandValues: result is not valid JSON")
	}
	return out, nil
}
