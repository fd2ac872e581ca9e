package asl

import (
	"strings"
	"testing"
)

func evalIntrinsic(t *testing.T, expr, input string) (any, error) {
	t.Helper()
	in, err := decodeValue([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	c, err := compileIntrinsic(expr)
	if err != nil {
		return nil, err
	}
	env := &evalEnv{input: in, ctx: map[string]any{"Execution": map[string]any{"Name": "exec1"}}, rand: func() float64 { return 0.5 }}
	return c.eval(env)
}

func TestIntrinsics(t *testing.T) {
	t.Parallel()
	input := `{"name":"box","n":3,"arr":[1,2,2,"a","a",{"k":1},{"k":1}],"obj":{"a":1,"b":{"x":1}},"obj2":{"b":2,"c":3},"s":"{\"q\":[1,2]}","csv":"a,b,,c"}`
	tests := []struct {
		expr, want string
	}{
		{`States.Format('Hello {}', $.name)`, `"Hello box"`},
		{`States.Format('{} + {} = {}', 1, $.n, States.MathAdd(1, $.n))`, `"1 + 3 = 4"`},
		{`States.Format('obj {} arr {} null {} bool {}', $.obj2, States.Array(1,'x'), null, true)`, `"obj {\"b\":2,\"c\":3} arr [1,\"x\"] null null bool true"`},
		{`States.Format('braces \{\} and quote \' and backslash \\ {}', 'x')`, `"braces {} and quote ' and backslash \\ x"`},
		{`States.Format('exec {}', $$.Execution.Name)`, `"exec exec1"`},
		{`States.StringToJson($.s)`, `{"q":[1,2]}`},
		{`States.JsonToString($.obj2)`, `"{\"b\":2,\"c\":3}"`},
		{`States.StringToJson(States.JsonToString($.obj))`, `{"a":1,"b":{"x":1}}`},
		{`States.Array('a', 1, true, null, $.obj2.b)`, `["a",1,true,null,2]`},
		{`States.Array()`, `[]`},
		{`States.ArrayPartition(States.Array(1,2,3,4,5), 2)`, `[[1,2],[3,4],[5]]`},
		{`States.ArrayContains($.arr, 'a')`, `true`},
		{`States.ArrayContains($.arr, $.obj2)`, `false`},
		{`States.ArrayContains($.arr, 2.0)`, `true`},
		{`States.ArrayRange(1, 9, 2)`, `[1,3,5,7,9]`},
		{`States.ArrayRange(5, 1, -2)`, `[5,3,1]`},
		{`States.ArrayGetItem($.arr, 3)`, `"a"`},
		{`States.ArrayLength($.arr)`, `7`},
		{`States.ArrayUnique($.arr)`, `[1,2,"a",{"k":1}]`},
		{`States.Base64Encode('Data to encode')`, `"RGF0YSB0byBlbmNvZGU="`},
		{`States.Base64Decode('RGF0YSB0byBlbmNvZGU=')`, `"Data to encode"`},
		{`States.Hash('abc', 'SHA-256')`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`},
		{`States.Hash('input data', 'MD5')`, `"812f45842bc6d66ee14572ce20db8e86"`},
		{`States.Hash('abc', 'SHA-1')`, `"a9993e364706816aba3e25717850c26c9cd0d89d"`},
		{`States.JsonMerge($.obj, $.obj2, false)`, `{"a":1,"b":2,"c":3}`},
		{`States.MathRandom(0, 10)`, `5`},
		{`States.MathAdd($.n, -5)`, `-2`},
		{`States.StringSplit($.csv, ',')`, `["a","b","c"]`},
		{`States.StringSplit('This.is+a,test=string', '.+,=')`, `["This","is","a","test","string"]`},
		{`States.ArrayLength( States.StringSplit( 'a b' , ' ' ) )`, `2`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := evalIntrinsic(t, tt.expr, input)
			if err != nil {
				t.Fatal(err)
			}
			mustJSONEqual(t, encodeValue(got), tt.want)
		})
	}
}

func TestIntrinsicRandomAndUUID(t *testing.T) {
	t.Parallel()
	a, err := evalIntrinsic(t, `States.MathRandom(1, 1000, 42)`, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := evalIntrinsic(t, `States.MathRandom(1, 1000, 42)`, `{}`)
	if !equalValues(a, b) {
		t.Errorf("seeded MathRandom not deterministic: %v %v", a, b)
	}
	u, err := evalIntrinsic(t, `States.UUID()`, `{}`)
	if s, ok := u.(string); err != nil || !ok || len(s) != 36 || s[14] != '4' {
		t.Errorf("UUID %v %v", u, err)
	}
}

func TestIntrinsicErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{`States.Nope(1)`, "unknown function"},
		{`States.Format('{} {}', 1)`, "more placeholders"},
		{`States.Format('{}', 1, 2)`, "2 arguments for 1 placeholders"},
		{`States.ArrayGetItem(States.Array(1), 5)`, "out of range"},
		{`States.ArrayPartition(States.Array(1), 0)`, "positive"},
		{`States.ArrayRange(1, 2000, 1)`, "1000"},
		{`States.JsonMerge($.a, $.a, true)`, "deep merge"},
		{`States.Hash('x', 'CRC32')`, "unsupported algorithm"},
		{`States.MathAdd(1.5, 1)`, "integer"},
		{`States.Base64Decode('***')`, "base64"},
		{`States.ArrayLength($.missing)`, "could not be found"},
		{`States.Format('unterminated`, "unterminated"},
		{`States.Array(1,`, "missing argument"},
		{`States.Array(1) extra`, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := evalIntrinsic(t, tt.expr, `{"a":{}}`)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
