// Package events holds sample inputs: the three triggers of the migrate
// state machine (an S3 PUT notification with a URL-encoded key, an
// EventBridge "Object Created" event, the manual console input), each
// function's input, Step Functions error payloads for Classify, and a Step
// Functions execution status change event for executionfailed. They are
// used by the tests (round-tripped through their Go types in this package,
// posted to the bootstraps under aws-lambda-rie in functions/) and by
// `sam local invoke -e events/<file>.json`.
//
// Kinds maps each file to what it is an input of.
package events

import "embed"

// Files are the sample events (*.json in this directory).
//
//go:embed *.json
var Files embed.FS

// Kind says what a sample is an input of.
type Kind string

const (
	KindStateMachine Kind = "statemachine" // a trigger: input of the migrate state machine
	KindHashCheck    Kind = "hashcheck"
	KindConvert      Kind = "convert"
	KindPromote      Kind = "promote"
	KindClassify     Kind = "classify"
	// KindExecutionFailed: an EventBridge "Step Functions Execution Status
	// Change" event, input of the executionfailed function.
	KindExecutionFailed Kind = "executionfailed"
)

// Kinds maps every file in Files to its kind; a test fails when a file is
// missing from it.
var Kinds = map[string]Kind{
	"s3-put-notification.json":           KindStateMachine,
	"eventbridge-object-created.json":    KindStateMachine,
	"console-start.json":                 KindStateMachine,
	"console-start-no-dataset.json":      KindStateMachine,
	"hashcheck-input.json":               KindHashCheck,
	"hashcheck-missing-source.json":      KindHashCheck,
	"convert-input.json":                 KindConvert,
	"promote-input.json":                 KindPromote,
	"classify-data-error.json":           KindClassify,
	"classify-transient-exhausted.json":  KindClassify,
	"classify-lambda-service-error.json": KindClassify,
	"executionfailed-timed-out.json":     KindExecutionFailed,
}
