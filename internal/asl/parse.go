package asl

// Size: one parser: the machine, its states and the field decoders they use read top to bottom.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

const (
	typePass     = "Pass"
	typeTask     = "Task"
	typeChoice   = "Choice"
	typeWait     = "Wait"
	typeSucceed  = "Succeed"
	typeFail     = "Fail"
	typeParallel = "Parallel"
	typeMap      = "Map"
)

// stateFields lists the fields each state type accepts besides Type and
// Comment; anything else is a parse error, as in Step Functions.
var stateFields = map[string][]string{
	typePass:     {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "Result"},
	typeTask:     {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Credentials", "Retry", "Catch"},
	typeChoice:   {"InputPath", "OutputPath", "Choices", "Default"},
	typeWait:     {"Next", "End", "InputPath", "OutputPath", "Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
	typeSucceed:  {"InputPath", "OutputPath"},
	typeFail:     {"Error", "ErrorPath", "Cause", "CausePath"},
	typeParallel: {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Branches", "Retry", "Catch"},
	typeMap:      {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ItemSelector", "ResultSelector", "ItemsPath", "MaxConcurrency", "MaxConcurrencyPath", "Iterator", "ItemProcessor", "ItemReader", "ItemBatcher", "ResultWriter", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "ToleratedFailureCount", "ToleratedFailureCountPath", "Label", "Retry", "Catch"},
}

// Parse decodes and validates a definition strictly. Errors name the state
// (and the enclosing states for nested machines).
func Parse(def []byte) (*StateMachine, error) {
	sm, err := parseMachine(def, "", false)
	if err != nil {
		return nil, fmt.Errorf("asl.Parse: %w", err)
	}
	if err := sm.checkUniqueNames(); err != nil {
		return nil, fmt.Errorf("asl.Parse: %w", err)
	}
	return sm, nil
}

// checkUniqueNames rejects a state name used twice anywhere in the machine,
// nested branches and item processors included. Step Functions: "A state is
// referred to by its name, which can be any string, but which must be unique
// within the scope of the entire state machine."
// (https://docs.aws.amazon.com/step-functions/latest/dg/workflow-states.html)
func (sm *StateMachine) checkUniqueNames() error {
	seen := map[string]string{}
	var dups []string
	sm.Walk(func(path []string, name string, _ *State) {
		where := strings.Join(append(path, name), " > ")
		if first, ok := seen[name]; ok {
			dups = append(dups, fmt.Sprintf("state name %q is used at %s and at %s", name, first, where))
			return
		}
		seen[name] = where
	})
	if len(dups) > 0 {
		return fmt.Errorf("%s: state names must be unique in the whole state machine", strings.Join(dups, "; "))
	}
	return nil
}

// parseMachine parses a top-level machine, branch or item processor; where
// prefixes error messages for nested machines.
func parseMachine(data []byte, where string, processor bool) (*StateMachine, error) {
	o, err := decodeObj(data)
	if err != nil {
		return nil, fmt.Errorf("%sdefinition: %w", where, err)
	}
	allowed := []string{"Comment", "StartAt", "States"}
	switch {
	case where == "":
		allowed = append(allowed, "TimeoutSeconds", "Version", "QueryLanguage")
	case processor:
		allowed = append(allowed, "ProcessorConfig")
	}
	if err := o.checkKeys(allowed); err != nil {
		return nil, fmt.Errorf("%s%w", where, err)
	}
	sm := &StateMachine{States: map[string]*State{}}
	fail := func(err error) (*StateMachine, error) { return nil, fmt.Errorf("%s%w", where, err) }
	if sm.Comment, err = o.str("Comment"); err != nil {
		return fail(err)
	}
	if sm.StartAt, err = o.str("StartAt"); err != nil {
		return fail(err)
	}
	if sm.StartAt == "" {
		return fail(fmt.Errorf("missing required field StartAt"))
	}
	if sm.Version, err = o.str("Version"); err != nil {
		return fail(err)
	}
	if ql, err := o.str("QueryLanguage"); err != nil || (ql != "" && ql != "JSONPath") {
		return fail(fmt.Errorf("QueryLanguage %q is not supported (only JSONPath)", ql))
	}
	if t, err := o.integer("TimeoutSeconds"); err != nil {
		return fail(err)
	} else if t != nil {
		if *t <= 0 {
			return fail(fmt.Errorf("TimeoutSeconds must be positive"))
		}
		sm.TimeoutSeconds = *t
	}
	if processor && o.has("ProcessorConfig") {
		if sm.ProcessorConfig, err = parseProcessorConfig(o.m["ProcessorConfig"]); err != nil {
			return fail(err)
		}
	}
	if !o.has("States") {
		return fail(fmt.Errorf("missing required field States"))
	}
	names, err := orderedKeys(o.m["States"])
	if err != nil {
		return fail(fmt.Errorf("States: %w", err))
	}
	if len(names) == 0 {
		return fail(fmt.Errorf("States must not be empty"))
	}
	states, _ := decodeObj(o.m["States"])
	for _, name := range names {
		if len(name) == 0 || len(name) > 80 {
			return fail(fmt.Errorf("state name %q must be 1 to 80 characters", name))
		}
		st, err := parseState(name, states.m[name], where)
		if err != nil {
			return nil, err
		}
		sm.States[name] = st
	}
	sm.Order = names
	if err := sm.checkGraph(); err != nil {
		return fail(err)
	}
	return sm, nil
}

// checkGraph verifies that every transition target exists and that every
// state is reachable from StartAt.
func (sm *StateMachine) checkGraph() error {
	if _, ok := sm.States[sm.StartAt]; !ok {
		return fmt.Errorf("StartAt %q does not name a state", sm.StartAt)
	}
	for _, name := range sm.Order {
		for _, t := range sm.States[name].transitions() {
			if _, ok := sm.States[t.target]; !ok {
				return fmt.Errorf("state %q: %s %q does not name a state", name, t.field, t.target)
			}
		}
	}
	seen := map[string]bool{sm.StartAt: true}
	queue := []string{sm.StartAt}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, t := range sm.States[name].transitions() {
			if !seen[t.target] {
				seen[t.target] = true
				queue = append(queue, t.target)
			}
		}
	}
	for _, name := range sm.Order {
		if !seen[name] {
			return fmt.Errorf("state %q is not reachable from StartAt %q", name, sm.StartAt)
		}
	}
	return nil
}

type transition struct {
	field, target, label string
	catch                bool
}

// transitions lists a state's outgoing edges in a fixed order: Next,
// Choices, Default, Catch.
func (st *State) transitions() []transition {
	var ts []transition
	if st.Next != "" {
		ts = append(ts, transition{field: "Next", target: st.Next})
	}
	for i, c := range st.Choices {
		ts = append(ts, transition{field: fmt.Sprintf("Choices[%d].Next", i), target: c.Next, label: c.summary()})
	}
	if st.Default != "" {
		ts = append(ts, transition{field: "Default", target: st.Default, label: "Default"})
	}
	for i, c := range st.Catch {
		ts = append(ts, transition{field: fmt.Sprintf("Catch[%d].Next", i), target: c.Next, label: strings.Join(c.ErrorEquals, ", "), catch: true})
	}
	return ts
}

func parseState(name string, data json.RawMessage, where string) (*State, error) {
	st, err := parseStateFields(name, data, where)
	if err != nil {
		var nested *nestedError
		if asNested(err, &nested) {
			return nil, nested.err
		}
		return nil, fmt.Errorf("%sstate %q: %w", where, name, err)
	}
	return st, nil
}

// nestedError carries an error from a nested machine whose message already
// names its full location.
type nestedError struct{ err error }

func (e *nestedError) Error() string { return e.err.Error() }

func asNested(err error, target **nestedError) bool {
	n, ok := err.(*nestedError)
	if ok {
		*target = n
	}
	return ok
}

func parseStateFields(name string, data json.RawMessage, where string) (*State, error) {
	o, err := decodeObj(data)
	if err != nil {
		return nil, err
	}
	st := &State{Name: name}
	if st.Type, err = o.str("Type"); err != nil {
		return nil, err
	}
	if st.Type == "" {
		return nil, fmt.Errorf("missing required field Type")
	}
	fields, ok := stateFields[st.Type]
	if !ok {
		return nil, fmt.Errorf("unknown state type %q", st.Type)
	}
	if err := o.checkKeys(append([]string{"Type", "Comment"}, fields...)); err != nil {
		return nil, err
	}
	p := &fieldParser{o: o}
	st.Comment = p.str("Comment")
	st.Next = p.str("Next")
	if e := p.boolean("End"); e != nil {
		st.End = *e
	}
	st.InputPath = p.path("InputPath", false)
	st.OutputPath = p.path("OutputPath", false)
	st.ResultPath = p.path("ResultPath", true)
	st.Parameters = p.template("Parameters")
	st.ResultSelector = p.template("ResultSelector")
	st.Result = o.m["Result"]
	if p.err != nil {
		return nil, p.err
	}

	switch st.Type {
	case typeTask:
		err = parseTask(st, p)
	case typeChoice:
		err = parseChoice(st, p)
	case typeWait:
		err = parseWait(st, p)
	case typeFail:
		err = parseFail(st, p)
	case typeParallel:
		err = parseParallel(st, p, where)
	case typeMap:
		err = parseMap(st, p, where)
	}
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	if slices.Contains([]string{typeTask, typeParallel, typeMap}, st.Type) {
		if st.Retry, err = parseRetry(o.m["Retry"]); err != nil {
			return nil, err
		}
		if st.Catch, err = parseCatch(o.m["Catch"]); err != nil {
			return nil, err
		}
	}
	return st, checkTerminal(st, o)
}

// checkTerminal enforces the spec's rules: Choice, Succeed and Fail never
// have Next or End; every other state has exactly one of them.
func checkTerminal(st *State, o obj) error {
	switch st.Type {
	case typeChoice, typeSucceed, typeFail:
		return nil // Next/End are rejected as unknown fields
	}
	if o.has("End") && !st.End {
		return fmt.Errorf("End must be true when present")
	}
	switch {
	case st.Next != "" && st.End:
		return fmt.Errorf("has both Next and End")
	case st.Next == "" && !st.End:
		return fmt.Errorf("must have Next or End")
	}
	return nil
}

// obj is a decoded JSON object kept raw, so that unknown fields and
// explicit nulls can be told apart from absence.
type obj struct{ m map[string]json.RawMessage }

func decodeObj(data []byte) (obj, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return obj{}, fmt.Errorf("must be a JSON object")
	}
	if _, err := orderedKeys(data); err != nil {
		return obj{}, err
	}
	return obj{m}, nil
}

func (o obj) has(k string) bool { _, ok := o.m[k]; return ok }

func (o obj) checkKeys(allowed []string) error {
	var unknown []string
	for k := range o.m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("unknown field(s) %s", strings.Join(unknown, ", "))
	}
	return nil
}

func (o obj) str(k string) (string, error) {
	raw, ok := o.m[k]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", fmt.Errorf("%s must be a string", k)
	}
	return s, nil
}

func (o obj) integer(k string) (*int, error) {
	raw, ok := o.m[k]
	if !ok {
		return nil, nil
	}
	v, err := decodeValue(raw)
	n, isInt := intOf(v)
	if err != nil || !isInt {
		return nil, fmt.Errorf("%s must be an integer", k)
	}
	return &n, nil
}

// orderedKeys returns an object's keys in document order, rejecting
// duplicates.
func orderedKeys(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if d, ok := t.(json.Delim); err != nil || !ok || d != '{' {
		return nil, fmt.Errorf("must be a JSON object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := t.(string)
		if slices.Contains(keys, k) {
			return nil, fmt.Errorf("duplicate field %q", k)
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// fieldParser reads typed fields from an obj, keeping the first error so
// parse functions read straight through.
type fieldParser struct {
	o   obj
	err error
}

func (p *fieldParser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *fieldParser) str(k string) string {
	s, err := p.o.str(k)
	p.fail(err)
	return s
}

func (p *fieldParser) integer(k string) *int {
	n, err := p.o.integer(k)
	p.fail(err)
	return n
}

func (p *fieldParser) number(k string) *float64 {
	raw, ok := p.o.m[k]
	if !ok {
		return nil
	}
	v, err := decodeValue(raw)
	f, isNum := numberOf(v)
	if err != nil || !isNum {
		p.fail(fmt.Errorf("%s must be a number", k))
		return nil
	}
	return &f
}

func (p *fieldParser) boolean(k string) *bool {
	raw, ok := p.o.m[k]
	if !ok {
		return nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		p.fail(fmt.Errorf("%s must be a boolean", k))
		return nil
	}
	return &b
}

func (p *fieldParser) decode(k string, v any) error {
	raw, ok := p.o.m[k]
	if !ok {
		return fmt.Errorf("missing required field %s", k)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s has the wrong type: %w", k, err)
	}
	return nil
}

// path reads InputPath/OutputPath/ResultPath-style fields; null is allowed.
func (p *fieldParser) path(k string, reference bool) PathField {
	raw, ok := p.o.m[k]
	if !ok {
		return PathField{}
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		return PathField{Set: true, Null: true}
	}
	s := p.str(k)
	if p.err != nil {
		return PathField{}
	}
	var err error
	if reference {
		var jp *jsonPath
		if jp, err = compileReferencePath(s); err == nil && jp.context {
			err = fmt.Errorf("%q cannot refer to the context object", s)
		}
	} else {
		_, err = compilePath(s)
	}
	if err != nil {
		p.fail(fmt.Errorf("%s: %w", k, err))
	}
	return PathField{Set: true, Path: s}
}

// refPath reads a string field that must be a reference path.
func (p *fieldParser) refPath(k string) string {
	s := p.str(k)
	if s != "" {
		if _, err := compileReferencePath(s); err != nil {
			p.fail(fmt.Errorf("%s: %w", k, err))
		}
	}
	return s
}

func (p *fieldParser) template(k string) json.RawMessage {
	raw, ok := p.o.m[k]
	if !ok {
		return nil
	}
	if err := validateTemplate(raw); err != nil {
		p.fail(fmt.Errorf("%s: %w", k, err))
	}
	return raw
}

func itoa(i int) string { return fmt.Sprint(i) }
