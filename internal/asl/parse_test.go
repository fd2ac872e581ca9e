package asl

import (
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	// Each definition is wrapped as needed; want must appear in the error.
	tests := []struct{ name, def, want string }{
		{"not json", `{`, "must be a JSON object"},
		{"unknown top-level field", `{"StartAt":"A","Bogus":1,"States":{"A":{"Type":"Succeed"}}}`, "unknown field(s) Bogus"},
		{"missing StartAt", `{"States":{"A":{"Type":"Succeed"}}}`, "StartAt"},
		{"dangling StartAt", `{"StartAt":"B","States":{"A":{"Type":"Succeed"}}}`, `StartAt "B" does not name a state`},
		{"unknown state type", `{"StartAt":"A","States":{"A":{"Type":"Lambda"}}}`, `state "A": unknown state type "Lambda"`},
		{"unknown state field", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Retry":[]}}}`, `state "A": unknown field(s) Retry`},
		{"dangling Next", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`, `state "A": Next "B" does not name a state`},
		{"dangling Default", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.x","IsNull":true,"Next":"A"}],"Default":"Z"}}}`, `Default "Z"`},
		{"dangling Catch Next", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"Next":"Z"}],"End":true}}}`, `Catch[0].Next "Z"`},
		{"unreachable", `{"StartAt":"A","States":{"A":{"Type":"Succeed"},"B":{"Type":"Succeed"}}}`, `state "B" is not reachable`},
		{"no Next or End", `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`, `state "A": must have Next or End`},
		{"both Next and End", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A","End":true}}}`, "both Next and End"},
		{"End false", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":false}}}`, "End must be true"},
		{"Succeed with Next", `{"StartAt":"A","States":{"A":{"Type":"Succeed","Next":"A"}}}`, "unknown field(s) Next"},
		{"Fail with End", `{"StartAt":"A","States":{"A":{"Type":"Fail","End":true}}}`, "unknown field(s) End"},
		{"task without Resource", `{"StartAt":"A","States":{"A":{"Type":"Task","End":true}}}`, "missing required field Resource"},
		{"invalid InputPath", `{"StartAt":"A","States":{"A":{"Type":"Pass","InputPath":"a.b","End":true}}}`, "InputPath"},
		{"ResultPath wildcard", `{"StartAt":"A","States":{"A":{"Type":"Pass","ResultPath":"$.a[*]","End":true}}}`, "reference path"},
		{"bad parameters path", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"$..y"},"End":true}}}`, "deep scan"},
		{"bad parameters intrinsic", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"States.Bogus()"},"End":true}}}`, "unknown function"},
		{"parameters literal not path", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"hello"},"End":true}}}`, "neither a JSONPath"},
		{"jitter", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"JitterStrategy":"HALF"}],"End":true}}}`, `state "A": Retry[0]: JitterStrategy must be FULL or NONE`},
		{"max delay zero", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"MaxDelaySeconds":0}],"End":true}}}`, "MaxDelaySeconds"},
		{"backoff below one", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"BackoffRate":0.5}],"End":true}}}`, "BackoffRate must be at least 1.0"},
		{"interval zero", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"IntervalSeconds":0}],"End":true}}}`, "IntervalSeconds"},
		{"negative attempts", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"MaxAttempts":-1}],"End":true}}}`, "MaxAttempts"},
		{"unknown retrier field", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"],"Backoff":2}],"End":true}}}`, "unknown field(s) Backoff"},
		{"States.ALL not alone", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["States.ALL","E"]}],"End":true}}}`, "States.ALL must appear alone"},
		{"States.ALL not last", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["States.ALL"]},{"ErrorEquals":["E"]}],"End":true}}}`, "States.ALL must appear alone"},
		{"States.ALL not last catcher", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"Next":"A"},{"ErrorEquals":["E"],"Next":"A"}],"End":true}}}`, "Catch[0]: States.ALL"},
		{"empty ErrorEquals", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":[]}],"End":true}}}`, "non-empty"},
		{"catch without Next", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["E"]}],"End":true}}}`, "missing required field Next"},
		{"timeout and path", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","TimeoutSeconds":1,"TimeoutSecondsPath":"$.t","End":true}}}`, "mutually exclusive"},
		{"wait two fields", `{"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":1,"SecondsPath":"$.s","End":true}}}`, "exactly one of Seconds"},
		{"wait bad timestamp", `{"StartAt":"A","States":{"A":{"Type":"Wait","Timestamp":"tomorrow","End":true}}}`, "RFC 3339"},
		{"fail error and path", `{"StartAt":"A","States":{"A":{"Type":"Fail","Error":"E","ErrorPath":"$.e"}}}`, "mutually exclusive"},
		{"duplicate state", `{"StartAt":"A","States":{"A":{"Type":"Succeed"},"A":{"Type":"Succeed"}}}`, "duplicate field"},
		{"empty branches", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[],"End":true}}}`, "Branches"},
		{"nested branch error", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","Next":"Y"}}}],"End":true}}}`, `state "P" > Branches[0] > state "X": Next "Y"`},
		{"nested map error", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Task","End":true}}},"End":true}}}`, `state "M" > ItemProcessor > state "X": missing required field Resource`},
		{"nested unreachable", `{"StartAt":"M","States":{"M":{"Type":"Map","Iterator":{"StartAt":"X","States":{"X":{"Type":"Succeed"},"Y":{"Type":"Succeed"}}},"End":true}}}`, `state "M" > Iterator > state "Y" is not reachable`},
		{"map without processor", `{"StartAt":"M","States":{"M":{"Type":"Map","End":true}}}`, "ItemProcessor or Iterator"},
		{"map bad mode", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"FAST"},"StartAt":"X","States":{"X":{"Type":"Succeed"}}},"End":true}}}`, "Mode must be INLINE or DISTRIBUTED"},
		{"inline map with reader", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"r"},"ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Succeed"}}},"End":true}}}`, "requires ItemProcessor.ProcessorConfig.Mode DISTRIBUTED"},
		{"tolerance range", `{"StartAt":"M","States":{"M":{"Type":"Map","ToleratedFailurePercentage":150,"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"X","States":{"X":{"Type":"Succeed"}}},"End":true}}}`, "between 0 and 100"},
		{"processor config outside map", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"ProcessorConfig":{},"StartAt":"X","States":{"X":{"Type":"Succeed"}}}],"End":true}}}`, "unknown field(s) ProcessorConfig"},
		{"duplicate name in a branch", `{"StartAt":"A","States":{"A":{"Type":"Parallel","Branches":[{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}],"End":true}}}`, `state name "A" is used at A and at A > Branches[0] > A`},
		{"duplicate name across branches", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{"X":{"Type":"Succeed"}}},{"StartAt":"X","States":{"X":{"Type":"Succeed"}}}],"End":true}}}`, `state name "X" is used at P > Branches[0] > X and at P > Branches[1] > X`},
		{"duplicate name in an item processor", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}},"Next":"Done"},"Done":{"Type":"Succeed"}}}`, `state name "Done" is used at M > ItemProcessor > Done and at Done`},
		{"duplicate name across distributed maps", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"M1"}],"Default":"M2"},` +
			`"M1":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Item","States":{"Item":{"Type":"Succeed"}}},"End":true},` +
			`"M2":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},"StartAt":"Item","States":{"Item":{"Type":"Succeed"}}},"End":true}}}`, `state name "Item" is used at M1 > ItemProcessor > Item and at M2 > ItemProcessor > Item`},
		{"duplicate name in a map inside a branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"M","States":{"M":{"Type":"Map","Iterator":{"StartAt":"P","States":{"P":{"Type":"Succeed"}}},"End":true}}}],"End":true}}}`, `state name "P" is used at P and at P > Branches[0] > M > ItemProcessor > P`},
		{"jsonata", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Succeed"}}}`, "QueryLanguage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.def))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "asl.Parse: ") {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

const pipelineDef = `{
  "Comment": "pipeline",
  "StartAt": "Normalize",
  "TimeoutSeconds": 3600,
  "States": {
    "Normalize": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "normalize", "Payload.$": "$"}, "ResultSelector": {"v.$": "$.Payload"}, "OutputPath": "$.v", "Next": "Route"},
    "Route": {"Type": "Choice", "Choices": [{"Variable": "$.skip", "BooleanEquals": true, "Next": "Done"}], "Default": "Both"},
    "Both": {"Type": "Parallel", "Branches": [
        {"StartAt": "B1", "States": {"B1": {"Type": "Pass", "End": true}}},
        {"StartAt": "B2", "States": {"B2": {"Type": "Wait", "Seconds": 1, "End": true}}}],
      "Retry": [{"ErrorEquals": ["TransientError"], "IntervalSeconds": 4, "MaxAttempts": 4, "BackoffRate": 2, "MaxDelaySeconds": 60, "JitterStrategy": "FULL"}],
      "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}],
      "Next": "Fanout"},
    "Fanout": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": true}}}, "Next": "Done"},
    "Done": {"Type": "Succeed"},
    "Failed": {"Type": "Fail", "Error": "Routed.DeadLetter"}
  }
}`

func TestParseAndWalk(t *testing.T) {
	t.Parallel()
	sm, err := Parse([]byte(pipelineDef))
	if err != nil {
		t.Fatal(err)
	}
	if sm.StartAt != "Normalize" || sm.TimeoutSeconds != 3600 || sm.Comment != "pipeline" {
		t.Errorf("top level %+v", sm)
	}
	var visited []string
	sm.Walk(func(path []string, name string, st *State) {
		visited = append(visited, strings.Join(append(path, name), "/")+":"+st.Type)
	})
	want := []string{"Normalize:Task", "Route:Choice", "Both:Parallel", "Both/Branches[0]/B1:Pass", "Both/Branches[1]/B2:Wait", "Fanout:Map", "Fanout/ItemProcessor/Item:Pass", "Done:Succeed", "Failed:Fail"}
	if strings.Join(visited, " ") != strings.Join(want, " ") {
		t.Errorf("walk\n got %v\nwant %v", visited, want)
	}
	both := sm.States["Both"]
	r := both.Retry[0]
	if r.IntervalSeconds != 4 || r.MaxAttempts != 4 || r.BackoffRate != 2 || r.MaxDelaySeconds != 60 || r.JitterStrategy != "FULL" || r.ErrorEquals[0] != "TransientError" {
		t.Errorf("retrier %+v", r)
	}
	if c := both.Catch[0]; c.Next != "Failed" || c.ResultPath.Path != "$.error" || c.ErrorEquals[0] != ErrAll {
		t.Errorf("catcher %+v", c)
	}
	if ch := sm.States["Route"].Choices[0]; ch.Variable != "$.skip" || ch.Operator != "BooleanEquals" || ch.Next != "Done" {
		t.Errorf("choice %+v", ch)
	}
	// Retrier defaults.
	sm, _ = Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["E"]}],"End":true}}}`))
	if r := sm.States["A"].Retry[0]; r.IntervalSeconds != 1 || r.MaxAttempts != 3 || r.BackoffRate != 2 || r.MaxDelaySeconds != 0 || r.JitterStrategy != "NONE" {
		t.Errorf("defaults %+v", r)
	}
}

func TestSubstitute(t *testing.T) {
	t.Parallel()
	def := []byte(`{"Resource":"${ConvertArn}","Q":"${DlqUrl}","again":"${ConvertArn}","intrinsic.$":"States.Format('{}', $.x)"}`)
	if got := Placeholders(def); strings.Join(got, ",") != "ConvertArn,DlqUrl" {
		t.Errorf("Placeholders = %v", got)
	}
	out, err := Substitute(def, map[string]string{"ConvertArn": "arn:aws:lambda:x:1:function:c", "DlqUrl": "https://q"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Resource":"arn:aws:lambda:x:1:function:c","Q":"https://q","again":"arn:aws:lambda:x:1:function:c","intrinsic.$":"States.Format('{}', $.x)"}`; string(out) != want {
		t.Errorf("Substitute = %s", out)
	}
	_, err = Substitute(def, map[string]string{"Other": "x"})
	if err == nil || !strings.Contains(err.Error(), "ConvertArn, DlqUrl") {
		t.Errorf("error %v, want both names", err)
	}
	out, err = Substitute([]byte(`"literal ${!Name} and ${X}"`), map[string]string{"X": "x"})
	if err != nil || string(out) != `"literal ${Name} and x"` || len(Placeholders([]byte(`${!Name}`))) != 0 {
		t.Errorf("Fn::Sub escape: %s %v", out, err)
	}
	if got := Placeholders([]byte(`{}`)); len(got) != 0 {
		t.Errorf("Placeholders of none = %v", got)
	}
}

func TestMermaid(t *testing.T) {
	t.Parallel()
	sm, err := Parse([]byte(pipelineDef))
	if err != nil {
		t.Fatal(err)
	}
	got := Mermaid(sm)
	if got != Mermaid(sm) {
		t.Fatal("output is not deterministic")
	}
	for _, want := range []string{
		"flowchart TD\n",
		`s1["Normalize (Task)"]`,
		`s2{"Route (Choice)"}`,
		`s3[["Both (Parallel)"]]`,
		`s1 --> s2`,
		`s2 -->|"$.skip BooleanEquals true"| s5`,
		`s2 -->|"Default"| s3`,
		`s3 -.->|"States.ALL"| s6`,
		`s5 --> __end__`,
		`s6 --> __failed__`,
		`s3 -.-> s8`,
		`__start__ --> s1`,
		`subgraph s7["Both Branches[0]"]`,
		`subgraph s11["Fanout ItemProcessor"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
