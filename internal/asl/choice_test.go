package asl

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestChoiceOperators(t *testing.T) {
	t.Parallel()
	input := `{"s":"abc","s2":"abd","n":5,"n2":5.0,"b":true,"ts":"2024-01-01T00:00:00Z","ts2":"2024-01-01T01:00:00+01:00","nil":null,"star":"a*b","file":"data/x.tif"}`
	tests := []struct {
		rule string
		want bool
	}{
		{`"Variable":"$.s","StringEquals":"abc"`, true},
		{`"Variable":"$.s","StringEquals":"abd"`, false},
		{`"Variable":"$.n","StringEquals":"5"`, false}, // type mismatch is false, not an error
		{`"Variable":"$.s","StringEqualsPath":"$.s2"`, false},
		{`"Variable":"$.s","StringLessThan":"abd"`, true},
		{`"Variable":"$.s","StringLessThanPath":"$.s2"`, true},
		{`"Variable":"$.s","StringGreaterThan":"abb"`, true},
		{`"Variable":"$.s","StringGreaterThanPath":"$.s2"`, false},
		{`"Variable":"$.s","StringLessThanEquals":"abc"`, true},
		{`"Variable":"$.s","StringLessThanEqualsPath":"$.s"`, true},
		{`"Variable":"$.s","StringGreaterThanEquals":"abc"`, true},
		{`"Variable":"$.s","StringGreaterThanEqualsPath":"$.s2"`, false},
		{`"Variable":"$.file","StringMatches":"data/*.tif"`, true},
		{`"Variable":"$.file","StringMatches":"*.TIF"`, false},
		{`"Variable":"$.star","StringMatches":"a\\*b"`, true},
		{`"Variable":"$.s","StringMatches":"a\\*c"`, false},
		{`"Variable":"$.s","StringMatches":"*"`, true},
		{`"Variable":"$.n","NumericEquals":5`, true},
		{`"Variable":"$.n","NumericEqualsPath":"$.n2"`, true},
		{`"Variable":"$.n","NumericLessThan":5.5`, true},
		{`"Variable":"$.n","NumericLessThanPath":"$.n2"`, false},
		{`"Variable":"$.n","NumericGreaterThan":4`, true},
		{`"Variable":"$.n","NumericGreaterThanPath":"$.n2"`, false},
		{`"Variable":"$.n","NumericLessThanEquals":5`, true},
		{`"Variable":"$.n","NumericLessThanEqualsPath":"$.n2"`, true},
		{`"Variable":"$.n","NumericGreaterThanEquals":6`, false},
		{`"Variable":"$.n","NumericGreaterThanEqualsPath":"$.n2"`, true},
		{`"Variable":"$.s","NumericEquals":5`, false},
		{`"Variable":"$.b","BooleanEquals":true`, true},
		{`"Variable":"$.b","BooleanEqualsPath":"$.b"`, true},
		{`"Variable":"$.n","BooleanEquals":true`, false},
		{`"Variable":"$.ts","TimestampEquals":"2024-01-01T00:00:00Z"`, true},
		{`"Variable":"$.ts","TimestampEqualsPath":"$.ts2"`, true}, // same instant, other offset
		{`"Variable":"$.ts","TimestampLessThan":"2024-01-01T00:00:01Z"`, true},
		{`"Variable":"$.ts","TimestampLessThanPath":"$.ts2"`, false},
		{`"Variable":"$.ts","TimestampGreaterThan":"2023-12-31T23:59:59Z"`, true},
		{`"Variable":"$.ts","TimestampGreaterThanPath":"$.ts2"`, false},
		{`"Variable":"$.ts","TimestampLessThanEquals":"2024-01-01T00:00:00Z"`, true},
		{`"Variable":"$.ts","TimestampLessThanEqualsPath":"$.ts2"`, true},
		{`"Variable":"$.ts","TimestampGreaterThanEquals":"2024-01-02T00:00:00Z"`, false},
		{`"Variable":"$.ts","TimestampGreaterThanEqualsPath":"$.ts2"`, true},
		{`"Variable":"$.s","TimestampEquals":"2024-01-01T00:00:00Z"`, false},
		{`"Variable":"$.nil","IsNull":true`, true},
		{`"Variable":"$.s","IsNull":true`, false},
		{`"Variable":"$.s","IsPresent":true`, true},
		{`"Variable":"$.missing","IsPresent":true`, false},
		{`"Variable":"$.missing","IsPresent":false`, true},
		{`"Variable":"$.n","IsNumeric":true`, true},
		{`"Variable":"$.s","IsNumeric":false`, true},
		{`"Variable":"$.s","IsString":true`, true},
		{`"Variable":"$.b","IsBoolean":true`, true},
		{`"Variable":"$.ts","IsTimestamp":true`, true},
		{`"Variable":"$.s","IsTimestamp":true`, false},
		{`"And":[{"Variable":"$.n","NumericEquals":5},{"Variable":"$.b","BooleanEquals":true}]`, true},
		{`"And":[{"Variable":"$.n","NumericEquals":5},{"Variable":"$.b","BooleanEquals":false}]`, false},
		{`"Or":[{"Variable":"$.n","NumericEquals":1},{"Variable":"$.b","BooleanEquals":true}]`, true},
		{`"Or":[{"Variable":"$.n","NumericEquals":1},{"Variable":"$.b","BooleanEquals":false}]`, false},
		{`"Not":{"Variable":"$.n","NumericEquals":1}`, true},
		{`"Not":{"And":[{"Variable":"$.missing","IsPresent":true},{"Variable":"$.missing","StringEquals":"x"}]}`, true},
		{`"Variable":"$$.Execution.Name","StringEquals":"exec1"`, true},
	}
	tested := map[string]bool{}
	for _, tt := range tests {
		for _, m := range regexp.MustCompile(`"(\w+)":`).FindAllStringSubmatch(tt.rule, -1) {
			tested[m[1]] = true
		}
	}
	for op := range comparisons {
		if !tested[op] {
			t.Errorf("operator %s has no case here", op)
		}
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			def := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{` + tt.rule + `,"Next":"Yes"}],"Default":"No"},
			  "Yes":{"Type":"Pass","Result":"yes","End":true},"No":{"Type":"Pass","Result":"no","End":true}}}`
			res, _ := runDef(t, def, input)
			mustSucceed(t, res)
			want := `"no"`
			if tt.want {
				want = `"yes"`
			}
			mustJSONEqual(t, res.Output, want)
		})
	}
}

func TestChoiceFlow(t *testing.T) {
	t.Parallel()
	def := `{"StartAt":"C","States":{"C":{"Type":"Choice","InputPath":"$.in","OutputPath":"$.keep","Choices":[
	  {"Variable":"$.n","NumericGreaterThan":10,"Next":"Big"},{"Variable":"$.n","NumericGreaterThan":0,"Next":"Small"}]},
	  "Big":{"Type":"Pass","Result":"big","ResultPath":"$.r","End":true},"Small":{"Type":"Pass","Result":"small","ResultPath":"$.r","End":true}}}`
	res, _ := runDef(t, def, `{"in":{"n":50,"keep":{"k":1}}}`)
	mustSucceed(t, res)
	mustJSONEqual(t, res.Output, `{"k":1,"r":"big"}`) // first matching rule; OutputPath on the effective input

	res, _ = runDef(t, def, `{"in":{"n":-1,"keep":{}}}`)
	if res.Status != StatusFailed || res.Error != ErrNoChoiceMatched {
		t.Fatalf("got %s %s", res.Status, res.Error)
	}
}

func TestMatchWildcard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"a*c*e", "abcde", true},
		{"a*c*e", "abcdf", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{`a\\b`, `a\b`, true},
		{"log-*.txt", "log-2024-01.txt", true},
		{"**", "x", true},
	}
	for _, tt := range tests {
		if got := matchWildcard(tt.pattern, tt.s); got != tt.want {
			t.Errorf("matchWildcard(%q, %q) = %v", tt.pattern, tt.s, got)
		}
	}
}

func TestChoiceParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ rule, want string }{
		{`"Variable":"$.a","StringEquals":1`, "must be a string"},
		{`"Variable":"$.a","NumericEquals":"1"`, "must be a number"},
		{`"Variable":"$.a","TimestampEquals":"yesterday"`, "RFC 3339"},
		{`"Variable":"$.a","IsNull":"yes"`, "must be a boolean"},
		{`"Variable":"$.a","StringEqualsPath":"nope"`, "must start with $"},
		{`"Variable":"$.a","Bogus":1`, "unknown field Bogus"},
		{`"Variable":"$.a","StringEquals":"x","NumericEquals":1`, "exactly one operator"},
		{`"StringEquals":"x"`, "missing required field Variable"},
		{`"And":[{"Variable":"$.a","IsNull":true,"Next":"X"}]`, "only allowed on top-level"},
		{`"And":[]`, "non-empty"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			def := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{` + tt.rule + `,"Next":"X"}]},"X":{"Type":"Succeed"}}}`
			_, err := Parse([]byte(def))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `state "C"`) {
				t.Fatalf("error %v, want one naming state C and containing %q", err, tt.want)
			}
		})
	}
}

// TestComparisonTableIsTheSpecList pins the operator table to the Choice
// operators the Amazon States Language defines
// (https://states-language.net/spec.html#choice-state), so a name lost or
// misspelt while editing the table fails here rather than at parse time of
// some definition.
func TestComparisonTableIsTheSpecList(t *testing.T) {
	t.Parallel()
	var want []string
	for _, family := range []string{"String", "Numeric", "Timestamp"} {
		for _, order := range []string{"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"} {
			want = append(want, family+order, family+order+"Path")
		}
	}
	want = append(want, "StringMatches", "BooleanEquals", "BooleanEqualsPath",
		"IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp")
	var got []string
	for op, c := range comparisons {
		got = append(got, op)
		if c.path != strings.HasSuffix(op, "Path") {
			t.Errorf("%s: path = %v", op, c.path)
		}
		if c.allowsMissing != (op == "IsPresent") {
			t.Errorf("%s: allowsMissing = %v", op, c.allowsMissing)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("operators\n got %v\nwant %v", got, want)
	}
}
