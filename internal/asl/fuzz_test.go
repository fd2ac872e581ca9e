package asl

import (
	"encoding/json"
	"testing"
)

// The hand-written parsers of this package (state machine definitions,
// JSONPath, intrinsic functions) read text an author or a payload supplies:
// any input must give a value or an error, never a panic or a hang. Their
// seed corpora are in testdata/fuzz/<FuzzName>/ and run in every go test;
// `make fuzz-smoke` fuzzes each briefly.
//
//	go test ./internal/asl -run '^$' -fuzz '^FuzzParse$' -fuzztime 60s

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	f.Fuzz(func(t *testing.T, def []byte) {
		sm, err := Parse(def)
		if err == nil && sm == nil {
			t.Fatal("Parse returned neither a machine nor an error")
		}
	})
}

// fuzzDoc is the document JSONPaths and intrinsics are evaluated against.
const fuzzDoc = `{"a":{"b":[1,2,{"c":"x"}],"s":"{\"q\":[1,2]}","n":3},"arr":[1,"a",null,true,{"k":1}],"str":"a,b,,c"}`

func FuzzJSONPath(f *testing.F) {
	f.Add("$.a.b[2].c")
	f.Fuzz(func(t *testing.T, path string) {
		doc, err := decodeValue([]byte(fuzzDoc))
		if err != nil {
			t.Fatal(err)
		}
		if p, err := compilePath(path); err == nil {
			p.get(doc)
		}
		if p, err := compileReferencePath(path); err == nil {
			if !p.definite() {
				t.Fatalf("reference path %q compiled but is not definite", path)
			}
			out, err := p.set(doc, "v")
			if err == nil {
				if got, ok := p.get(out); !ok || got != "v" {
					t.Fatalf("%q: set then get gave %v, %v", path, got, ok)
				}
			}
		}
	})
}

func FuzzIntrinsic(f *testing.F) {
	f.Add("States.Format('{} and {}', $.a.n, States.Array(1, 'x'))")
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := compileIntrinsic(expr)
		if err != nil {
			return
		}
		in, err := decodeValue([]byte(fuzzDoc))
		if err != nil {
			t.Fatal(err)
		}
		env := &evalEnv{input: in, ctx: map[string]any{"Execution": map[string]any{"Name": "exec1"}}, rand: func() float64 { return 0.5 }}
		v, err := c.eval(env)
		if err == nil {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("%q gave a value that is not JSON: %v", expr, err)
			}
		}
	})
}
