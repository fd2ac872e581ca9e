package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/geomigrate/geomigrate/statemachine"
)

// Placeholders each definition must contain, exactly (the contract with statemachine/).
var (
	MigratePlaceholders = []string{
		"HashCheckFunctionArn", "ConvertFunctionArn", "PromoteFunctionArn", "ClassifyFunctionArn",
		"RemediationQueueUrl", "DeadLetterQueueUrl",
		statemachine.ConvertClusterArn, statemachine.ConvertTaskDefinitionArn, statemachine.ConvertSubnetIDs, statemachine.ConvertSecurityGroupID,
		statemachine.HashCheckTimeoutSeconds, statemachine.ConvertTimeoutSeconds,
		statemachine.PromoteTimeoutSeconds, statemachine.ClassifyTimeoutSeconds, statemachine.ContainerTaskTimeoutSeconds,
	}
	BackfillPlaceholders = []string{"MigrateStateMachineArn", "SourceBucket", "ResultsBucket", statemachine.DeadLetterQueueURL, statemachine.SourcePrefixRules, statemachine.PolicyParameterName}
)

// placeholderRE matches ${Name}; CDK tokens (${Token[TOKEN.12]}) do not match.
var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Placeholders lists the distinct ${Name} placeholders of a definition, sorted.
func Placeholders(def string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(def, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// Substitute replaces every ${Name} with values[Name]. A placeholder without a value, a value
// without a placeholder, or any "${" left that is not a CDK token is an error, so a
// definition can never reach the template half-substituted.
func Substitute(def string, values map[string]string) (string, error) {
	present := map[string]bool{}
	for _, p := range Placeholders(def) {
		present[p] = true
		if _, ok := values[p]; !ok {
			return "", fmt.Errorf("placeholder ${%s} has no substitution", p)
		}
	}
	for k := range values {
		if !present[k] {
			return "", fmt.Errorf("substitution %s has no ${%s} placeholder in the definition", k, k)
		}
	}
	out := placeholderRE.ReplaceAllStringFunc(def, func(m string) string {
		return values[m[2:len(m)-1]]
	})
	if where := LeftoverDollarBrace(strings.ReplaceAll(out, "${Token[", "")); where != "" {
		return "", fmt.Errorf("definition still contains \"${\" after substitution, at %s", where)
	}
	return out, nil
}

// LeftoverDollarBrace returns the JSON path of the first string value containing "${", or "".
// Comment fields are prose for humans and are skipped; every other string must be free of it.
func LeftoverDollarBrace(def string) string {
	var doc any
	if err := json.Unmarshal([]byte(def), &doc); err != nil {
		if strings.Contains(def, "${") {
			return "(unparsable definition)"
		}
		return ""
	}
	var walk func(v any, path string) string
	walk = func(v any, path string) string {
		switch t := v.(type) {
		case string:
			if strings.Contains(t, "${") {
				return path
			}
		case []any:
			for i, e := range t {
				if w := walk(e, fmt.Sprintf("%s[%d]", path, i)); w != "" {
					return w
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if strings.Contains(k, "${") {
					return path + "." + k
				}
				if k == "Comment" {
					continue
				}
				if w := walk(t[k], path+"."+k); w != "" {
					return w
				}
			}
		}
		return ""
	}
	return walk(doc, "$")
}

// LoadDefinition reads an ASL file, checks it is a JSON object with States, and that its
// placeholders are exactly the expected ones.
func LoadDefinition(path string, want []string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("state machine definition: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: not JSON: %w", path, err)
	}
	if _, ok := doc["States"].(map[string]any); !ok {
		return "", fmt.Errorf("%s: no States", path)
	}
	got := Placeholders(string(b))
	w := append([]string(nil), want...)
	sort.Strings(w)
	if strings.Join(got, ",") != strings.Join(w, ",") {
		return "", fmt.Errorf("%s: placeholders %v, want exactly %v", path, got, w)
	}
	return string(b), nil
}

// ExpressBackfill turns the backfill definition into its EXPRESS variant: Express child
// workflows cannot use the .sync integration, so instead of starting the migrate state machine
// each Map item runs the migrate workflow's states inline, as an Express child execution. The
// result is the same per-object workflow; the migrate placeholders stay in it.
//
// State names must be unique in the whole state machine, so the inlined states are renamed
// with the Map's Label as prefix (BackfillPrefix + HashCheck = BackfillPrefixHashCheck) and
// every transition to them (StartAt, Next, Default, Choices' Next, Catch's Next) follows. The
// child-start Task is replaced by the inlined StartAt, and states only it reached (its Catch
// target) are dropped. Handlers still see the migrate workflow's own state name: a
// "$$.State.Name" in Parameters becomes that name as a literal.
func ExpressBackfill(backfill, migrate string) (string, error) {
	var b, m map[string]any
	if err := json.Unmarshal([]byte(backfill), &b); err != nil {
		return "", err
	}
	if err := json.Unmarshal([]byte(migrate), &m); err != nil {
		return "", err
	}
	mStates, _ := m["States"].(map[string]any)
	mStart, _ := m["StartAt"].(string)
	if mStates == nil || mStart == "" {
		return "", fmt.Errorf("migrate definition has no StartAt/States")
	}
	if strings.Contains(migrate, ".sync") || strings.Contains(migrate, ".waitForTaskToken") {
		return "", fmt.Errorf("migrate definition uses .sync or .waitForTaskToken, which Express child workflows cannot run")
	}
	for name, v := range mStates {
		if t, _ := v.(map[string]any)["Type"].(string); t == "Map" || t == "Parallel" {
			return "", fmt.Errorf("migrate state %s is a %s: nested machines are not inlined", name, t)
		}
	}
	states, _ := b["States"].(map[string]any)
	n := 0
	for _, mapName := range sortedKeys(states) {
		st, _ := states[mapName].(map[string]any)
		proc, _ := st["ItemProcessor"].(map[string]any)
		if proc == nil {
			continue
		}
		label, _ := st["Label"].(string)
		if label == "" {
			return "", fmt.Errorf("backfill Map %s has no Label to prefix the inlined state names with", mapName)
		}
		pstates, _ := proc["States"].(map[string]any)
		var child string
		for name, v := range pstates {
			if r, _ := v.(map[string]any)["Resource"].(string); strings.HasPrefix(r, "arn:aws:states:::states:startExecution") {
				if child != "" {
					return "", fmt.Errorf("backfill Map %s starts child executions in both %s and %s", mapName, child, name)
				}
				child = name
			}
		}
		if child == "" {
			return "", fmt.Errorf("backfill Map %s has no startExecution task to inline the migrate workflow into", mapName)
		}
		delete(pstates, child)
		toInlined := func(name string) string {
			if name == child {
				return label + mStart
			}
			return name
		}
		if s, _ := proc["StartAt"].(string); s != "" {
			proc["StartAt"] = toInlined(s)
		}
		for _, v := range pstates {
			retarget(v.(map[string]any), toInlined)
		}
		for name, v := range mStates {
			inlined := label + name
			if _, clash := pstates[inlined]; clash {
				return "", fmt.Errorf("state name %s exists in backfill Map %s and as an inlined migrate state", inlined, mapName)
			}
			cp, err := deepCopy(v)
			if err != nil {
				return "", err
			}
			s := cp.(map[string]any)
			retarget(s, func(next string) string { return label + next })
			if p, ok := s["Parameters"]; ok {
				s["Parameters"] = literalStateName(p, name)
			}
			pstates[inlined] = s
		}
		dropUnreachable(proc)
		proc["ProcessorConfig"] = map[string]any{"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"}
		if err := closeUnfinishedAfter(states, mapName, label); err != nil {
			return "", err
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("backfill definition has no ItemProcessor")
	}
	if dup := duplicateStateNames(b); len(dup) > 0 {
		return "", fmt.Errorf("state names used more than once in the EXPRESS backfill: %v", dup)
	}
	out, err := json.MarshalIndent(b, "", "  ")
	return string(out), err
}

// closeUnfinishedAfter puts statemachine.CloseMapRun's state after the Map mapName, named with
// the Map's label as prefix: it takes the Map's Next, and the Map goes to it. Express children
// send no status-change events, so this is where the jobs of children that timed out are closed.
// The state's other transitions (its Catch) must be states of the backfill.
func closeUnfinishedAfter(states map[string]any, mapName, label string) error {
	var frag struct {
		States map[string]any
	}
	if err := json.Unmarshal(statemachine.CloseMapRun, &frag); err != nil {
		return fmt.Errorf("close-map-run definition: %w", err)
	}
	st, _ := frag.States[statemachine.CloseMapRunState].(map[string]any)
	if st == nil {
		return fmt.Errorf("close-map-run definition has no %s state", statemachine.CloseMapRunState)
	}
	m := states[mapName].(map[string]any)
	next, _ := m["Next"].(string)
	if next == "" {
		return fmt.Errorf("backfill Map %s has no Next to close its unfinished children before", mapName)
	}
	name := label + statemachine.CloseMapRunState
	if _, clash := states[name]; clash {
		return fmt.Errorf("state name %s exists in the backfill", name)
	}
	st["Next"] = next
	for _, to := range transitions(st) {
		if _, ok := states[to]; !ok {
			return fmt.Errorf("%s goes to %s, which the backfill does not have", name, to)
		}
	}
	states[name] = st
	m["Next"] = name
	return nil
}

// retarget rewrites a state's transitions: Next, Default, each Choice rule's Next, each
// Catch's Next.
func retarget(st map[string]any, to func(string) string) {
	for _, k := range []string{"Next", "Default"} {
		if s, ok := st[k].(string); ok {
			st[k] = to(s)
		}
	}
	for _, k := range []string{"Choices", "Catch"} {
		list, _ := st[k].([]any)
		for _, e := range list {
			if r, ok := e.(map[string]any); ok {
				if s, ok := r["Next"].(string); ok {
					r["Next"] = to(s)
				}
			}
		}
	}
}

// transitions lists the states a state can go to.
func transitions(st map[string]any) []string {
	var out []string
	retarget(st, func(s string) string { out = append(out, s); return s })
	return out
}

// dropUnreachable removes the states of a (sub)machine that StartAt cannot reach.
func dropUnreachable(machine map[string]any) {
	states, _ := machine["States"].(map[string]any)
	start, _ := machine["StartAt"].(string)
	seen := map[string]bool{}
	queue := []string{start}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		st, ok := states[name].(map[string]any)
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		queue = append(queue, transitions(st)...)
	}
	for name := range states {
		if !seen[name] {
			delete(states, name)
		}
	}
}

// literalStateName replaces each "key.$": "$$.State.Name" with "key": name.
func literalStateName(v any, name string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if base, ok := strings.CutSuffix(k, ".$"); ok && e == "$$.State.Name" {
				out[base] = name
				continue
			}
			out[k] = literalStateName(e, name)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = literalStateName(e, name)
		}
		return out
	default:
		return v
	}
}

// duplicateStateNames returns the state names used more than once anywhere in a definition,
// Parallel branches and Map processors included.
func duplicateStateNames(machine map[string]any) []string {
	count := map[string]int{}
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		states, _ := m["States"].(map[string]any)
		for name, v := range states {
			count[name]++
			st, _ := v.(map[string]any)
			for _, k := range []string{"ItemProcessor", "Iterator"} {
				if p, ok := st[k].(map[string]any); ok {
					walk(p)
				}
			}
			branches, _ := st["Branches"].([]any)
			for _, br := range branches {
				if p, ok := br.(map[string]any); ok {
					walk(p)
				}
			}
		}
	}
	walk(machine)
	var dup []string
	for name, c := range count {
		if c > 1 {
			dup = append(dup, name)
		}
	}
	sort.Strings(dup)
	return dup
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func deepCopy(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// WithoutContainerPath removes the migrate definition's large-object path for a workflow that
// cannot run it (an Express child: no .sync integrations): the container state and every Choice
// rule leading to it go, so each job is converted by the Convert Lambda.
func WithoutContainerPath(migrate string) (string, error) {
	const container = "ConvertInContainer"
	var m map[string]any
	if err := json.Unmarshal([]byte(migrate), &m); err != nil {
		return "", fmt.Errorf("WithoutContainerPath: %w", err)
	}
	states, _ := m["States"].(map[string]any)
	if _, ok := states[container]; !ok {
		return "", fmt.Errorf("WithoutContainerPath: no %s state", container)
	}
	delete(states, container)
	for name, v := range states {
		st, _ := v.(map[string]any)
		choices, _ := st["Choices"].([]any)
		if choices == nil {
			continue
		}
		kept := choices[:0]
		for _, c := range choices {
			if next, _ := c.(map[string]any)["Next"].(string); next != container {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			return "", fmt.Errorf("WithoutContainerPath: Choice %s would have no rule left", name)
		}
		st["Choices"] = kept
	}
	out, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("WithoutContainerPath: %w", err)
	}
	if strings.Contains(string(out), `"`+container+`"`) {
		return "", fmt.Errorf("WithoutContainerPath: %s is still referenced", container)
	}
	return string(out), nil
}
