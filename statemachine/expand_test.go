package statemachine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
)

func TestExpandValues(t *testing.T) {
	tests := []struct {
		name, def string
		values    map[string]any
		want      string // expanded JSON, or the error substring when wantErr
		wantErr   bool
	}{
		{"number", `{"T":"${Timeout}","F":"${Fn}"}`, map[string]any{"Timeout": 900}, `{"T":900,"F":"${Fn}"}`, false},
		{"list", `{"Or":"${Rules}"}`, map[string]any{"Rules": []map[string]any{{"Variable": "$.key", "StringMatches": "a/*"}}}, `{"Or":[{"StringMatches":"a/*","Variable":"$.key"}]}`, false},
		{"used twice", `{"A":"${T}","B":"${T}"}`, map[string]any{"T": 1}, `{"A":1,"B":1}`, false},
		{"no placeholder", `{"T":1}`, map[string]any{"T": 1}, `no "${T}" value placeholder`, true},
		{"inside a longer string", `{"A":"${T}","B":"x ${T}"}`, map[string]any{"T": 1}, "inside a longer string", true},
		{"key position breaks JSON", `{"${T}":1}`, map[string]any{"T": 1}, "not valid JSON", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ExpandValues([]byte(tt.def), tt.values)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want one containing %q", err, tt.want)
				}
				return
			}
			if err != nil || string(out) != tt.want {
				t.Fatalf("got %s, %v; want %s", out, err, tt.want)
			}
		})
	}
}

func TestExpandMigrateSetsEveryLambdaTaskTimeout(t *testing.T) {
	want := TaskTimeouts{HashCheck: 11, Convert: 22, Promote: 33, Classify: 44}
	def, err := ExpandMigrate(Migrate, want)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		States map[string]struct {
			Resource       string
			TimeoutSeconds json.RawMessage
		}
	}
	if err := json.Unmarshal(def, &raw); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, st := range raw.States {
		if st.Resource == "arn:aws:states:::lambda:invoke" {
			got[name] = string(st.TimeoutSeconds)
		}
	}
	for name, secs := range map[string]string{"HashCheck": "11", "Convert": "22", "Promote": "33", "Classify": "44"} {
		if got[name] != secs {
			t.Errorf("%s TimeoutSeconds = %s, want %s", name, got[name], secs)
		}
	}
	if len(got) != 4 {
		t.Errorf("lambda tasks %v, want exactly HashCheck, Convert, Promote, Classify", got)
	}
	if _, err := ExpandMigrate(Migrate, TaskTimeouts{HashCheck: 1, Convert: 0, Promote: 1, Classify: 1}); err == nil {
		t.Error("a zero timeout was accepted")
	}
}

// TestPrefixRulesMatchLikeS3Prefixes runs the expanded rules through the
// executor's Choice evaluation: a key is in scope when it starts with a
// prefix, literally (* and \ in a prefix are not wildcards).
func TestPrefixRulesMatchLikeS3Prefixes(t *testing.T) {
	tests := []struct {
		prefixes []string
		key      string
		in       bool
	}{
		{[]string{"incoming/"}, "incoming/a.tif", true},
		{[]string{"incoming/"}, "incoming/", true},
		{[]string{"incoming/"}, "other/incoming/a.tif", false},
		{[]string{"incoming/"}, "incoming", false},
		{[]string{"raw/", "legacy/gis/"}, "legacy/gis/x.shp", true},
		{[]string{"raw/", "legacy/gis/"}, "legacy/x.shp", false},
		{[]string{""}, "anything/at/all", true},
		{nil, "anything", true},
		{[]string{`odd\*name/`}, `odd\*name/a`, true},
		{[]string{`odd\*name/`}, `odd\xname/a`, false},
	}
	for _, tt := range tests {
		rules, _ := json.Marshal(PrefixRules("$.key", tt.prefixes))
		def := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Or":` + string(rules) + `,"Next":"In"}],"Default":"Out"},` +
			`"In":{"Type":"Succeed"},"Out":{"Type":"Fail","Error":"Out"}}}`
		sm, err := asl.Parse([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		input, _ := json.Marshal(map[string]string{"key": tt.key})
		res, err := asl.NewExecutor(sm).Run(context.Background(), "x", input)
		if err != nil {
			t.Fatal(err)
		}
		if in := res.Status == asl.StatusSucceeded; in != tt.in {
			t.Errorf("prefixes %q, key %q: in scope %v, want %v", tt.prefixes, tt.key, in, tt.in)
		}
	}
}
