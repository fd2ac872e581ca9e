package asl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// jsonPath is the subset of JSONPath Step Functions accepts in the JSONPath
// query language: $ or $$ followed by .name, ['name'], [n], [*], .* and
// [start:end:step]. Filters and deep scan are rejected at parse time.
type jsonPath struct {
	src     string
	context bool // rooted at $$, the context object
	segs    []segment
}

type segKind int

const (
	segField segKind = iota
	segIndex
	segWildcard
	segSlice
)

type segment struct {
	kind             segKind
	name             string
	index            int
	start, end, step *int
}

// definite reports whether the path selects at most one node; otherwise its
// result is an array of the matches, as in Jayway JSONPath.
func (p *jsonPath) definite() bool {
	for _, s := range p.segs {
		if s.kind == segWildcard || s.kind == segSlice {
			return false
		}
	}
	return true
}

var pathCache sync.Map // string -> *jsonPath

func compilePath(s string) (*jsonPath, error) {
	if p, ok := pathCache.Load(s); ok {
		return p.(*jsonPath), nil
	}
	p, err := parsePath(s)
	if err != nil {
		return nil, err
	}
	pathCache.Store(s, p)
	return p, nil
}

// compileReferencePath compiles a path that must name a single node, as
// ResultPath, ItemsPath and Choice Variables require.
func compileReferencePath(s string) (*jsonPath, error) {
	p, err := compilePath(s)
	if err != nil {
		return nil, err
	}
	if !p.definite() {
		return nil, fmt.Errorf("invalid reference path %q: wildcards and slices are not allowed", s)
	}
	return p, nil
}

func parsePath(s string) (*jsonPath, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("invalid JSONPath %q: %s", s, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(s, "$") {
		return nil, bad("must start with $")
	}
	p := &jsonPath{src: s}
	i := 1
	if strings.HasPrefix(s, "$$") {
		p.context = true
		i = 2
	}
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
			if i < len(s) && s[i] == '.' {
				return nil, bad("deep scan (..) is not supported")
			}
			if i < len(s) && s[i] == '*' {
				p.segs = append(p.segs, segment{kind: segWildcard})
				i++
				continue
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i {
				return nil, bad("empty field name at offset %d", i)
			}
			p.segs = append(p.segs, segment{kind: segField, name: s[i:j]})
			i = j
		case '[':
			seg, n, err := parseBracket(s[i:])
			if err != nil {
				return nil, bad("%v", err)
			}
			p.segs = append(p.segs, seg)
			i += n
		default:
			return nil, bad("unexpected %q at offset %d", s[i], i)
		}
	}
	return p, nil
}

// parseBracket parses one [...] segment and returns its length.
func parseBracket(s string) (segment, int, error) {
	if len(s) < 2 {
		return segment{}, 0, fmt.Errorf("unterminated [")
	}
	if q := s[1]; q == '\'' || q == '"' {
		var b strings.Builder
		for i := 2; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == q:
				if i+1 >= len(s) || s[i+1] != ']' {
					return segment{}, 0, fmt.Errorf("expected ] after quoted name")
				}
				return segment{kind: segField, name: b.String()}, i + 2, nil
			default:
				b.WriteByte(c)
			}
		}
		return segment{}, 0, fmt.Errorf("unterminated quoted name")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return segment{}, 0, fmt.Errorf("unterminated [")
	}
	body := strings.TrimSpace(s[1:end])
	switch {
	case body == "*":
		return segment{kind: segWildcard}, end + 1, nil
	case strings.HasPrefix(body, "?"):
		return segment{}, 0, fmt.Errorf("filter expressions are not supported")
	case strings.Contains(body, ":"):
		parts := strings.Split(body, ":")
		if len(parts) > 3 {
			return segment{}, 0, fmt.Errorf("bad slice %q", body)
		}
		seg := segment{kind: segSlice}
		ptrs := []**int{&seg.start, &seg.end, &seg.step}
		for k, part := range parts {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			n, err := strconv.Atoi(part)
			if err != nil {
				return segment{}, 0, fmt.Errorf("bad slice %q", body)
			}
			*ptrs[k] = &n
		}
		if seg.step != nil && *seg.step <= 0 {
			return segment{}, 0, fmt.Errorf("slice step must be positive")
		}
		return seg, end + 1, nil
	}
	n, err := strconv.Atoi(body)
	if err != nil {
		return segment{}, 0, fmt.Errorf("bad index %q", body)
	}
	return segment{kind: segIndex, index: n}, end + 1, nil
}

// get evaluates the path against root. A definite path reports found=false
// when a step is missing; an indefinite path returns the (possibly empty)
// array of matches.
func (p *jsonPath) get(root any) (any, bool) {
	if p.definite() {
		cur := root
		for _, s := range p.segs {
			next, ok := step(cur, s)
			if !ok {
				return nil, false
			}
			cur = next
		}
		return cur, true
	}
	cur := []any{root}
	for _, s := range p.segs {
		var next []any
		for _, node := range cur {
			next = append(next, expand(node, s)...)
		}
		cur = next
	}
	if cur == nil {
		cur = []any{}
	}
	return cur, true
}

func step(node any, s segment) (any, bool) {
	switch s.kind {
	case segField:
		m, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[s.name]
		return v, ok
	case segIndex:
		a, ok := node.([]any)
		if !ok {
			return nil, false
		}
		i := s.index
		if i < 0 {
			i += len(a)
		}
		if i < 0 || i >= len(a) {
			return nil, false
		}
		return a[i], true
	}
	return nil, false
}

func expand(node any, s segment) []any {
	switch s.kind {
	case segField, segIndex:
		if v, ok := step(node, s); ok {
			return []any{v}
		}
	case segWildcard:
		switch n := node.(type) {
		case []any:
			return n
		case map[string]any:
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			slices.Sort(keys) // maps lose document order; sorting keeps runs reproducible
			out := make([]any, 0, len(keys))
			for _, k := range keys {
				out = append(out, n[k])
			}
			return out
		}
	case segSlice:
		a, ok := node.([]any)
		if !ok {
			return nil
		}
		clamp := func(p *int, def int) int {
			if p == nil {
				return def
			}
			v := *p
			if v < 0 {
				v += len(a)
			}
			return max(0, min(v, len(a)))
		}
		start, end, stride := clamp(s.start, 0), clamp(s.end, len(a)), 1
		if s.step != nil {
			stride = *s.step
		}
		var out []any
		for i := start; i < end; i += stride {
			out = append(out, a[i])
		}
		return out
	}
	return nil
}

// set returns a copy of root with the node at the path replaced by val,
// creating intermediate objects as ResultPath does. Only the containers on
// the way are copied; everything else is shared.
func (p *jsonPath) set(root, val any) (any, error) {
	return setAt(root, p.segs, val, p.src)
}

func setAt(node any, segs []segment, val any, src string) (any, error) {
	if len(segs) == 0 {
		return val, nil
	}
	s := segs[0]
	switch s.kind {
	case segField:
		var m map[string]any
		switch n := node.(type) {
		case map[string]any:
			m = make(map[string]any, len(n)+1)
			for k, v := range n {
				m[k] = v
			}
		case nil:
			m = map[string]any{}
		default:
			return nil, fmt.Errorf("unable to apply ResultPath %q: cannot set field %q on a %s", src, s.name, typeName(node))
		}
		child, err := setAt(m[s.name], segs[1:], val, src)
		if err != nil {
			return nil, err
		}
		m[s.name] = child
		return m, nil
	case segIndex:
		a, ok := node.([]any)
		i := s.index
		if ok && i < 0 {
			i += len(a)
		}
		if !ok || i < 0 || i >= len(a) {
			return nil, fmt.Errorf("unable to apply ResultPath %q: index %d not present", src, s.index)
		}
		c := slices.Clone(a)
		child, err := setAt(c[i], segs[1:], val, src)
		if err != nil {
			return nil, err
		}
		c[i] = child
		return c, nil
	}
	return nil, fmt.Errorf("unable to apply ResultPath %q: not a reference path", src)
}
