package asljudge

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func judges(t *testing.T) *Judges {
	t.Helper()
	j, err := Find("../..")
	if errors.Is(err, ErrNotInstalled) && os.Getenv(RequireEnv) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

const distributedMap = `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"Items",
 "ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"b","Prefix":"p/"}},
 "MaxConcurrencyPath":"$.n","ToleratedFailurePercentagePath":"$.pct",
 "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"r","Prefix":"out/"}},
 "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Item","States":{"Item":{"Type":"Succeed"}}},
 "End":true}}}`

// TestJudgesCanFail: each case must be rejected (or accepted) by the outside
// judges, so a definition the judges pass is known to have been judged.
func TestJudgesCanFail(t *testing.T) {
	j := judges(t)
	tests := []struct {
		name, def string
		ok        bool
		want      string // in the joined errors when !ok
	}{
		{"minimal", `{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}`, true, ""},
		{"distributed map fields newer than statelint", distributedMap, true, ""},
		{"duplicate names across map processors", `{"StartAt":"C","States":{
		 "C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"M1"}],"Default":"M2"},
		 "M1":{"Type":"Map","ItemProcessor":{"StartAt":"Item","States":{"Item":{"Type":"Succeed"}}},"End":true},
		 "M2":{"Type":"Map","ItemProcessor":{"StartAt":"Item","States":{"Item":{"Type":"Succeed"}}},"End":true}}}`, false, "Item"},
		{"duplicate names in a parallel branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[
		 {"StartAt":"P","States":{"P":{"Type":"Succeed"}}}],"End":true}}}`, false, "P"},
		{"unknown field", `{"StartAt":"A","States":{"A":{"Type":"Pass","Bogus":1,"End":true}}}`, false, "Bogus"},
		{"map field on a task is no false positive", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","ItemReader":{},"End":true}}}`, false, "ItemReader"},
		{"string timeout", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","TimeoutSeconds":"${T}","End":true}}}`, false, "TimeoutSeconds"},
		{"dangling next", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`, false, "B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := j.Judge(context.Background(), []byte(tt.def))
			if err != nil {
				t.Fatal(err)
			}
			if v.OK() != tt.ok {
				t.Fatalf("OK = %v, want %v; errors %q, allowed %q", v.OK(), tt.ok, v.Errors, v.Allowed)
			}
			if !tt.ok && !strings.Contains(strings.Join(v.Errors, "\n"), tt.want) {
				t.Errorf("errors %q do not mention %q", v.Errors, tt.want)
			}
		})
	}
}

// TestDuplicateNamesRejectedByBothJudges: neither judge alone is trusted
// with the rule this project broke once.
func TestDuplicateNamesRejectedByBothJudges(t *testing.T) {
	j := judges(t)
	v, err := j.Judge(context.Background(), []byte(`{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[
	 {"StartAt":"X","States":{"X":{"Type":"Succeed"}}},{"StartAt":"X","States":{"X":{"Type":"Succeed"}}}],"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var validator, statelint bool
	for _, e := range v.Errors {
		validator = validator || strings.HasPrefix(e, "asl-validator:")
		statelint = statelint || strings.HasPrefix(e, "statelint:")
	}
	if !validator || !statelint {
		t.Errorf("asl-validator rejected: %v, statelint rejected: %v; errors %q", validator, statelint, v.Errors)
	}
}
