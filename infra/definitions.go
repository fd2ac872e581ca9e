package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Placeholders each definition must contain, exactly (the contract with statemachine/).
var (
	MigratePlaceholders = []string{
		"HashCheckFunctionArn", "ConvertFunctionArn", "PromoteFunctionArn", "ClassifyFunctionArn",
		"RemediationQueueUrl", "DeadLetterQueueUrl",
	}
	BackfillPlaceholders = []string{"MigrateStateMachineArn", "SourceBucket", "ResultsBucket"}
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
	states, _ := b["States"].(map[string]any)
	n := 0
	for _, s := range states {
		st, _ := s.(map[string]any)
		proc, _ := st["ItemProcessor"].(map[string]any)
		if proc == nil {
			continue
		}
		pstates, _ := proc["States"].(map[string]any)
		start, _ := proc["StartAt"].(string)
		gate, _ := pstates[start].(map[string]any)
		if gate == nil || gate["Type"] != "Choice" {
			return "", fmt.Errorf("backfill item processor must start with its folder-marker Choice")
		}
		newStates := map[string]any{}
		for name, v := range mStates {
			newStates[name] = v
		}
		for _, keep := range []string{start, fmt.Sprint(firstChoiceNext(gate))} {
			if _, clash := newStates[keep]; clash {
				return "", fmt.Errorf("state name %q exists in both definitions", keep)
			}
			newStates[keep] = pstates[keep]
		}
		gate["Default"] = mStart
		proc["States"] = newStates
		proc["ProcessorConfig"] = map[string]any{"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("backfill definition has no ItemProcessor")
	}
	out, err := json.MarshalIndent(b, "", "  ")
	return string(out), err
}

func firstChoiceNext(choice map[string]any) any {
	cs, _ := choice["Choices"].([]any)
	if len(cs) == 0 {
		return nil
	}
	c, _ := cs[0].(map[string]any)
	return c["Next"]
}
