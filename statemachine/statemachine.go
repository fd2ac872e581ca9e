// Package statemachine embeds the Amazon States Language definitions that
// AWS Step Functions runs and that the local executor runs unchanged. CDK
// reads the same files from disk (infra/), so there is one definition.
package statemachine

import _ "embed"

// Migrate is migrate.asl.json: one source object's journey.
//
//go:embed migrate.asl.json
var Migrate []byte

// Placeholders of Migrate, substituted by CDK (DefinitionSubstitutions) and
// by the local executor.
const (
	HashCheckFunctionArn = "HashCheckFunctionArn"
	ConvertFunctionArn   = "ConvertFunctionArn"
	PromoteFunctionArn   = "PromoteFunctionArn"
	ClassifyFunctionArn  = "ClassifyFunctionArn"
	RemediationQueueURL  = "RemediationQueueUrl"
	DeadLetterQueueURL   = "DeadLetterQueueUrl"
)

// Terminal states of Migrate, as the run report names outcomes.
const (
	StateCompleted           = "Completed"
	StateSkipped             = "Skipped"
	StateRoutedToRemediation = "RoutedToRemediation"
	StateRoutedToDeadLetter  = "RoutedToDeadLetter"
	ErrorRoutedRemediation   = "Routed.Remediation"
	ErrorRoutedDeadLetter    = "Routed.DeadLetter"
)

// Backfill is backfill.asl.json: a Distributed Map running Migrate as child
// executions over an S3 prefix or an S3 Inventory manifest.
//
//go:embed backfill.asl.json
var Backfill []byte
