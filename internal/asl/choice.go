package asl

import (
	"fmt"
	"strings"
)

// operandKind is what a comparison operator's value must be.
type operandKind int

const (
	opString operandKind = iota
	opNumber
	opBool
	opTimestamp
	opPath
)

var comparisonOps = map[string]operandKind{}

func init() {
	for _, base := range []string{"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"} {
		comparisonOps["String"+base] = opString
		comparisonOps["Numeric"+base] = opNumber
		comparisonOps["Timestamp"+base] = opTimestamp
		for _, t := range []string{"String", "Numeric", "Timestamp"} {
			comparisonOps[t+base+"Path"] = opPath
		}
	}
	comparisonOps["StringMatches"] = opString
	comparisonOps["BooleanEquals"] = opBool
	comparisonOps["BooleanEqualsPath"] = opPath
	for _, t := range []string{"IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp"} {
		comparisonOps[t] = opBool
	}
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
		root = env.ctx
	}
	val, found := p.get(root)
	operand, _ := decodeValue(r.Operand)
	if r.Operator == "IsPresent" {
		return found == operand.(bool), nil
	}
	if !found {
		return false, fmt.Errorf("invalid path '%s': the choice state's condition path references an undefined value", r.Variable)
	}
	op := r.Operator
	if base, ok := strings.CutSuffix(op, "Path"); ok && comparisonOps[op] == opPath {
		ref, err := compileReferencePath(operand.(string))
		if err != nil {
			return false, err
		}
		if operand, err = env.lookup(ref); err != nil {
			return false, err
		}
		op = base
	}
	switch op {
	case "IsNull":
		return (val == nil) == operand.(bool), nil
	case "IsNumeric":
		_, isNum := numberOf(val)
		return isNum == operand.(bool), nil
	case "IsString":
		_, isStr := val.(string)
		return isStr == operand.(bool), nil
	case "IsBoolean":
		_, isBool := val.(bool)
		return isBool == operand.(bool), nil
	case "IsTimestamp":
		s, isStr := val.(string)
		isTS := isStr && func() bool { _, err := parseTimestamp(s); return err == nil }()
		return isTS == operand.(bool), nil
	case "BooleanEquals":
		a, ok1 := val.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b, nil
	case "StringMatches":
		s, ok := val.(string)
		return ok && matchWildcard(operand.(string), s), nil
	}
	switch {
	case strings.HasPrefix(op, "String"):
		a, ok1 := val.(string)
		b, ok2 := operand.(string)
		return ok1 && ok2 && compare(strings.Compare(a, b), op, "String"), nil
	case strings.HasPrefix(op, "Numeric"):
		a, ok1 := numberOf(val)
		b, ok2 := numberOf(operand)
		if !ok1 || !ok2 {
			return false, nil
		}
		c := 0
		if a < b {
			c = -1
		} else if a > b {
			c = 1
		}
		return compare(c, op, "Numeric"), nil
	case strings.HasPrefix(op, "Timestamp"):
		as, ok1 := val.(string)
		bs, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		a, err1 := parseTimestamp(as)
		b, err2 := parseTimestamp(bs)
		if err1 != nil || err2 != nil {
			return false, nil
		}
		return compare(a.Compare(b), op, "Timestamp"), nil
	}
	return false, fmt.Errorf("unsupported operator %s", r.Operator)
}

func compare(c int, op, prefix string) bool {
	switch strings.TrimPrefix(op, prefix) {
	case "Equals":
		return c == 0
	case "LessThan":
		return c < 0
	case "GreaterThan":
		return c > 0
	case "LessThanEquals":
		return c <= 0
	case "GreaterThanEquals":
		return c >= 0
	}
	return false
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
