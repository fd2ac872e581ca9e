package asl

import (
	"encoding/json"
	"fmt"
)

func parseRetry(raw json.RawMessage) ([]Retrier, error) {
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("Retry must be an array of objects")
	}
	var out []Retrier
	for i, item := range items {
		r, err := parseRetrier(item)
		if err == nil {
			err = checkErrorEquals(r.ErrorEquals, i == len(items)-1)
		}
		if err != nil {
			return nil, fmt.Errorf("Retry[%d]: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRetrier(raw json.RawMessage) (Retrier, error) {
	o, err := decodeObj(raw)
	if err != nil {
		return Retrier{}, err
	}
	if err := o.checkKeys([]string{"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment"}); err != nil {
		return Retrier{}, err
	}
	p := &fieldParser{o: o}
	r := Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2.0, JitterStrategy: "NONE"}
	if err := p.decode("ErrorEquals", &r.ErrorEquals); err != nil {
		return r, err
	}
	r.Comment = p.str("Comment")
	if v := p.integer("IntervalSeconds"); v != nil {
		if *v < 1 {
			p.fail(fmt.Errorf("IntervalSeconds must be a positive integer"))
		}
		r.IntervalSeconds = *v
	}
	if v := p.integer("MaxAttempts"); v != nil {
		if *v < 0 {
			p.fail(fmt.Errorf("MaxAttempts must not be negative"))
		}
		r.MaxAttempts = *v
	}
	if v := p.number("BackoffRate"); v != nil {
		if *v < 1.0 {
			p.fail(fmt.Errorf("BackoffRate must be at least 1.0"))
		}
		r.BackoffRate = *v
	}
	if v := p.integer("MaxDelaySeconds"); v != nil {
		if *v <= 0 || *v >= 31622401 {
			p.fail(fmt.Errorf("MaxDelaySeconds must be between 1 and 31622400"))
		}
		r.MaxDelaySeconds = *v
	}
	if o.has("JitterStrategy") {
		r.JitterStrategy = p.str("JitterStrategy")
		if p.err == nil && r.JitterStrategy != "FULL" && r.JitterStrategy != "NONE" {
			p.fail(fmt.Errorf("JitterStrategy must be FULL or NONE, got %q", r.JitterStrategy))
		}
	}
	return r, p.err
}

func parseCatch(raw json.RawMessage) ([]Catcher, error) {
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("Catch must be an array of objects")
	}
	var out []Catcher
	for i, item := range items {
		c, err := parseCatcher(item)
		if err == nil {
			err = checkErrorEquals(c.ErrorEquals, i == len(items)-1)
		}
		if err != nil {
			return nil, fmt.Errorf("Catch[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parseCatcher(raw json.RawMessage) (Catcher, error) {
	o, err := decodeObj(raw)
	if err != nil {
		return Catcher{}, err
	}
	if err := o.checkKeys([]string{"ErrorEquals", "Next", "ResultPath", "Comment"}); err != nil {
		return Catcher{}, err
	}
	p := &fieldParser{o: o}
	var c Catcher
	if err := p.decode("ErrorEquals", &c.ErrorEquals); err != nil {
		return c, err
	}
	c.Next = p.str("Next")
	c.Comment = p.str("Comment")
	c.ResultPath = p.path("ResultPath", true)
	if p.err == nil && c.Next == "" {
		p.fail(fmt.Errorf("missing required field Next"))
	}
	return c, p.err
}

// checkErrorEquals enforces that ErrorEquals is non-empty and that
// States.ALL appears alone and only in the last retrier or catcher.
func checkErrorEquals(names []string, last bool) error {
	if len(names) == 0 {
		return fmt.Errorf("ErrorEquals must be a non-empty array")
	}
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("ErrorEquals must not contain empty names")
		}
		if n == ErrAll && (len(names) != 1 || !last) {
			return fmt.Errorf("States.ALL must appear alone in the last retrier or catcher")
		}
	}
	return nil
}
