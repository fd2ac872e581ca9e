package asl

import (
	"strings"
	"testing"
)

func TestJSONPathGet(t *testing.T) {
	t.Parallel()
	doc := `{"a":{"b":[10,20,30],"c d":{"e":1}},"l":[{"v":1},{"v":2},{"w":3}],"z":null}`
	tests := []struct {
		path  string
		want  string // "" means not found
		found bool
	}{
		{"$", doc, true},
		{"$.a.b", `[10,20,30]`, true},
		{"$.a.b[0]", `10`, true},
		{"$.a.b[-1]", `30`, true},
		{"$.a.b[5]", "", false},
		{"$.a['c d'].e", `1`, true},
		{`$.a["c d"]["e"]`, `1`, true},
		{"$.z", `null`, true},
		{"$.missing", "", false},
		{"$.a.b.c", "", false},
		{"$.l[*].v", `[1,2]`, true},
		{"$.l[*].nope", `[]`, true},
		{"$.a.b[-1:]", `[30]`, true},
		{"$.a.b[0:2]", `[10,20]`, true},
		{"$.a.b[::2]", `[10,30]`, true},
		{"$.a.*", `[[10,20,30],{"e":1}]`, true},
	}
	root, _ := decodeValue([]byte(doc))
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := compilePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, found := p.get(root)
			if found != tt.found {
				t.Fatalf("found %v, want %v", found, tt.found)
			}
			if found {
				mustJSONEqual(t, encodeValue(got), tt.want)
			}
		})
	}
}

func TestJSONPathSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, input, want, err string
	}{
		{"$", `{"a":1}`, `"R"`, ""},
		{"$.a", `{"a":1}`, `{"a":"R"}`, ""},
		{"$.x.y.z", `{"a":1}`, `{"a":1,"x":{"y":{"z":"R"}}}`, ""},
		{"$['k k']", `{}`, `{"k k":"R"}`, ""},
		{"$.l[0].v", `{"l":[{"v":1}]}`, `{"l":[{"v":"R"}]}`, ""},
		{"$.a.b", `{"a":"str"}`, "", "cannot set field"},
		{"$.l[3]", `{"l":[]}`, "", "not present"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			in, _ := decodeValue([]byte(tt.input))
			orig := string(encodeValue(in))
			p, err := compileReferencePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.set(in, "R")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustJSONEqual(t, encodeValue(got), tt.want)
			if string(encodeValue(in)) != orig {
				t.Errorf("input mutated: %s", encodeValue(in))
			}
		})
	}
}

func TestJSONPathInvalid(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a.b", "$..a", "$.a[?(@.x)]", "$.", "$.a[", "$.a['x'", "$[x]", "$.a[1:2:0]", "$a"} {
		if _, err := compilePath(s); err == nil {
			t.Errorf("compilePath(%q) succeeded", s)
		}
	}
	for _, s := range []string{"$.a[*]", "$.a[1:]", "$.*"} {
		if _, err := compileReferencePath(s); err == nil {
			t.Errorf("compileReferencePath(%q) succeeded", s)
		}
	}
}
