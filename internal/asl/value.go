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
	"unicode/utf16"
	"unicode/utf8"
)

// Runtime data is kept as the generic JSON tree encoding/json produces,
// with numbers as json.Number so integers and decimals survive unchanged.

func decodeValue(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	// Every task's output is decoded: the common JSON (no escapes in
	// strings) is parsed directly; anything else, and every error, by
	// encoding/json.
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

// parseValue parses raw as decodeValue does (maps, slices, strings,
// json.Number, bools, nil) when it is well-formed JSON whose strings have
// no escapes, control bytes or invalid UTF-8; ok is false otherwise.
func parseValue(raw []byte) (v any, ok bool) {
	p := valueParser{b: raw}
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.b)
}

type valueParser struct {
	b []byte
	i int
}

// maxParseDepth leaves deeper documents to encoding/json (its own limit).
const maxParseDepth = 200

func (p *valueParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next consumes what follows an element of an object or array: close
// ends it (end), a comma announces another element; anything else is not
// JSON (ok false).
func (p *valueParser) next(close byte) (end, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case close:
		p.i++
		return true, true
	case ',':
		p.i++
		return false, true
	}
	return false, false
}

func (p *valueParser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.b) || depth > maxParseDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.string()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			end, ok := p.next('}')
			if !ok {
				return nil, false
			}
			if end {
				return m, true
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			end, ok := p.next(']')
			if !ok {
				return nil, false
			}
			if end {
				return a, true
			}
		}
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		start := p.i
		for p.i < len(p.b) {
			if c := p.b[p.i]; (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
				break
			}
			p.i++
		}
		n := string(p.b[start:p.i])
		return json.Number(n), plainNumber(n)
	}
}

func (p *valueParser) literal(word string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

// string reads a string without control bytes or invalid UTF-8.
func (p *valueParser) string() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start, ascii := p.i+1, true
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			s := p.b[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			p.i = i + 1
			return string(s), true
		case c == '\\':
			return p.escaped(start, i, ascii)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escaped reads the rest of a string whose first escape is at i (its
// contents start at start): the escapes encoding/json reads, but \u of a
// UTF-16 surrogate (a pair, or a lone one that becomes U+FFFD), which is
// left to encoding/json with control bytes and invalid UTF-8. A Convert
// result carries the STAC item's document as a string, every quote and
// line break of it escaped.
func (p *valueParser) escaped(start, i int, ascii bool) (string, bool) {
	out := make([]byte, 0, i-start+64)
	out = append(out, p.b[start:i]...)
	for i < len(p.b) {
		c := p.b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(out) {
				return "", false
			}
			p.i = i + 1
			return string(out), true
		case c == '\\':
			if i+1 >= len(p.b) {
				return "", false
			}
			switch e := p.b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				if i+6 > len(p.b) {
					return "", false
				}
				r, err := strconv.ParseUint(string(p.b[i+2:i+6]), 16, 16)
				if err != nil || utf16.IsSurrogate(rune(r)) {
					return "", false
				}
				out = utf8.AppendRune(out, rune(r))
				i += 4
			default:
				return "", false
			}
			i += 2
		case c < 0x20:
			return "", false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			out = append(out, c)
			i++
		}
	}
	return "", false
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
