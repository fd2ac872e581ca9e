package main

import (
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Stack holds the constructs the tests look at.
type Stack struct {
	Stack                                awscdk.Stack
	Config                               *Config
	Source, Dest, Ops, AccessLogs        awss3.Bucket
	Table                                awsdynamodb.Table
	tableIndexes                         []string // the table's global secondary indexes, by name
	Remediation, DeadLetter              awssqs.Queue
	RemediationRedrive, DeadLetterRedrve awssqs.Queue
	EventsDLQ                            awssqs.Queue
	Functions                            map[string]awslambda.Function
	FunctionTimeouts                     map[string]int // seconds, by function name; the Lambda tasks' TimeoutSeconds too
	Migrate, Backfill                    awsstepfunctions.StateMachine
	Rule                                 awsevents.Rule
	ExecutionEndedRule                   awsevents.Rule
	AlarmTopic                           awssns.Topic
	// Policy is the run-time policy document (internal/policy) hashcheck
	// and classify read.
	Policy             awsssm.StringParameter
	MigrateDefinition  string // after substitution (contains CDK tokens)
	BackfillDefinition string
	// The large-object path (container.go): the convert container's cluster and task
	// definition, and the migrate definition's values for their placeholders.
	ConvertCluster  awsecs.Cluster
	ConvertTask     awsecs.FargateTaskDefinition
	containerValues map[string]string
}

// PolicyParameterName is the SSM parameter of the run-time policy document.
const PolicyParameterName = "/geomigrate/policy"

// QuarantinePrefix is where the routing functions write quarantine bundles
// in the operations bucket (GEOMIGRATE_QUARANTINE_PREFIX).
const QuarantinePrefix = "quarantine/"

// BackfillResultsPrefix is where backfill.asl.json's ResultWriter puts each Map Run's files in the
// operations bucket (its Prefix); executionfailed reads them for the EXPRESS variant.
const BackfillResultsPrefix = "backfill-results/"

// Star-resource reasons: the only IAM statements allowed a bare "*" resource, by action.
// These are added by CDK (X-Ray tracing, Step Functions log delivery) and the services do not
// support resource-level permissions for them. The tests fail on any other "*" resource.
var StarResourceReasons = map[string]string{
	"xray:PutTraceSegments":         "X-Ray does not support resource-level permissions for trace submission",
	"xray:PutTelemetryRecords":      "X-Ray does not support resource-level permissions for telemetry",
	"xray:GetSamplingRules":         "X-Ray does not support resource-level permissions for sampling rules",
	"xray:GetSamplingTargets":       "X-Ray does not support resource-level permissions for sampling targets",
	"logs:CreateLogDelivery":        "CloudWatch Logs vended-log delivery APIs used by Step Functions logging require Resource *",
	"logs:GetLogDelivery":           "CloudWatch Logs vended-log delivery APIs used by Step Functions logging require Resource *",
	"logs:UpdateLogDelivery":        "CloudWatch Logs vended-log delivery APIs used by Step Functions logging require Resource *",
	"logs:DeleteLogDelivery":        "CloudWatch Logs vended-log delivery APIs used by Step Functions logging require Resource *",
	"logs:ListLogDeliveries":        "CloudWatch Logs vended-log delivery APIs used by Step Functions logging require Resource *",
	"logs:PutResourcePolicy":        "CloudWatch Logs resource policies (for vended logs) are account-level and require Resource *",
	"logs:DescribeResourcePolicies": "CloudWatch Logs resource policies (for vended logs) are account-level and require Resource *",
	"logs:DescribeLogGroups":        "CloudWatch Logs DescribeLogGroups does not support resource-level permissions",
	"ecr:GetAuthorizationToken":     "ECR's GetAuthorizationToken has no resource-level permissions (the convert task's execution role, added by CDK for the image pull)",
}

func s(v string) *string           { return jsii.String(v) }
func n(v float64) *float64         { return jsii.Number(v) }
func strs(v ...string) *[]*string  { return jsii.Strings(v...) }
func days(d int) awscdk.Duration   { return awscdk.Duration_Days(n(float64(d))) }
func secs(d int) awscdk.Duration   { return awscdk.Duration_Seconds(n(float64(d))) }
func mins(d int) awscdk.Duration   { return awscdk.Duration_Minutes(n(float64(d))) }
func itoa(i int) string            { return strconv.Itoa(i) }
func arns(v ...*string) *[]*string { return &v }

func suppress(c constructs.IConstruct, children bool, rules ...[2]string) {
	var list []*cdknag.NagPackSuppression
	for _, r := range rules {
		list = append(list, &cdknag.NagPackSuppression{Id: s(r[0]), Reason: s(r[1])})
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &list, jsii.Bool(children))
}

// suppressIAM5 suppresses AwsSolutions-IAM5 only for the listed findings (regexes over the
// finding text, e.g. "Resource::<SourceBucket....Arn>/incoming/*"), each with its reason.
func suppressIAM5(c constructs.IConstruct, reason string, regexes ...string) {
	var applies []interface{}
	for _, r := range regexes {
		applies = append(applies, &cdknag.RegexAppliesTo{Regex: s("/" + r + "/")})
	}
	list := []*cdknag.NagPackSuppression{{Id: s("AwsSolutions-IAM5"), Reason: s(reason), AppliesTo: &applies}}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &list, jsii.Bool(true))
}

// NewGeomigrateStack builds the whole system.
func NewGeomigrateStack(scope constructs.Construct, cfg *Config, assets *Assets, props *awscdk.StackProps) (*Stack, error) {
	stack := awscdk.NewStack(scope, s(cfg.StackName), props)
	st := &Stack{Stack: stack, Config: cfg, Functions: map[string]awslambda.Function{}}
	if len(assets.Placeholders) > 0 {
		awscdk.Annotations_Of(stack).AddWarningV2(s("geomigrate:placeholderAssets"),
			s("placeholder assets in use for: "+strings.Join(assets.Placeholders, ", ")+
				"; this template is for review only: run `make build layer` (or pass gdalLayerArn) before deploying"), nil)
	}

	st.buckets()
	st.table()
	st.queues()
	if err := st.functions(assets); err != nil {
		return nil, err
	}
	if err := st.stateMachines(); err != nil {
		return nil, err
	}
	st.rule()
	st.executionEndedRule()
	st.alarmsAndDashboard()
	// EventBridgeEnabled on the source bucket is applied by CDK's own notification custom resource.
	if h := stack.Node().TryFindChild(s("BucketNotificationsHandler050a0587b7544547bf325f094a3db834")); h != nil {
		suppress(h, true,
			[2]string{"AwsSolutions-IAM4", "CDK's BucketNotificationsHandler (it turns on EventBridge notifications for the source bucket at deploy time) uses AWSLambdaBasicExecutionRole; it is CDK-managed and only runs during deployment"})
	}
	st.outputs()
	return st, nil
}

func (st *Stack) outputs() {
	out := func(id string, v *string, desc string) {
		awscdk.NewCfnOutput(st.Stack, s(id), &awscdk.CfnOutputProps{Value: v, Description: s(desc)})
	}
	out("SourceBucketName", st.Source.BucketName(), "upload here (under the source prefixes) to migrate")
	out("DestinationBucketName", st.Dest.BucketName(), "converted outputs")
	out("OpsBucketName", st.Ops.BucketName(), "backfill results (backfill-results/) and S3 Inventory (inventory/)")
	out("StateTableName", st.Table.TableName(), "state store")
	out("MigrateStateMachineArn", st.Migrate.StateMachineArn(), "per-object workflow")
	out("BackfillStateMachineArn", st.Backfill.StateMachineArn(), "start with {\"prefix\": \"...\"} or {\"manifest\": {\"bucket\", \"key\"}}")
	out("RemediationQueueUrl", st.Remediation.QueueUrl(), "data_specific failures")
	out("DeadLetterQueueUrl", st.DeadLetter.QueueUrl(), "systemic / unknown failures")
	out("AlarmTopicArn", st.AlarmTopic.TopicArn(), "subscribe to receive alarms")
	out("PolicyParameterName", st.Policy.ParameterName(), "run-time policy document: geomigrate policy put FILE --backend aws --policy-parameter NAME")
}
