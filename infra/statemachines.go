package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/statemachine"
)

func (st *Stack) stateMachines() error {
	c := st.Config
	migrateName := c.NamePrefix + "-migrate"
	backfillName := c.NamePrefix + "-backfill"

	migrateDef, err := LoadDefinition(c.Path(c.MigrateDefinitionPath), MigratePlaceholders)
	if err != nil {
		return err
	}
	backfillDef, err := LoadDefinition(c.Path(c.BackfillDefinition), BackfillPlaceholders)
	if err != nil {
		return err
	}
	// Value placeholders: the tasks' timeouts are the functions' timeouts, the inventory
	// backfill keeps to the source prefixes (the same expansion the local executor applies).
	ft := st.FunctionTimeouts
	expanded, err := statemachine.ExpandMigrate([]byte(migrateDef), statemachine.TaskTimeouts{
		HashCheck: ft["hashcheck"], Convert: ft["convert"], Promote: ft["promote"], Classify: ft["classify"]})
	if err != nil {
		return fmt.Errorf("migrate definition: %w", err)
	}
	migrateDef = string(expanded)
	if expanded, err = statemachine.ExpandBackfill([]byte(backfillDef), c.SourcePrefixes); err != nil {
		return fmt.Errorf("backfill definition: %w", err)
	}
	backfillDef = string(expanded)
	migrateValues := map[string]string{
		"HashCheckFunctionArn": *st.Functions["hashcheck"].FunctionArn(),
		"ConvertFunctionArn":   *st.Functions["convert"].FunctionArn(),
		"PromoteFunctionArn":   *st.Functions["promote"].FunctionArn(),
		"ClassifyFunctionArn":  *st.Functions["classify"].FunctionArn(),
		"RemediationQueueUrl":  *st.Remediation.QueueUrl(),
		"DeadLetterQueueUrl":   *st.DeadLetter.QueueUrl(),
	}
	for k, v := range st.containerValues {
		migrateValues[k] = v
	}
	st.MigrateDefinition, err = Substitute(migrateDef, migrateValues)
	if err != nil {
		return fmt.Errorf("migrate definition: %w", err)
	}

	// Roles are created first with explicit statements (no grants inferred from the definition).
	invoke := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     s("InvokePipelineFunctions"),
		Actions: strs("lambda:InvokeFunction"),
		Resources: arns(st.Functions["hashcheck"].FunctionArn(), st.Functions["convert"].FunctionArn(),
			st.Functions["promote"].FunctionArn(), st.Functions["classify"].FunctionArn()),
	})
	send := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: s("SendToRoutingQueues"), Actions: strs("sqs:SendMessage"),
		Resources: arns(st.Remediation.QueueArn(), st.DeadLetter.QueueArn()),
	})
	migrateRole := st.stateMachineRole("MigrateStateMachine")
	migrateRole.AddToPrincipalPolicy(invoke)
	migrateRole.AddToPrincipalPolicy(send)
	for _, stmt := range st.containerStatements() {
		migrateRole.AddToPrincipalPolicy(stmt)
	}
	suppressIAM5(migrateRole, "ecs:runTask.sync stops and describes the task it started, whose ID is not known before it runs (scoped to the convert cluster's tasks); ReadConvertResult reads the task's result object, named per run under a job's staging directory",
		`^Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/<ConvertCluster[A-Z0-9]+>/\*$`,
		`^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/`+regexpQuote(c.StagingPrefix)+`\*/`+regexpQuote(migration.ContainerResultPrefix)+`\*$`)
	st.Migrate = st.stateMachine("MigrateStateMachine", migrateName, st.MigrateDefinition, migrateRole,
		awsstepfunctions.LogLevel_ALL, true)

	// Backfill.
	stack := st.Stack
	migrateArn := stack.FormatArn(&awscdk.ArnComponents{Service: s("states"), Resource: s("stateMachine"), ResourceName: s(migrateName), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	migrateExecs := stack.FormatArn(&awscdk.ArnComponents{Service: s("states"), Resource: s("execution"), ResourceName: s(migrateName + ":*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	backfillArn := stack.FormatArn(&awscdk.ArnComponents{Service: s("states"), Resource: s("stateMachine"), ResourceName: s(backfillName), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	backfillExecs := stack.FormatArn(&awscdk.ArnComponents{Service: s("states"), Resource: s("execution"), ResourceName: s(backfillName + "/*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	syncRule := stack.FormatArn(&awscdk.ArnComponents{Service: s("events"), Resource: s("rule"), ResourceName: s("StepFunctionsGetEventsForStepFunctionsExecutionRule"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})

	backfillValues := map[string]string{
		"MigrateStateMachineArn": *st.Migrate.StateMachineArn(),
		"SourceBucket":           *st.Source.BucketName(),
		"ResultsBucket":          *st.Ops.BucketName(),
		// ReadPolicy reads the run-time policy document for the Map's
		// concurrency and tolerated failure percentage.
		statemachine.PolicyParameterName: *st.Policy.ParameterName(),
		// An item whose child execution could not be started is named there.
		statemachine.DeadLetterQueueURL: *st.DeadLetter.QueueUrl(),
	}
	if c.BackfillChildExecutionType == "EXPRESS" {
		// Express workflows run no .sync integration and last at most five minutes: the
		// inlined migrate workflow has no container path (docs/large-objects.md).
		lambdaOnly, err := WithoutContainerPath(migrateDef)
		if err != nil {
			return fmt.Errorf("backfill EXPRESS variant: %w", err)
		}
		backfillDef, err = ExpressBackfill(backfillDef, lambdaOnly)
		if err != nil {
			return fmt.Errorf("backfill EXPRESS variant: %w", err)
		}
		delete(backfillValues, "MigrateStateMachineArn")
		// After each Map, executionfailed closes the jobs of children that timed out.
		backfillValues[statemachine.ExecutionFailedFunctionArn] = *st.Functions["executionfailed"].FunctionArn()
		for k, v := range migrateValues {
			if _, container := st.containerValues[k]; !container {
				backfillValues[k] = v
			}
		}
	}
	st.BackfillDefinition, err = Substitute(backfillDef, backfillValues)
	if err != nil {
		return fmt.Errorf("backfill definition: %w", err)
	}

	backfillRole := st.stateMachineRole("BackfillStateMachine")
	add := func(sid string, actions []string, res ...*string) {
		backfillRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Sid: s(sid), Actions: strs(actions...), Resources: &res}))
	}
	add("ListSourceForItemReader", []string{"s3:ListBucket"}, st.Source.BucketArn())
	add("ReadInventoryManifests", []string{"s3:GetObject"}, st.Ops.ArnForObjects(s("inventory/*")))
	add("WriteResults", []string{"s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"}, st.Ops.ArnForObjects(s("backfill-results/*")))
	add("RunOwnMapRunChildren", []string{"states:StartExecution"}, backfillArn)
	// RedriveExecution: a redriven backfill redrives its Map Run's failed
	// children (docs/decisions/0102).
	add("ManageOwnMapRunChildren", []string{"states:DescribeExecution", "states:StopExecution", "states:RedriveExecution"}, backfillExecs)
	add("ReadPolicyDocument", []string{"ssm:GetParameter"}, st.Policy.ParameterArn())
	add("NameUnstartedItems", []string{"sqs:SendMessage"}, st.DeadLetter.QueueArn())
	if c.BackfillChildExecutionType == "EXPRESS" {
		add("CloseUnfinishedChildren", []string{"lambda:InvokeFunction"}, st.Functions["executionfailed"].FunctionArn())
		backfillRole.AddToPrincipalPolicy(invoke)
		backfillRole.AddToPrincipalPolicy(send)
	} else {
		add("StartMigrateChildren", []string{"states:StartExecution"}, migrateArn)
		add("SyncMigrateChildren", []string{"states:DescribeExecution", "states:StopExecution"}, migrateExecs)
		add("SyncCompletionEvents", []string{"events:PutTargets", "events:PutRule", "events:DescribeRule"}, syncRule)
	}
	st.Backfill = st.stateMachine("BackfillStateMachine", backfillName, st.BackfillDefinition, backfillRole,
		awsstepfunctions.LogLevel_ERROR, false)
	suppressIAM5(backfillRole, "Distributed Map needs object patterns for its ItemReader (inventory manifests under inventory/) and ResultWriter (backfill-results/), and execution patterns for its own and its migrate child executions; each is scoped to one prefix or state machine",
		`^Resource::<OpsBucket[A-Z0-9]+\.Arn>/inventory/\*$`,
		`^Resource::<OpsBucket[A-Z0-9]+\.Arn>/backfill-results/\*$`,
		`^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:`+regexpQuote(backfillName)+`/\*$`,
		`^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:`+regexpQuote(migrateName)+`:\*$`)
	suppress(st.Backfill, false, [2]string{"AwsSolutions-SF1", "the backfill logs ERROR level only: ALL would log one event per state of up to millions of map items; per-object detail is in the migrate state machine's ALL-level log and the ResultWriter output"})
	return nil
}

// stateMachineRole is the role Step Functions assumes for the state machine
// id; its statements are added explicitly (no grants inferred from the
// definition).
func (st *Stack) stateMachineRole(id string) awsiam.Role {
	return awsiam.NewRole(st.Stack, s(id+"Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(s("states.amazonaws.com"), nil),
	})
}

// stateMachine creates the Standard state machine id named name, traced,
// logging at level into its own log group (execution data only when
// withData), and records why its role holds the logging and tracing
// wildcard.
func (st *Stack) stateMachine(id, name, definition string, role awsiam.Role, level awsstepfunctions.LogLevel, withData bool) awsstepfunctions.StateMachine {
	logs := awslogs.NewLogGroup(st.Stack, s(id+"Logs"), &awslogs.LogGroupProps{
		LogGroupName:  s("/aws/vendedlogs/states/" + name),
		Retention:     retention(st.Config.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	sm := awsstepfunctions.NewStateMachine(st.Stack, s(id), &awsstepfunctions.StateMachineProps{
		StateMachineName: s(name),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(s(definition)),
		Role:             role,
		TracingEnabled:   jsii.Bool(true),
		Logs:             &awsstepfunctions.LogOptions{Destination: logs, Level: level, IncludeExecutionData: jsii.Bool(withData)},
	})
	suppressIAM5(role, "Step Functions log delivery and X-Ray tracing APIs have no resource-level permissions (added by CDK for logging/tracing)", `^Resource::\*$`)
	return sm
}

func (st *Stack) rule() {
	c := st.Config
	var prefixes []interface{}
	for _, p := range c.SourcePrefixes {
		prefixes = append(prefixes, map[string]interface{}{"prefix": p})
	}
	st.Rule = awsevents.NewRule(st.Stack, s("SourceObjectCreatedRule"), &awsevents.RuleProps{
		Description: s("geomigrate: Object Created under the source prefixes starts the migrate state machine"),
		EventPattern: &awsevents.EventPattern{
			Source:     strs("aws.s3"),
			DetailType: strs("Object Created"),
			Detail: &map[string]interface{}{
				// Only the source bucket; the destination has EventBridge notifications off and
				// a different name, so promotion writes can never match.
				"bucket": map[string]interface{}{"name": []interface{}{st.Source.BucketName()}},
				"object": map[string]interface{}{"key": prefixes},
			},
		},
	})
	st.Rule.AddTarget(awseventstargets.NewSfnStateMachine(st.Migrate, &awseventstargets.SfnStateMachineProps{
		DeadLetterQueue: st.EventsDLQ,
		RetryAttempts:   n(float64(c.EventRetryAttempts)),
		MaxEventAge:     awscdk.Duration_Hours(n(float64(c.EventMaxAgeHours))),
	}))
}

// executionEndedRule sends the migrate state machine's unfinished ends to executionfailed. Step
// Functions emits "Step Functions Execution Status Change" events for Standard workflows (AWS
// Step Functions Developer Guide, "EventBridge (CloudWatch Events) for Step Functions execution
// status changes"); routed executions also end FAILED (Routed.*) and are ignored by the handler.
func (st *Stack) executionEndedRule() {
	c := st.Config
	st.ExecutionEndedRule = awsevents.NewRule(st.Stack, s("MigrateExecutionEndedRule"), &awsevents.RuleProps{
		Description: s("geomigrate: a migrate execution FAILED, TIMED_OUT or ABORTED closes its job (executionfailed)"),
		EventPattern: &awsevents.EventPattern{
			Source:     strs("aws.states"),
			DetailType: strs("Step Functions Execution Status Change"),
			Detail: &map[string]interface{}{
				"status":          []interface{}{"FAILED", "TIMED_OUT", "ABORTED"},
				"stateMachineArn": []interface{}{st.Migrate.StateMachineArn()},
			},
		},
	})
	st.ExecutionEndedRule.AddTarget(awseventstargets.NewLambdaFunction(st.Functions["executionfailed"], &awseventstargets.LambdaFunctionProps{
		DeadLetterQueue: st.EventsDLQ,
		RetryAttempts:   n(float64(c.EventRetryAttempts)),
		MaxEventAge:     awscdk.Duration_Hours(n(float64(c.EventMaxAgeHours))),
	}))
}
