package asl

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

func parseChoice(st *State, p *fieldParser) error {
	var rules []json.RawMessage
	if err := p.decode("Choices", &rules); err != nil {
		return err
	}
	if len(rules) == 0 {
		return fmt.Errorf("Choices must be a non-empty array")
	}
	st.Default = p.str("Default")
	for i, raw := range rules {
		r, err := parseChoiceRule(raw, true)
		if err != nil {
			return fmt.Errorf("Choices[%d]: %w", i, err)
		}
		st.Choices = append(st.Choices, r)
	}
	return nil
}

func parseChoiceRule(raw json.RawMessage, top bool) (ChoiceRule, error) {
	o, err := decodeObj(raw)
	if err != nil {
		return ChoiceRule{}, err
	}
	p := &fieldParser{o: o}
	r := ChoiceRule{Variable: p.str("Variable"), Next: p.str("Next"), Comment: p.str("Comment")}
	if p.err != nil {
		return r, p.err
	}
	switch {
	case top && r.Next == "":
		return r, fmt.Errorf("missing required field Next")
	case !top && o.has("Next"):
		return r, fmt.Errorf("Next is only allowed on top-level choice rules")
	}
	var ops []string
	for k := range o.m {
		switch k {
		case "Variable", "Next", "Comment":
		case "And", "Or", "Not":
			ops = append(ops, k)
		default:
			if _, ok := comparisons[k]; !ok {
				return r, fmt.Errorf("unknown field %s", k)
			}
			ops = append(ops, k)
		}
	}
	if len(ops) != 1 {
		slices.Sort(ops)
		return r, fmt.Errorf("must have exactly one operator, found %d (%s)", len(ops), strings.Join(ops, ", "))
	}
	r.Operator = ops[0]
	switch r.Operator {
	case "And", "Or", "Not":
		return parseCombinator(r, p)
	}
	if r.Variable == "" {
		return r, fmt.Errorf("missing required field Variable")
	}
	if _, err := compileReferencePath(r.Variable); err != nil {
		return r, fmt.Errorf("Variable: %w", err)
	}
	r.Operand = o.m[r.Operator]
	v, err := decodeValue(r.Operand)
	if err != nil {
		return r, err
	}
	if err := comparisons[r.Operator].checkOperand(r.Operator, r.Operand, v); err != nil {
		return r, err
	}
	return r, nil
}

// parseCombinator parses the sub-rules of an And, Or or Not rule.
func parseCombinator(r ChoiceRule, p *fieldParser) (ChoiceRule, error) {
	o := p.o
	if o.has("Variable") {
		return r, fmt.Errorf("Variable is not allowed with %s", r.Operator)
	}
	if r.Operator == "Not" {
		sub, err := parseChoiceRule(o.m["Not"], false)
		if err != nil {
			return r, fmt.Errorf("Not: %w", err)
		}
		r.Not, r.Operator = &sub, ""
		return r, nil
	}
	var subs []json.RawMessage
	if err := p.decode(r.Operator, &subs); err != nil || len(subs) == 0 {
		return r, fmt.Errorf("%s must be a non-empty array of rules", r.Operator)
	}
	for i, s := range subs {
		sub, err := parseChoiceRule(s, false)
		if err != nil {
			return r, fmt.Errorf("%s[%d]: %w", r.Operator, i, err)
		}
		if r.Operator == "And" {
			r.And = append(r.And, sub)
		} else {
			r.Or = append(r.Or, sub)
		}
	}
	r.Operator = ""
	return r, nil
}

// checkOperand checks the operand of comparison op at parse time: raw as
// written, v decoded.
func (c comparison) checkOperand(op string, raw json.RawMessage, v any) error {
	bad := func(what string) error {
		return fmt.Errorf("%s must be %s, got %s", op, what, raw)
	}
	if c.path {
		s, ok := v.(string)
		if !ok {
			return bad("a path string")
		}
		if _, err := compileReferencePath(s); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	}
	switch c.kind {
	case opString:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
	case opNumber:
		if _, ok := numberOf(v); !ok {
			return bad("a number")
		}
	case opBool:
		if _, ok := v.(bool); !ok {
			return bad("a boolean")
		}
	case opTimestamp:
		s, ok := v.(string)
		if !ok {
			return bad("a timestamp string")
		}
		if _, err := parseTimestamp(s); err != nil {
			return bad("an RFC 3339 timestamp")
		}
	}
	return nil
}
