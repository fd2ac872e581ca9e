// Package statemachine embeds the Amazon States Language definitions that
// AWS Step Functions runs and that the local executor runs unchanged. CDK
// reads the same files from disk (infra/), so there is one definition.
//
// The files hold two kinds of ${Name} placeholders:
//
//   - string placeholders inside JSON strings ("FunctionName":
//     "${ConvertFunctionArn}"), replaced textually: by CloudFormation
//     references in infra, by local stand-ins in the executor
//     (asl.Substitute);
//   - value placeholders, a whole JSON string "${Name}" standing for a
//     number or a list ("TimeoutSeconds": "${ConvertTimeoutSeconds}",
//     "Or": "${SourcePrefixRules}"), so the file stays valid JSON. They are
//     expanded first, quotes included, by ExpandMigrate and ExpandBackfill,
//     which infra (infra/go.mod requires this module) and the local executor
//     both call: one rule, one place.
//
// After expansion and substitution every definition must pass the project's
// strict parser (internal/asl) and the outside judges (internal/asljudge:
// asl-validator and statelint), in statemachine/ and in the synthesized
// templates.
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

	// The container task (ConvertInContainer's ecs:runTask.sync): its
	// cluster, task definition, and the network its tasks run in (subnet
	// IDs joined by commas, one security group).
	ConvertClusterArn        = "ConvertClusterArn"
	ConvertTaskDefinitionArn = "ConvertTaskDefinitionArn"
	ConvertSubnetIDs         = "ConvertSubnetIds"
	ConvertSecurityGroupID   = "ConvertSecurityGroupId"
)

// Resources and names of the container path that infra and the local
// executor must agree on.
const (
	// ResourceECSRunTaskSync runs the container task and waits for it to
	// stop; ResourceS3GetObject reads its result object back.
	ResourceECSRunTaskSync = "arn:aws:states:::ecs:runTask.sync"
	ResourceS3GetObject    = "arn:aws:states:::aws-sdk:s3:getObject"
	// ConvertContainerName is the container the task overrides.
	ConvertContainerName = "convert"
	// TaskInputEnv is the variable that carries the task's input (JSON).
	TaskInputEnv = "GEOMIGRATE_TASK_INPUT"
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

// CloseMapRun is close-map-run.asl.json: the state the EXPRESS backfill
// runs after each Distributed Map (infra's ExpressBackfill puts it there),
// closing the jobs of children that ended unfinished from the Map Run's
// result files, since Express children send no status-change events.
//
//go:embed close-map-run.asl.json
var CloseMapRun []byte

// Names in CloseMapRun: its state, and the placeholder of the function it
// invokes (executionfailed).
const (
	CloseMapRunState           = "CloseUnfinishedChildren"
	ExecutionFailedFunctionArn = "ExecutionFailedFunctionArn"
)

// Backfill's run-time policy read: the placeholder of the SSM parameter
// holding the policy document (internal/policy), substituted by CDK with
// the stack's parameter and locally with LocalPolicyParameter, and the
// SDK integration that reads it (the local executor stands in for it with
// the --policy file).
const (
	PolicyParameterName     = "PolicyParameterName"
	ResourceSSMGetParameter = "arn:aws:states:::aws-sdk:ssm:getParameter"
	LocalPolicyParameter    = "/geomigrate/policy"
)
