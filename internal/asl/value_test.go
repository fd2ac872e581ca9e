package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// stdEncode is what encodeValue must produce: encoding/json without HTML
// escaping.
func stdEncode(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

func TestEncodeValueMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, "", "plain", "quote\" and \\ back", "tab\tnew\nline\x01", "<html>&", "é ü 日本", "\u2028\u2029", "bad \xff utf8", "del\x7f",
		json.Number("0"), json.Number("-12.5e+3"), json.Number(""), json.Number("1E9"),
		3.5, 7, []any(nil), map[string]any(nil), []any{}, map[string]any{},
		map[string]any{"b": []any{json.Number("1"), "x", nil}, "a": map[string]any{"z": true, "<": "&"}, "ä": 1.0},
		[]string{"typed", "slice"}, struct{ A int }{1},
	}
	for _, v := range values {
		if got, want := string(encodeValue(v)), stdEncode(t, v); got != want {
			t.Errorf("encodeValue(%#v) = %s, want %s", v, got, want)
		}
	}
	// Random trees of what decodeValue makes.
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "key", "x\"y", "a\\b", "é", "\n", "<>&", "z9", "A_b-c"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(7); {
		case k == 0 || depth > 4:
			return strs[r.IntN(len(strs))]
		case k == 1:
			return json.Number(strconv.Itoa(r.IntN(2000) - 1000))
		case k == 2:
			return r.IntN(2) == 0
		case k == 3:
			return nil
		case k == 4:
			a := make([]any, r.IntN(4))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range r.IntN(5) {
				m[strs[r.IntN(len(strs))]+strconv.Itoa(r.IntN(3))] = gen(depth + 1)
			}
			return m
		}
	}
	for range 2000 {
		v := gen(0)
		want := stdEncode(t, v)
		if got := string(encodeValue(v)); got != want {
			t.Fatalf("encodeValue = %s, want %s", got, want)
		}
		if n := encodedLen(v); n != len(want) {
			t.Fatalf("encodedLen = %d, want %d (%s)", n, len(want), want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "\"", "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "日", "\u2028", "\u2029", "\xff", "\xe6\x97", "<", "&", "😀"}
	for range 5000 {
		var sb []byte
		for range r.IntN(12) {
			sb = append(sb, alphabet[r.IntN(len(alphabet))]...)
		}
		s := string(sb)
		if got, want := string(appendString(nil, s)), stdEncode(t, s); got != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 {
		s := string([]byte{byte(c)})
		if got, want := string(appendString(nil, s)), stdEncode(t, s); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestPlainNumber(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e5": true, "-1.25E-7": true, "1e+2": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false, "0x10": false, "NaN": false, "1_0": false,
	} {
		if got := plainNumber(s); got != want {
			t.Errorf("plainNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

// parseValue gives what the decoder gives, and declines (for encoding/json
// to answer) everything it does not handle.
func TestParseValueMatchesDecoder(t *testing.T) {
	t.Parallel()
	std := func(raw string) (any, error) {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		if err == nil {
			if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
				err = errors.New("trailing data")
			}
		}
		return v, err
	}
	docs := []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e3`, `"x"`, ` {"a" : [1, "b", null, true, {"c": {}}], "a": 2} `,
		`{"job":{"id":"ds:abc","size":141,"outputs":[{"key":"a/b.parquet","sha":"é"}]}}`,
		`"esc\"aped"`, `"tab\there"`, "\"ctl\x01\"", "\"bad \xff\"", `01`, `1.`, `-`, `+1`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `[1 2]`, `tru`, `nul`,
		`{"a":1}x`, `"unterminated`, `{`, `[`, `{"a":`, `1e`, `"\u00e9"`, `[` + strings.Repeat(`[`, 300) + strings.Repeat(`]`, 301),
	}
	for _, raw := range docs {
		want, werr := std(raw)
		if v, ok := parseValue([]byte(raw)); ok {
			if werr != nil {
				t.Errorf("parseValue(%q) accepted what encoding/json refuses (%v)", raw, werr)
			} else if !reflect.DeepEqual(v, want) {
				t.Errorf("parseValue(%q) = %#v, want %#v", raw, v, want)
			}
		}
		got, gerr := decodeValue([]byte(raw))
		if (gerr != nil) != (werr != nil) || (gerr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeValue(%q) = %#v, %v; want %#v, %v", raw, got, gerr, want, werr)
		}
	}
	// Escapes: what encoding/json writes is parsed directly (a STAC item's
	// document travels as a string), the same as encoding/json reads it;
	// \u of a surrogate and malformed escapes are left to it.
	escapes := []struct {
		raw  string
		fast bool
	}{
		{`"a\"b\\c\/d\be\ff\ng\rh\ti"`, true}, {`"\u0041\u00e9\u2028\u003c\u0000"`, true}, {`{"k\n":"v\"","x":["\t"]}`, true},
		{"\"\\u00e9 raw é 日\"", true}, {`"\ud83d\ude00"`, false}, {`"\ud800"`, false}, {`"\udc00x"`, false},
		{`"\u12"`, false}, {`"\u12g4"`, false}, {`"\u+123"`, false}, {`"\x"`, false}, {`"\`, false}, {`"a\n`, false},
		{"\"\\n\x01\"", false}, {"\"\\n\xff\"", false}, {"\"\xe6\\n\x97\"", false},
	}
	for _, tc := range escapes {
		want, werr := std(tc.raw)
		v, ok := parseValue([]byte(tc.raw))
		switch {
		case ok && werr != nil:
			t.Errorf("parseValue(%q) accepted what encoding/json refuses (%v)", tc.raw, werr)
		case ok && !reflect.DeepEqual(v, want):
			t.Errorf("parseValue(%q) = %#v, want %#v", tc.raw, v, want)
		case ok != tc.fast:
			t.Errorf("parseValue(%q) ok = %v, want %v", tc.raw, ok, tc.fast)
		}
		got, gerr := decodeValue([]byte(tc.raw))
		if (gerr != nil) != (werr != nil) || (gerr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeValue(%q) = %#v, %v; want %#v, %v", tc.raw, got, gerr, want, werr)
		}
	}
	alphabet := []string{"a", "\"", "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "日", "\u2028", "\u2029", "<", "&", "😀"}
	rs := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		var sb strings.Builder
		for range rs.IntN(12) {
			sb.WriteString(alphabet[rs.IntN(len(alphabet))])
		}
		raw, err := json.Marshal(map[string]any{sb.String(): []any{sb.String()}})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := std(string(raw))
		if v, ok := parseValue(raw); ok && !reflect.DeepEqual(v, want) {
			t.Fatalf("parseValue(%s) = %#v, want %#v", raw, v, want)
		} else if !ok && !strings.Contains(string(raw), "\\ud") {
			t.Fatalf("parseValue(%s) left an escaped string without surrogates to encoding/json", raw)
		}
	}
	// Round trips of random trees.
	r := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		var buf bytes.Buffer
		writeRandomJSON(r, &buf, 0)
		want, werr := std(buf.String())
		if werr != nil {
			t.Fatalf("generated invalid JSON %s: %v", buf.String(), werr)
		}
		v, ok := parseValue(buf.Bytes())
		if !ok || !reflect.DeepEqual(v, want) {
			t.Fatalf("parseValue(%s) = %#v, %v; want %#v", buf.String(), v, ok, want)
		}
	}
}

func writeRandomJSON(r *rand.Rand, b *bytes.Buffer, depth int) {
	ws := func() { b.WriteString([]string{"", " ", "\n\t", ""}[r.IntN(4)]) }
	switch k := r.IntN(7); {
	case k == 0 || depth > 4:
		b.WriteString([]string{`"a"`, `""`, `"key é"`, `"日本"`, `"x y"`}[r.IntN(5)])
	case k == 1:
		b.WriteString([]string{`0`, `-12`, `3.25`, `1e9`, `-0.5E-3`, `1234567890123456789012`}[r.IntN(6)])
	case k == 2:
		b.WriteString([]string{`true`, `false`, `null`}[r.IntN(3)])
	case k == 3:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			writeRandomJSON(r, b, depth+1)
			ws()
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			fmt.Fprintf(b, `"k%d"`, r.IntN(3))
			ws()
			b.WriteByte(':')
			writeRandomJSON(r, b, depth+1)
		}
		b.WriteByte('}')
	}
}
