package asl

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The direct parser decodeValue tries first: every task result is
// decoded, and encoding/json's reflection costs more than the parse.

// parseValue parses raw as decodeValue does (maps, slices, strings,
// json.Number, bools, nil) when it is well-formed JSON whose strings have
// no control bytes, invalid UTF-8 or escaped UTF-16 surrogates; ok is
// false otherwise.
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
