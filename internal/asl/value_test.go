package asl

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
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
		if got, want := string(encodeValue(v)), stdEncode(t, v); got != want {
			t.Fatalf("encodeValue = %s, want %s", got, want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
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
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e5": true, "-1.25E-7": true, "1e+2": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false, "0x10": false, "NaN": false, "1_0": false,
	} {
		if got := plainNumber(s); got != want {
			t.Errorf("plainNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
