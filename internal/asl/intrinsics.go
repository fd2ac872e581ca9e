package asl

// Size: the intrinsic-function parser and the intrinsics themselves, one short function each, looked up in one table.

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"unicode"
)

// intrinsicCall is a parsed intrinsic function invocation such as
// States.Format('{} items', States.ArrayLength($.items)).
type intrinsicCall struct {
	name string
	args []intrinsicArg
}

type intrinsicArg struct {
	lit  any    // literal value (string, json.Number, bool, nil)
	raw  string // string literal body as written, escapes kept (States.Format needs them)
	str  bool   // lit came from a string literal
	path *jsonPath
	call *intrinsicCall
}

type intrinsicFunc func(env *evalEnv, args []any, raws []string) (any, error)

var intrinsics map[string]intrinsicFunc

func init() {
	intrinsics = map[string]intrinsicFunc{
		"States.Format":         fnFormat,
		"States.StringToJson":   fnStringToJSON,
		"States.JsonToString":   fnJSONToString,
		"States.Array":          fnArray,
		"States.ArrayPartition": fnArrayPartition,
		"States.ArrayContains":  fnArrayContains,
		"States.ArrayRange":     fnArrayRange,
		"States.ArrayGetItem":   fnArrayGetItem,
		"States.ArrayLength":    fnArrayLength,
		"States.ArrayUnique":    fnArrayUnique,
		"States.Base64Encode":   fnBase64Encode,
		"States.Base64Decode":   fnBase64Decode,
		"States.Hash":           fnHash,
		"States.JsonMerge":      fnJSONMerge,
		"States.MathRandom":     fnMathRandom,
		"States.MathAdd":        fnMathAdd,
		"States.StringSplit":    fnStringSplit,
		"States.UUID":           fnUUID,
	}
}

var intrinsicCache sync.Map // string -> *intrinsicCall

func compileIntrinsic(s string) (*intrinsicCall, error) {
	if c, ok := intrinsicCache.Load(s); ok {
		return c.(*intrinsicCall), nil
	}
	p := &intrinsicParser{s: strings.TrimSpace(s)}
	c, err := p.call()
	if err == nil {
		p.space()
		if p.i != len(p.s) {
			err = fmt.Errorf("unexpected %q at offset %d", p.s[p.i:], p.i)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %w", s, err)
	}
	intrinsicCache.Store(s, c)
	return c, nil
}

type intrinsicParser struct {
	s string
	i int
}

func (p *intrinsicParser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *intrinsicParser) call() (*intrinsicCall, error) {
	start := p.i
	for p.i < len(p.s) && (isIdent(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name := p.s[start:p.i]
	if _, ok := intrinsics[name]; !ok {
		return nil, fmt.Errorf("unknown function %q", name)
	}
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, fmt.Errorf("expected ( after %s", name)
	}
	p.i++
	c := &intrinsicCall{name: name}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ')' {
		p.i++
		return c, nil
	}
	for {
		p.space()
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
		p.space()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated argument list of %s", name)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ')':
			p.i++
			return c, nil
		default:
			return nil, fmt.Errorf("unexpected %q in arguments of %s", p.s[p.i], name)
		}
	}
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *intrinsicParser) arg() (intrinsicArg, error) {
	if p.i >= len(p.s) {
		return intrinsicArg{}, fmt.Errorf("missing argument")
	}
	rest := p.s[p.i:]
	switch {
	case rest[0] == '\'':
		var val, raw strings.Builder
		for j := 1; j < len(rest); j++ {
			c := rest[j]
			if c == '\\' && j+1 < len(rest) {
				raw.WriteByte(c)
				raw.WriteByte(rest[j+1])
				val.WriteByte(rest[j+1])
				j++
				continue
			}
			if c == '\'' {
				p.i += j + 1
				return intrinsicArg{lit: val.String(), raw: raw.String(), str: true}, nil
			}
			raw.WriteByte(c)
			val.WriteByte(c)
		}
		return intrinsicArg{}, fmt.Errorf("unterminated string literal")
	case rest[0] == '$':
		// A path runs to the next top-level , or ); brackets may hold either.
		depth, quote, j := 0, byte(0), 0
	scan:
		for ; j < len(rest); j++ {
			c := rest[j]
			switch {
			case quote != 0:
				if c == '\\' {
					j++
				} else if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '[':
				depth++
			case c == ']':
				depth--
			case depth == 0 && (c == ',' || c == ')'):
				break scan
			}
		}
		// A backslash ending the text stepped past its end.
		j = min(j, len(rest))
		src := strings.TrimSpace(rest[:j])
		path, err := compilePath(src)
		if err != nil {
			return intrinsicArg{}, err
		}
		p.i += j
		return intrinsicArg{path: path}, nil
	case strings.HasPrefix(rest, "States."):
		c, err := p.call()
		return intrinsicArg{call: c}, err
	}
	j := 0
	for j < len(rest) && rest[j] != ',' && rest[j] != ')' && !unicode.IsSpace(rune(rest[j])) {
		j++
	}
	tok := rest[:j]
	p.i += j
	switch tok {
	case "true":
		return intrinsicArg{lit: true}, nil
	case "false":
		return intrinsicArg{lit: false}, nil
	case "null":
		return intrinsicArg{lit: nil}, nil
	}
	v, err := decodeValue([]byte(tok))
	if _, ok := numberOf(v); err != nil || !ok {
		return intrinsicArg{}, fmt.Errorf("bad argument %q", tok)
	}
	return intrinsicArg{lit: v}, nil
}

func (c *intrinsicCall) eval(env *evalEnv) (any, error) {
	args := make([]any, len(c.args))
	raws := make([]string, len(c.args))
	for i, a := range c.args {
		switch {
		case a.call != nil:
			v, err := a.call.eval(env)
			if err != nil {
				return nil, err
			}
			args[i] = v
		case a.path != nil:
			v, err := env.lookup(a.path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			args[i] = v
		default:
			args[i] = a.lit
			if a.str {
				raws[i] = a.raw
			}
		}
		if _, ok := args[i].(string); ok && raws[i] == "" && !c.args[i].str {
			raws[i] = strings.NewReplacer(`\`, `\\`).Replace(args[i].(string))
		}
	}
	v, err := intrinsics[c.name](env, args, raws)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return v, nil
}

func wantArgs(args []any, n int) error {
	if len(args) != n {
		return fmt.Errorf("takes %d arguments, got %d", n, len(args))
	}
	return nil
}

func argString(args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", fmt.Errorf("argument %d must be a string, got %s", i+1, typeName(args[i]))
	}
	return s, nil
}

func argArray(args []any, i int) ([]any, error) {
	a, ok := args[i].([]any)
	if !ok {
		return nil, fmt.Errorf("argument %d must be an array, got %s", i+1, typeName(args[i]))
	}
	return a, nil
}

func argInt(args []any, i int) (int, error) {
	n, ok := intOf(args[i])
	if !ok {
		return 0, fmt.Errorf("argument %d must be an integer, got %s", i+1, encodeValue(args[i]))
	}
	return n, nil
}

func fnFormat(_ *evalEnv, args []any, raws []string) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("needs a template argument")
	}
	if _, err := argString(args, 0); err != nil {
		return nil, err
	}
	tmpl := raws[0]
	var b strings.Builder
	next := 1
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '\\' && i+1 < len(tmpl):
			i++
			b.WriteByte(tmpl[i])
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			if next >= len(args) {
				return nil, fmt.Errorf("more placeholders than arguments in %q", tmpl)
			}
			if s, ok := args[next].(string); ok {
				b.WriteString(s)
			} else {
				b.Write(encodeValue(args[next]))
			}
			next++
			i++
		default:
			b.WriteByte(c)
		}
	}
	if next != len(args) {
		return nil, fmt.Errorf("%d arguments for %d placeholders", len(args)-1, next-1)
	}
	return b.String(), nil
}

func fnStringToJSON(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	s, err := argString(args, 0)
	if err != nil {
		return nil, err
	}
	v, err := decodeValue([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("invalid JSON %q: %w", s, err)
	}
	return v, nil
}

func fnJSONToString(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	return string(encodeValue(args[0])), nil
}

func fnArray(_ *evalEnv, args []any, _ []string) (any, error) {
	return append([]any{}, args...), nil
}

func fnArrayPartition(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	a, err := argArray(args, 0)
	if err != nil {
		return nil, err
	}
	size, err := argInt(args, 1)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("chunk size must be positive, got %d", size)
	}
	out := []any{}
	for i := 0; i < len(a); i += size {
		out = append(out, append([]any{}, a[i:min(i+size, len(a))]...))
	}
	return out, nil
}

func fnArrayContains(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	a, err := argArray(args, 0)
	if err != nil {
		return nil, err
	}
	for _, v := range a {
		if equalValues(v, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

func fnArrayRange(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 3); err != nil {
		return nil, err
	}
	var n [3]int
	for i := range n {
		v, err := argInt(args, i)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	start, end, stride := n[0], n[1], n[2]
	if stride == 0 {
		return nil, fmt.Errorf("step must not be 0")
	}
	out := []any{}
	for i := start; (stride > 0 && i <= end) || (stride < 0 && i >= end); i += stride {
		if len(out) == 1000 {
			return nil, fmt.Errorf("range exceeds 1000 items")
		}
		out = append(out, intValue(i))
	}
	return out, nil
}

func fnArrayGetItem(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	a, err := argArray(args, 0)
	if err != nil {
		return nil, err
	}
	i, err := argInt(args, 1)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(a) {
		return nil, fmt.Errorf("index %d out of range for array of length %d", i, len(a))
	}
	return a[i], nil
}

func fnArrayLength(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	a, err := argArray(args, 0)
	if err != nil {
		return nil, err
	}
	return intValue(len(a)), nil
}

func fnArrayUnique(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	a, err := argArray(args, 0)
	if err != nil {
		return nil, err
	}
	out := []any{}
outer:
	for _, v := range a {
		for _, seen := range out {
			if equalValues(v, seen) {
				continue outer
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func fnBase64Encode(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	s, err := argString(args, 0)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func fnBase64Decode(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 1); err != nil {
		return nil, err
	}
	s, err := argString(args, 0)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid base64: %w", err)
	}
	return string(b), nil
}

func fnHash(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	alg, err := argString(args, 1)
	if err != nil {
		return nil, err
	}
	var h hash.Hash
	switch alg {
	case "MD5":
		h = md5.New()
	case "SHA-1":
		h = sha1.New()
	case "SHA-256":
		h = sha256.New()
	case "SHA-384":
		h = sha512.New384()
	case "SHA-512":
		h = sha512.New()
	default:
		return nil, fmt.Errorf("unsupported algorithm %q (MD5, SHA-1, SHA-256, SHA-384, SHA-512)", alg)
	}
	data, ok := args[0].(string)
	if !ok {
		data = string(encodeValue(args[0]))
	}
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fnJSONMerge(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 3); err != nil {
		return nil, err
	}
	a, ok1 := args[0].(map[string]any)
	b, ok2 := args[1].(map[string]any)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("arguments 1 and 2 must be objects")
	}
	deep, ok := args[2].(bool)
	if !ok {
		return nil, fmt.Errorf("argument 3 must be a boolean")
	}
	if deep {
		// Step Functions supports only shallow merging.
		return nil, fmt.Errorf("deep merge is not supported, set the third argument to false")
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

func fnMathRandom(env *evalEnv, args []any, _ []string) (any, error) {
	if len(args) != 2 && len(args) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 arguments, got %d", len(args))
	}
	start, err := argInt(args, 0)
	if err != nil {
		return nil, err
	}
	end, err := argInt(args, 1)
	if err != nil {
		return nil, err
	}
	if end <= start {
		return nil, fmt.Errorf("end %d must be greater than start %d", end, start)
	}
	r := env.rand
	if len(args) == 3 {
		seed, err := argInt(args, 2)
		if err != nil {
			return nil, err
		}
		r = mrand.New(mrand.NewPCG(uint64(seed), uint64(seed))).Float64
	}
	// start inclusive, end exclusive, as documented for States.MathRandom.
	return intValue(start + int(math.Floor(r()*float64(end-start)))), nil
}

func fnMathAdd(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	a, err := argInt(args, 0)
	if err != nil {
		return nil, err
	}
	b, err := argInt(args, 1)
	if err != nil {
		return nil, err
	}
	return intValue(a + b), nil
}

func fnStringSplit(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 2); err != nil {
		return nil, err
	}
	s, err := argString(args, 0)
	if err != nil {
		return nil, err
	}
	delims, err := argString(args, 1)
	if err != nil {
		return nil, err
	}
	// Every character of the second argument is a delimiter; empty tokens are dropped.
	out := []any{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) }) {
		out = append(out, f)
	}
	return out, nil
}

func fnUUID(_ *evalEnv, args []any, _ []string) (any, error) {
	if err := wantArgs(args, 0); err != nil {
		return nil, err
	}
	return newUUID(), nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
