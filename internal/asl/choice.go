package asl

import (
	"fmt"
	"strings"
)

// operandKind is what a comparison operator's literal operand must be (for
// a Path variant: what the referenced value is compared as).
type operandKind int

const (
	opString operandKind = iota
	opNumber
	opBool
	opTimestamp
)

// comparison is one Choice comparison operator. Parse-time validation and
// evaluation both read it, so an operator is declared exactly once.
type comparison struct {
	kind operandKind
	// path: the operand is a reference path; the value it selects is
	// compared instead (StringEqualsPath, ...).
	path bool
	// allowsMissing: the test also runs when Variable selects nothing (val
	// is then absent{}); for every other operator that is a runtime error.
	allowsMissing bool
	test          func(val, operand any) bool
}

// absent stands for the value of a Variable that selects nothing.
type absent struct{}

var comparisons = comparisonTable()

// comparisonTable lists the Choice comparison operators of the Amazon States
// Language: https://states-language.net/spec.html#choice-state
func comparisonTable() map[string]comparison {
	orders := map[string]func(c int) bool{
		"Equals":            func(c int) bool { return c == 0 },
		"LessThan":          func(c int) bool { return c < 0 },
		"GreaterThan":       func(c int) bool { return c > 0 },
		"LessThanEquals":    func(c int) bool { return c <= 0 },
		"GreaterThanEquals": func(c int) bool { return c >= 0 },
	}
	families := []struct {
		prefix string
		kind   operandKind
		// cmp orders val against operand; false when either is not of the
		// family's type, which makes the rule not match (not an error).
		cmp func(val, operand any) (int, bool)
	}{
		{"String", opString, compareStrings},
		{"Numeric", opNumber, compareNumbers},
		{"Timestamp", opTimestamp, compareTimestamps},
	}
	m := map[string]comparison{}
	for _, f := range families {
		for order, holds := range orders {
			test := func(val, operand any) bool {
				c, ok := f.cmp(val, operand)
				return ok && holds(c)
			}
			m[f.prefix+order] = comparison{kind: f.kind, test: test}
			m[f.prefix+order+"Path"] = comparison{kind: f.kind, path: true, test: test}
		}
	}
	booleanEquals := func(val, operand any) bool {
		a, ok1 := val.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b
	}
	m["BooleanEquals"] = comparison{kind: opBool, test: booleanEquals}
	m["BooleanEqualsPath"] = comparison{kind: opBool, path: true, test: booleanEquals}
	m["StringMatches"] = comparison{kind: opString, test: func(val, operand any) bool {
		s, ok := val.(string)
		return ok && matchWildcard(operand.(string), s)
	}}
	// Type tests: the operand says whether the test should hold.
	typeTests := map[string]func(val any) bool{
		"IsPresent": func(val any) bool { _, missing := val.(absent); return !missing },
		"IsNull":    func(val any) bool { return val == nil },
		"IsNumeric": func(val any) bool { _, ok := numberOf(val); return ok },
		"IsString":  func(val any) bool { _, ok := val.(string); return ok },
		"IsBoolean": func(val any) bool { _, ok := val.(bool); return ok },
		"IsTimestamp": func(val any) bool {
			s, ok := val.(string)
			if !ok {
				return false
			}
			_, err := parseTimestamp(s)
			return err == nil
		},
	}
	for name, is := range typeTests {
		m[name] = comparison{kind: opBool, allowsMissing: name == "IsPresent", test: func(val, operand any) bool {
			return is(val) == operand.(bool)
		}}
	}
	return m
}

func compareStrings(val, operand any) (int, bool) {
	a, ok1 := val.(string)
	b, ok2 := operand.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(a, b), true
}

func compareNumbers(val, operand any) (int, bool) {
	a, ok1 := numberOf(val)
	b, ok2 := numberOf(operand)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case a < b:
		return -1, true
	case a > b:
		return 1, true
	}
	return 0, true
}

func compareTimestamps(val, operand any) (int, bool) {
	as, ok1 := val.(string)
	bs, ok2 := operand.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	a, err1 := parseTimestamp(as)
	b, err2 := parseTimestamp(bs)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return a.Compare(b), true
}

// summary is a short human-readable form of a rule, used for graph labels.
func (r ChoiceRule) summary() string {
	switch {
	case len(r.And) > 0:
		return joinRules(r.And, " and ")
	case len(r.Or) > 0:
		return joinRules(r.Or, " or ")
	case r.Not != nil:
		return "not (" + r.Not.summary() + ")"
	}
	return r.Variable + " " + r.Operator + " " + string(r.Operand)
}

func joinRules(rs []ChoiceRule, sep string) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "(" + r.summary() + ")"
	}
	return strings.Join(parts, sep)
}

// evalChoice reports whether the rule matches the effective input. A
// missing Variable is a runtime error except under IsPresent.
func evalChoice(r *ChoiceRule, env *evalEnv) (bool, error) {
	switch {
	case len(r.And) > 0:
		for i := range r.And {
			if ok, err := evalChoice(&r.And[i], env); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case len(r.Or) > 0:
		for i := range r.Or {
			if ok, err := evalChoice(&r.Or[i], env); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.Not != nil:
		ok, err := evalChoice(r.Not, env)
		return !ok && err == nil, err
	}
	p, err := compileReferencePath(r.Variable)
	if err != nil {
		return false, err
	}
	root := env.input
	if p.context {
		root = env.context()
	}
	val, found := p.get(root)
	operand, _ := decodeValue(r.Operand)
	c, ok := comparisons[r.Operator]
	if !ok {
		return false, fmt.Errorf("unsupported operator %s", r.Operator)
	}
	if !found {
		if !c.allowsMissing {
			return false, fmt.Errorf("invalid path '%s': the choice state's condition path references an undefined value", r.Variable)
		}
		val = absent{}
	}
	if c.path {
		ref, err := compileReferencePath(operand.(string))
		if err != nil {
			return false, err
		}
		if operand, err = env.lookup(ref); err != nil {
			return false, err
		}
	}
	return c.test(val, operand), nil
}

// matchWildcard implements StringMatches: * matches any run of characters,
// \* a literal star and \\ a literal backslash.
func matchWildcard(pattern, s string) bool {
	type tok struct {
		star bool
		lit  byte
	}
	var toks []tok
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\' && i+1 < len(pattern):
			i++
			toks = append(toks, tok{lit: pattern[i]})
		case c == '*':
			toks = append(toks, tok{star: true})
		default:
			toks = append(toks, tok{lit: c})
		}
	}
	// Classic greedy matcher with backtracking to the last star.
	ti, si, starT, starS := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case ti < len(toks) && !toks[ti].star && toks[ti].lit == s[si]:
			ti++
			si++
		case ti < len(toks) && toks[ti].star:
			starT, starS = ti, si
			ti++
		case starT >= 0:
			starS++
			ti, si = starT+1, starS
		default:
			return false
		}
	}
	for ti < len(toks) && toks[ti].star {
		ti++
	}
	return ti == len(toks)
}
