package asl

import (
	"encoding/json"
	"slices"
)

// StateMachine is a parsed definition: the top-level machine, a Parallel
// branch or a Map item processor.
type StateMachine struct {
	Comment        string
	StartAt        string
	TimeoutSeconds int
	Version        string
	States         map[string]*State
	// Order lists the state names in definition order, so that Walk and
	// Mermaid are deterministic.
	Order []string
	// ProcessorConfig is set only on a Map's ItemProcessor.
	ProcessorConfig *ProcessorConfig
}

// ProcessorConfig is a Map ItemProcessor's ProcessorConfig.
type ProcessorConfig struct {
	Mode          string // INLINE (default) or DISTRIBUTED
	ExecutionType string // STANDARD or EXPRESS, DISTRIBUTED only
}

// PathField is an optional path field (InputPath, OutputPath, ResultPath)
// where an explicit JSON null means something different from absence.
type PathField struct {
	Set  bool
	Null bool
	Path string
}

// State is one state of any type; fields that do not apply to the type are
// zero.
type State struct {
	Name    string
	Type    string // Pass, Task, Choice, Wait, Succeed, Fail, Parallel, Map
	Comment string
	Next    string
	End     bool

	InputPath, OutputPath, ResultPath PathField
	Parameters, ResultSelector        json.RawMessage
	Result                            json.RawMessage // Pass

	// Task
	Resource             string
	TimeoutSeconds       int
	TimeoutSecondsPath   string
	HeartbeatSeconds     int
	HeartbeatSecondsPath string
	Credentials          json.RawMessage

	// Task, Parallel, Map
	Retry []Retrier
	Catch []Catcher

	// Choice
	Choices []ChoiceRule
	Default string

	// Wait
	Seconds       *int
	SecondsPath   string
	Timestamp     string
	TimestampPath string

	// Fail
	Error, ErrorPath, Cause, CausePath string

	// Parallel
	Branches []*StateMachine

	// Map. ItemProcessor also holds a legacy Iterator; Parameters is the
	// legacy name of ItemSelector.
	ItemsPath                      string
	ItemSelector                   json.RawMessage
	ItemProcessor                  *StateMachine
	ItemReader                     *ItemReader
	ItemBatcher                    *ItemBatcher
	ResultWriter                   *ResultWriter
	MaxConcurrency                 int
	MaxConcurrencyPath             string
	ToleratedFailurePercentage     *float64
	ToleratedFailurePercentagePath string
	ToleratedFailureCount          *int
	ToleratedFailureCountPath      string
	Label                          string
}

// Retrier is one element of a Retry array, with AWS defaults filled in.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds int     // default 1
	MaxAttempts     int     // default 3; 0 never retries
	BackoffRate     float64 // default 2.0
	MaxDelaySeconds int     // 0 means no cap
	JitterStrategy  string  // FULL or NONE (default)
	Comment         string
}

// Catcher is one element of a Catch array.
type Catcher struct {
	ErrorEquals []string
	Next        string
	ResultPath  PathField
	Comment     string
}

// ChoiceRule is a Choice rule: a comparison on Variable, or And/Or/Not.
// Next is set only on top-level rules.
type ChoiceRule struct {
	Variable string
	Operator string          // e.g. StringEquals, NumericLessThanPath, IsPresent; empty for And/Or/Not
	Operand  json.RawMessage // the operator's value as written
	And, Or  []ChoiceRule
	Not      *ChoiceRule
	Next     string
	Comment  string
}

// ItemReader is a Map's ItemReader.
type ItemReader struct {
	Resource     string
	Parameters   json.RawMessage
	ReaderConfig json.RawMessage
}

// ItemBatcher is a Map's ItemBatcher.
type ItemBatcher struct {
	MaxItemsPerBatch          int
	MaxItemsPerBatchPath      string
	MaxInputBytesPerBatch     int
	MaxInputBytesPerBatchPath string
	BatchInput                json.RawMessage
}

// ResultWriter is a Map's ResultWriter.
type ResultWriter struct {
	Resource     string
	Parameters   json.RawMessage
	WriterConfig json.RawMessage
}

// Walk calls fn for every state, nested ones included, in definition
// order. path names the enclosing states and sub-machines, for example
// ["Fanout", "ItemProcessor"] or ["Both", "Branches[1]"]; it is nil at the
// top level.
func (sm *StateMachine) Walk(fn func(path []string, name string, st *State)) {
	sm.walk(nil, fn)
}

func (sm *StateMachine) walk(path []string, fn func([]string, string, *State)) {
	for _, name := range sm.Order {
		st := sm.States[name]
		fn(slices.Clone(path), name, st)
		for i, b := range st.Branches {
			b.walk(append(slices.Clone(path), name, branchLabel(i)), fn)
		}
		if st.ItemProcessor != nil {
			st.ItemProcessor.walk(append(slices.Clone(path), name, "ItemProcessor"), fn)
		}
	}
}

func branchLabel(i int) string { return "Branches[" + itoa(i) + "]" }
