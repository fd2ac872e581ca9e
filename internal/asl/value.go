package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Runtime data is kept as the generic JSON tree encoding/json produces,
// with numbers as json.Number so integers and decimals survive unchanged.

func decodeValue(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	// Every task's output is decoded: the common JSON is parsed directly
	// (parseValue); anything else, and every error, by encoding/json.
	if v, ok := parseValue(raw); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after JSON value")
	}
	return v, nil
}

// encodeValue encodes v as encoding/json does (map keys sorted, no HTML
// escaping). Every state's input and output is encoded for the history,
// so the tree decodeValue makes (maps, slices, plain strings, numbers) is
// written directly; anything else goes through encoding/json.
func encodeValue(v any) json.RawMessage {
	bp := encodeBuffers.Get().(*[]byte)
	b := appendValue((*bp)[:0], v)
	out := json.RawMessage(bytes.Clone(b))
	if cap(b) <= 64<<10 {
		*bp = b
		encodeBuffers.Put(bp)
	}
	return out
}

// encodedLen is len(encodeValue(v)) without keeping the bytes.
func encodedLen(v any) int {
	bp := encodeBuffers.Get().(*[]byte)
	b := appendValue((*bp)[:0], v)
	n := len(b)
	if cap(b) <= 64<<10 {
		*bp = b
		encodeBuffers.Put(bp)
	}
	return n
}

var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func appendValue(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case string:
		return appendString(b, t)
	case json.Number:
		if t == "" {
			return append(b, '0')
		}
		if plainNumber(string(t)) {
			return append(b, t...)
		}
	case map[string]any:
		if t == nil {
			return append(b, "null"...)
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendValue(b, t[k])
		}
		return append(b, '}')
	case []any:
		if t == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	}
	return appendStd(b, v)
}

// appendString writes s quoted as encoding/json does without HTML
// escaping: \" \\ \b \f \n \r \t, other control bytes as \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainNumber reports whether s is a JSON number (encoding/json writes a
// json.Number as is once it checked that).
func plainNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

func appendStd(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only values built from decoded JSON reach here, so this is a bug.
		panic(fmt.Sprintf("asl: encode %T: %v", v, err))
	}
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}

func numberOf(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// intOf accepts only numbers with an integral value.
func intOf(v any) (int, bool) {
	f, ok := numberOf(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

func intValue(i int) json.Number { return json.Number(strconv.Itoa(i)) }

// equalValues compares JSON values, numbers by value.
func equalValues(a, b any) bool {
	if fa, ok := numberOf(a); ok {
		fb, ok := numberOf(b)
		return ok && fa == fb
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !equalValues(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !equalValues(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if _, ok := numberOf(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
