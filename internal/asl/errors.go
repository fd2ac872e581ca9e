package asl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Error names predefined by the States Language and used by this executor.
const (
	ErrAll                             = "States.ALL"
	ErrTimeout                         = "States.Timeout"
	ErrTaskFailed                      = "States.TaskFailed"
	ErrRuntime                         = "States.Runtime"
	ErrNoChoiceMatched                 = "States.NoChoiceMatched"
	ErrResultPathMatchFailure          = "States.ResultPathMatchFailure"
	ErrExceedToleratedFailureThreshold = "States.ExceedToleratedFailureThreshold"
	ErrItemReaderFailed                = "States.ItemReaderFailed"
	ErrResultWriterFailed              = "States.ResultWriterFailed"
	ErrDataLimitExceeded               = "States.DataLimitExceeded"
)

// TaskError lets a handler raise an exact Step Functions error name (for
// example "Lambda.ServiceException" or "States.Timeout"); Name and Cause
// are used verbatim.
type TaskError struct{ Name, Cause string }

func (e TaskError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// failure is a state error on its way to Retry, Catch or the execution.
type failure struct {
	Error, Cause string
	// execTimeout and aborted end the execution: no Retry or Catch applies.
	execTimeout bool
	aborted     bool
}

// terminal reports whether Retry and Catch must ignore the failure. AWS
// documents that States.ALL cannot catch States.Runtime or
// States.DataLimitExceeded and that these always fail the execution.
func (f *failure) terminal() bool {
	return f.execTimeout || f.aborted || f.Error == ErrRuntime || f.Error == ErrDataLimitExceeded
}

func runtimeFailure(format string, args ...any) *failure {
	return &failure{Error: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// errorMatches applies ErrorEquals: exact names, States.ALL, and
// States.TaskFailed, which matches everything except States.Timeout.
func errorMatches(errorEquals []string, name string) bool {
	for _, e := range errorEquals {
		switch {
		case e == name, e == ErrAll:
			return true
		case e == ErrTaskFailed && name != ErrTimeout:
			return true
		}
	}
	return false
}

// asTaskError finds a TaskError (value or pointer) in err's chain.
func asTaskError(err error) (TaskError, bool) {
	var v TaskError
	if errors.As(err, &v) {
		return v, true
	}
	var p *TaskError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return TaskError{}, false
}

// lambdaErrorType mirrors aws-lambda-go: the Go type name of the error
// value with one pointer level elided, so errors.New gives "errorString"
// and fmt.Errorf with %w gives "wrapError".
func lambdaErrorType(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "nil"
	}
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// lambdaCause is the JSON document Step Functions puts in Cause for a
// function error.
func lambdaCause(message, errorType string) string {
	b, _ := json.Marshal(struct {
		ErrorMessage string   `json:"errorMessage"`
		ErrorType    string   `json:"errorType"`
		StackTrace   []string `json:"stackTrace"`
	}{message, errorType, []string{}})
	return string(b)
}

// panicError carries a recovered panic out of a handler goroutine.
type panicError struct{ value any }

func (p panicError) Error() string { return fmt.Sprint(p.value) }

// lambdaFailure converts a LambdaFunc error the way Lambda and Step
// Functions report it. A panic is reported as aws-lambda-go does: the
// errorType is the type name of the panic value (e.g. "string").
func lambdaFailure(err error) *failure {
	if te, ok := asTaskError(err); ok {
		return &failure{Error: te.Name, Cause: te.Cause}
	}
	var pe panicError
	if errors.As(err, &pe) {
		name := lambdaErrorType(pe.value)
		return &failure{Error: name, Cause: lambdaCause(pe.Error(), name)}
	}
	name := lambdaErrorType(err)
	return &failure{Error: name, Cause: lambdaCause(err.Error(), name)}
}

// serviceFailure converts an error from an SQS or WithResource handler:
// TaskError verbatim, anything else States.TaskFailed.
func serviceFailure(err error) *failure {
	if te, ok := asTaskError(err); ok {
		return &failure{Error: te.Name, Cause: te.Cause}
	}
	return &failure{Error: ErrTaskFailed, Cause: err.Error()}
}
