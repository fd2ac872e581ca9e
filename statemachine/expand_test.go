package statemachine

import (
	"context"
	"encoding/json"
	"slices"
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

// TestContainerPathFitsTheExecution: on the container path, HashCheck,
// RunConvertTask, ReadConvertResult and Promote (or Classify), each at its
// TimeoutSeconds, end before the execution's TimeoutSeconds; and the
// throttled RunTask (ECS.InvalidParameterException) is retried.
func TestContainerPathFitsTheExecution(t *testing.T) {
	for _, tt := range []TaskTimeouts{DefaultTaskTimeouts, {HashCheck: 300, Convert: 900, Promote: 120, Classify: 60}} {
		def, err := ExpandMigrate(Migrate, tt)
		if err != nil {
			t.Fatal(err)
		}
		type state struct {
			TimeoutSeconds int
			Retry          []struct{ ErrorEquals []string }
			Branches       []struct{ States map[string]json.RawMessage }
		}
		var m struct {
			TimeoutSeconds int
			States         map[string]state
		}
		if err := json.Unmarshal(def, &m); err != nil {
			t.Fatal(err)
		}
		branch := map[string]state{}
		for name, raw := range m.States["ConvertInContainer"].Branches[0].States {
			var st state
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			branch[name] = st
		}
		run, read := branch["RunConvertTask"], branch["ReadConvertResult"]
		path := m.States["HashCheck"].TimeoutSeconds + run.TimeoutSeconds + read.TimeoutSeconds +
			max(m.States["Promote"].TimeoutSeconds, m.States["Classify"].TimeoutSeconds)
		if path > m.TimeoutSeconds || run.TimeoutSeconds < tt.Convert {
			t.Errorf("%+v: HashCheck + RunConvertTask (%d s) + ReadConvertResult + Promote = %d s; the execution has %d s",
				tt, run.TimeoutSeconds, path, m.TimeoutSeconds)
		}
		if read.TimeoutSeconds != ContainerResultReadSeconds {
			t.Errorf("ReadConvertResult TimeoutSeconds %d, ContainerResultReadSeconds %d", read.TimeoutSeconds, ContainerResultReadSeconds)
		}
		retried := false
		for _, r := range run.Retry {
			retried = retried || slices.Contains(r.ErrorEquals, "ECS.InvalidParameterException")
		}
		if !retried {
			t.Error("RunConvertTask does not retry ECS.InvalidParameterException (a throttled RunTask)")
		}
	}
	// Timeouts that leave the container less than the Lambda are refused.
	if _, err := ExpandMigrate(Migrate, TaskTimeouts{HashCheck: 900, Convert: 900, Promote: 900, Classify: 60}); err != nil {
		t.Errorf("default-sized timeouts refused: %v", err)
	}
	if _, err := ContainerTaskTimeout(7200, TaskTimeouts{HashCheck: 3500, Convert: 900, Promote: 3000, Classify: 60}); err == nil {
		t.Error("a container timeout shorter than the Lambda's was accepted")
	}
}
