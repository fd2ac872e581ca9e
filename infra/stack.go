package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/statemachine"
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

func (st *Stack) bucket(id string, props *awss3.BucketProps) awss3.Bucket {
	props.BlockPublicAccess = awss3.BlockPublicAccess_BLOCK_ALL()
	props.EnforceSSL = jsii.Bool(true)
	props.MinimumTLSVersion = n(1.2)
	props.Encryption = awss3.BucketEncryption_S3_MANAGED
	props.ObjectOwnership = awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED
	if props.RemovalPolicy == "" {
		props.RemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	return awss3.NewBucket(st.Stack, s(id), props)
}

func (st *Stack) buckets() {
	c := st.Config
	abort := &awss3.LifecycleRule{Id: s("abort-incomplete-multipart"), AbortIncompleteMultipartUploadAfter: days(c.AbortMultipartDays)}

	st.AccessLogs = st.bucket("AccessLogsBucket", &awss3.BucketProps{
		ObjectOwnership: awss3.ObjectOwnership_BUCKET_OWNER_PREFERRED,
		LifecycleRules:  &[]*awss3.LifecycleRule{abort, {Id: s("expire-access-logs"), Expiration: days(365)}},
	})

	st.Ops = st.bucket("OpsBucket", &awss3.BucketProps{
		ServerAccessLogsBucket: st.AccessLogs, ServerAccessLogsPrefix: s("ops/"),
		LifecycleRules: &[]*awss3.LifecycleRule{abort,
			{Id: s("expire-backfill-results"), Prefix: s("backfill-results/"), Expiration: days(180)},
			{Id: s("expire-inventory"), Prefix: s("inventory/"), Expiration: days(30)}},
	})

	var inventories *[]*awss3.Inventory
	if c.EnableInventory {
		inventories = &[]*awss3.Inventory{{
			InventoryId: s("geomigrate-backfill"),
			Destination: &awss3.InventoryDestination{Bucket: st.Ops, Prefix: s("inventory")},
			Frequency:   awss3.InventoryFrequency_WEEKLY,
			Format:      awss3.InventoryFormat_CSV,
			Enabled:     jsii.Bool(true),
		}}
	}
	var srcName, dstName *string
	if c.SourceBucketName != "" {
		srcName = s(c.SourceBucketName)
	}
	if c.DestBucketName != "" {
		dstName = s(c.DestBucketName)
	}
	st.Source = st.bucket("SourceBucket", &awss3.BucketProps{
		BucketName:             srcName,
		EventBridgeEnabled:     jsii.Bool(true),
		LifecycleRules:         &[]*awss3.LifecycleRule{abort},
		Inventories:            inventories,
		ServerAccessLogsBucket: st.AccessLogs, ServerAccessLogsPrefix: s("source/"),
	})
	st.Dest = st.bucket("DestinationBucket", &awss3.BucketProps{
		BucketName: dstName,
		Versioned:  jsii.Bool(true),
		// Never send the destination's events to EventBridge: promotion writes cannot re-trigger.
		EventBridgeEnabled: jsii.Bool(false),
		LifecycleRules: &[]*awss3.LifecycleRule{abort,
			{Id: s("expire-staging"), Prefix: s(c.StagingPrefix), Expiration: days(c.StagingExpirationDays), NoncurrentVersionExpiration: days(1)},
			{Id: s("expire-noncurrent-versions"), NoncurrentVersionExpiration: days(c.NoncurrentVersionDays)}},
		ServerAccessLogsBucket: st.AccessLogs, ServerAccessLogsPrefix: s("destination/"),
	})
}

func (st *Stack) table() {
	st.Table = awsdynamodb.NewTable(st.Stack, s("StateTable"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: s("pk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		TimeToLiveAttribute: s("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	// Partition key status_shard (status#NN over 64 shards of the job ID), not
	// status: one status's index writes spread over 64 values, each under
	// DynamoDB's per-partition write limit (docs/decisions/0094).
	st.index(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      s("status-shard-index"),
		PartitionKey:   &awsdynamodb.Attribute{Name: s("status_shard"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:        &awsdynamodb.Attribute{Name: s("updated_at"), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
}

// index adds a global secondary index to the state table and records its
// name, which the throttling alarms watch (one alarm per index).
func (st *Stack) index(props *awsdynamodb.GlobalSecondaryIndexProps) {
	st.Table.AddGlobalSecondaryIndex(props)
	st.tableIndexes = append(st.tableIndexes, *props.IndexName)
}

func (st *Stack) queue(id, name string, dlq awssqs.IQueue) awssqs.Queue {
	props := &awssqs.QueueProps{
		QueueName:       s(st.Config.NamePrefix + "-" + name),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: days(14),
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
	}
	if dlq != nil {
		props.DeadLetterQueue = &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: n(float64(st.Config.QueueMaxReceiveCount))}
	}
	return awssqs.NewQueue(st.Stack, s(id), props)
}

func (st *Stack) queues() {
	st.RemediationRedrive = st.queue("RemediationRedriveDLQ", "remediation-redrive-dlq", nil)
	st.Remediation = st.queue("RemediationQueue", "remediation", st.RemediationRedrive)
	st.DeadLetterRedrve = st.queue("DeadLetterRedriveDLQ", "dead-letter-redrive-dlq", nil)
	st.DeadLetter = st.queue("DeadLetterQueue", "dead-letter", st.DeadLetterRedrve)
	st.EventsDLQ = st.queue("EventsDLQ", "events-dlq", nil)
	suppress(st.EventsDLQ, true, [2]string{"AwsSolutions-SQS3", "this queue is itself the dead-letter queue of the EventBridge rule target; its depth and age are alarmed"})
}

// s3Statement builds one explicit, least-privilege S3 statement.
func s3Statement(sid string, actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: s(sid), Effect: awsiam.Effect_ALLOW, Actions: strs(actions...), Resources: &resources,
	})
}

// recipeStmts let hashcheck read the recipe file of the recipe context
// value, that object or parameter alone (a SecureString also needs the
// key's kms:Decrypt, granted by the key policy, not here).
func (st *Stack) recipeStmts() []awsiam.PolicyStatement {
	kind, name, _ := recipeResource(st.Config.Recipe) // validated with the config
	switch kind {
	case "s3":
		return []awsiam.PolicyStatement{s3Statement("ReadRecipe", []string{"s3:GetObject"}, s("arn:"+*awscdk.Aws_PARTITION()+":s3:::"+name))}
	case "ssm":
		return []awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: s("ReadRecipe"), Actions: strs("ssm:GetParameter"),
			Resources: arns(s("arn:" + *awscdk.Aws_PARTITION() + ":ssm:" + *awscdk.Aws_REGION() + ":" + *awscdk.Aws_ACCOUNT_ID() + ":parameter/" + name)),
		})}
	}
	return nil
}

func (st *Stack) sourceObjects() []*string {
	var out []*string
	for _, p := range st.Config.SourcePrefixes {
		out = append(out, st.Source.ArnForObjects(s(p+"*")))
	}
	return out
}

func (st *Stack) functions(assets *Assets) error {
	c := st.Config
	arch := awslambda.Architecture_ARM_64()
	if c.Architecture == "x86_64" {
		arch = awslambda.Architecture_X86_64()
	}
	var layer awslambda.ILayerVersion
	if assets.LayerArn != "" {
		layer = awslambda.LayerVersion_FromLayerVersionArn(st.Stack, s("GdalLayer"), s(assets.LayerArn))
	} else {
		layer = awslambda.NewLayerVersion(st.Stack, s("GdalLayer"), &awslambda.LayerVersionProps{
			Code:                    awslambda.Code_FromAsset(s(assets.LayerZip), nil),
			CompatibleRuntimes:      &[]awslambda.Runtime{awslambda.Runtime_PROVIDED_AL2023()},
			CompatibleArchitectures: &[]awslambda.Architecture{arch},
			Description:             s("GDAL, PROJ, GEOS for geomigrate convert (layers/gdal)"),
			License:                 s("MIT AND others (see /opt/share/licenses)"),
		})
	}

	// The functions' settings, declared once in internal/config: the stack
	// renders them (every variable a function reads, nothing else).
	settings := config.DefaultLambda()
	settings.DestBucket, settings.DestPrefix = *st.Dest.BucketName(), c.DestPrefix
	settings.StagingPrefix, settings.StateTable = c.StagingPrefix, *st.Table.TableName()
	settings.Lease = config.Seconds(time.Duration(c.LeaseSeconds) * time.Second)
	settings.FingerprintThreshold = c.FingerprintThresholdBytes
	settings.VectorFormat, settings.ZSTDLevel = c.VectorFormat, c.ZstdLevel
	settings.EngineVersion, settings.LogLevel = c.GDALVersion, c.LogLevel
	settings.Recipe = c.Recipe
	// The run-time policy document (internal/policy, docs/operations.md):
	// hashcheck (job deadline) and classify (routing rules) read it,
	// cached for PolicyTTL; the others never ask. The stack stores the
	// default document; an operator's `geomigrate policy put` (validated)
	// stays in force across deploys until the default itself changes.
	st.Policy = awsssm.NewStringParameter(st.Stack, s("PolicyParameter"), &awsssm.StringParameterProps{
		ParameterName: s(PolicyParameterName),
		StringValue:   s(string(policy.Default().JSON())),
		Description:   s("geomigrate run-time policy: classification rules, alarm thresholds, job deadline, backfill concurrency"),
		Tier:          awsssm.ParameterTier_STANDARD,
	})
	withPolicy := settings
	withPolicy.PolicyParameter = PolicyParameterName
	if err := withPolicy.Check(); err != nil {
		return err
	}
	readPolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: s("ReadPolicyDocument"), Actions: strs("ssm:GetParameter"), Resources: arns(st.Policy.ParameterArn()),
	})
	// executionfailed also needs the dead-letter queue and the machine whose
	// executions it closes.
	closing := settings
	closing.DeadLetterQueueURL, closing.MigrateStateMachineArn = *st.DeadLetter.QueueUrl(), *st.migrateArn()
	if err := closing.Check(); err != nil {
		return err
	}
	gdalEnv := config.LayerEnvironment()
	gdalEnv["GDAL_CACHEMAX"] = itoa(c.ConvertMemoryMB / 4)

	src, dst := st.Source, st.Dest
	staging := dst.ArnForObjects(s(c.StagingPrefix + "*"))
	final := dst.ArnForObjects(s(c.DestPrefix + "*"))
	get := []string{"s3:GetObject"}
	list := []string{"s3:ListBucket"}
	tableStmt := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       s("StateTableReadWrite"),
		Actions:   strs("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"),
		Resources: arns(st.Table.TableArn()),
	})
	type spec struct {
		memory, timeout, reserved int
		ephemeral                 int
		settings                  config.Lambda
		gdalEnv                   bool
		layer                     bool
		stmts                     []awsiam.PolicyStatement
		iam5                      []string // regexes of the wildcard object ARNs it legitimately has
		desc                      string
	}
	// Listing the destination is limited to the staging prefix (s3:prefix condition).
	listStaging := func(sid string) awsiam.PolicyStatement {
		return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: s(sid), Actions: strs("s3:ListBucket"), Resources: arns(dst.BucketArn()),
			Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": c.StagingPrefix + "*"}},
		})
	}
	// Quarantine bundles (internal/quarantine): classify and executionfailed
	// read the routed source and its sidecars, stage the bundle under
	// staging and copy it under the quarantine prefix. Nothing else of the
	// destination is readable or writable to them, and they delete only
	// under staging.
	bundleStaging := dst.ArnForObjects(s(c.StagingPrefix + "quarantine/*"))
	bundles := dst.ArnForObjects(s(quarantine.DefaultPrefix + "*"))
	quarantineStmts := func() []awsiam.PolicyStatement {
		return []awsiam.PolicyStatement{
			s3Statement("ReadRoutedSource", get, st.sourceObjects()...),
			s3Statement("ListRoutedSourceSidecars", list, src.BucketArn()),
			s3Statement("StageQuarantineBundle", []string{"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"}, bundleStaging),
			s3Statement("WriteQuarantineBundle", []string{"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"}, bundles),
		}
	}
	bundleStagingRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.StagingPrefix+"quarantine/") + `\*$`
	bundlesRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(quarantine.DefaultPrefix) + `\*$`
	srcRe := `^Resource::<SourceBucket[A-Z0-9]+\.Arn>/.*\*$`
	stagingRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.StagingPrefix) + `\*$`
	finalRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.DestPrefix) + `\*$`
	specs := map[string]spec{
		"hashcheck": {memory: c.SmallMemoryMB, timeout: c.HashcheckTimeoutSeconds, reserved: c.SmallReservedConcurrency, ephemeral: 512,
			settings: withPolicy,
			desc:     "fingerprints the source, compares with the destination and the state table, claims the work",
			stmts: append([]awsiam.PolicyStatement{readPolicy,
				s3Statement("ReadSourcePrefixes", get, st.sourceObjects()...),
				s3Statement("ListSourceFor404", list, src.BucketArn()),
				s3Statement("HeadDestinationFinal", get, final),
				s3Statement("ListDestinationFor404", list, dst.BucketArn()),
				tableStmt,
			}, st.recipeStmts()...),
			iam5: []string{srcRe, finalRe}},
		"convert": {memory: c.ConvertMemoryMB, timeout: c.ConvertTimeoutSeconds, reserved: c.ConvertReservedConcurrency, ephemeral: c.ConvertEphemeralMB,
			layer: true, gdalEnv: true,
			desc: "preflights and converts one source with GDAL into the destination staging prefix",
			stmts: []awsiam.PolicyStatement{
				s3Statement("ReadSourcePrefixes", get, st.sourceObjects()...),
				s3Statement("ListSourceFor404", list, src.BucketArn()),
				s3Statement("WriteStaging", []string{"s3:PutObject", "s3:AbortMultipartUpload"}, staging),
				tableStmt,
			},
			iam5: []string{srcRe, stagingRe}},
		"promote": {memory: c.SmallMemoryMB, timeout: c.PromoteTimeoutSeconds, reserved: c.SmallReservedConcurrency, ephemeral: 512,
			desc: "copies staging to the final key with its metadata, deletes staging, marks COMPLETED",
			stmts: []awsiam.PolicyStatement{
				s3Statement("ReadWriteDeleteStaging", []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}, staging),
				s3Statement("WriteFinal", []string{"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"}, final),
				s3Statement("ListDestinationFor404", list, dst.BucketArn()),
				tableStmt,
			},
			iam5: []string{stagingRe, finalRe}},
		"classify": {memory: c.SmallMemoryMB, timeout: c.ClassifyTimeoutSeconds, reserved: c.SmallReservedConcurrency, ephemeral: 512,
			settings: withPolicy,
			desc:     "classifies a caught error into a tier and route, records it, writes the job's quarantine bundle and deletes its staged outputs",
			stmts: append([]awsiam.PolicyStatement{tableStmt, readPolicy,
				s3Statement("DeleteRoutedStaging", []string{"s3:DeleteObject"}, staging),
				listStaging("ListRoutedStaging"),
			}, quarantineStmts()...),
			iam5: []string{stagingRe, srcRe, bundleStagingRe, bundlesRe}},
		"executionfailed": {memory: c.SmallMemoryMB, timeout: 300, reserved: c.SmallReservedConcurrency, ephemeral: 512,
			settings: closing,
			desc:     "closes the job of a migrate execution that failed outside Catch, timed out or was aborted: quarantined, lease released, staging deleted, quarantine bundle, dead-letter message",
			stmts: append([]awsiam.PolicyStatement{tableStmt,
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid: s("FindJobsByStatus"), Actions: strs("dynamodb:Query"),
					Resources: arns(s(*st.Table.TableArn() + "/index/status-shard-index")),
				}),
				s3Statement("DeleteUnfinishedStaging", []string{"s3:DeleteObject"}, staging),
				listStaging("ListUnfinishedStaging"),
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid: s("SendToDeadLetterQueue"), Actions: strs("sqs:SendMessage"), Resources: arns(st.DeadLetter.QueueArn()),
				}),
			}, quarantineStmts()...),
			iam5: []string{stagingRe, srcRe, bundleStagingRe, bundlesRe}},
	}
	st.FunctionTimeouts = map[string]int{}
	for _, name := range FunctionNames {
		sp := specs[name]
		st.FunctionTimeouts[name] = sp.timeout
		id := strings.ToUpper(name[:1]) + name[1:]
		logs := awslogs.NewLogGroup(st.Stack, s(id+"Logs"), &awslogs.LogGroupProps{
			Retention:     retention(c.LogRetentionDays),
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		role := awsiam.NewRole(st.Stack, s(id+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(s("lambda.amazonaws.com"), nil),
			Description: s("geomigrate " + name + ": " + sp.desc),
		})
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: s("OwnLogGroup"), Actions: strs("logs:CreateLogStream", "logs:PutLogEvents"), Resources: arns(logs.LogGroupArn()),
		}))
		for _, stmt := range sp.stmts {
			role.AddToPrincipalPolicy(stmt)
		}
		if sp.settings.DestBucket == "" {
			sp.settings = settings
		}
		env := map[string]*string{}
		for k, v := range sp.settings.Environment() {
			env[k] = s(v)
		}
		if sp.gdalEnv {
			for k, v := range gdalEnv {
				env[k] = s(v)
			}
		}
		props := &awslambda.FunctionProps{
			Description:          s("geomigrate " + name + ": " + sp.desc),
			Runtime:              awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:         arch,
			Handler:              s("bootstrap"),
			Code:                 awslambda.Code_FromAsset(s(assets.FunctionDirs[name]), nil),
			MemorySize:           n(float64(sp.memory)),
			Timeout:              secs(sp.timeout),
			EphemeralStorageSize: awscdk.Size_Mebibytes(n(float64(sp.ephemeral))),
			Environment:          &env,
			Role:                 role,
			LogGroup:             logs,
			Tracing:              awslambda.Tracing_ACTIVE,
		}
		if sp.reserved > 0 {
			props.ReservedConcurrentExecutions = n(float64(sp.reserved))
		}
		if sp.layer {
			props.Layers = &[]awslambda.ILayerVersion{layer}
		}
		fn := awslambda.NewFunction(st.Stack, s(id+"Function"), props)
		st.Functions[name] = fn
		suppressIAM5(role, "X-Ray tracing (added by CDK for Tracing ACTIVE) has no resource-level permissions", `^Resource::\*$`)
		if len(sp.iam5) > 0 {
			suppressIAM5(role, "object-level S3 actions need an object ARN pattern; each pattern is scoped to one configured bucket prefix ("+name+")", sp.iam5...)
		}
	}
	var err error
	st.containerValues, err = st.container(assets, settings, gdalEnv)
	return err
}

// migrateArn is the migrate state machine's ARN built from its name, so the functions created
// before the state machine can name it without a dependency cycle.
func (st *Stack) migrateArn() *string {
	return st.Stack.FormatArn(&awscdk.ArnComponents{Service: s("states"), Resource: s("stateMachine"),
		ResourceName: s(st.Config.NamePrefix + "-migrate"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
}

func regexpQuote(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `.`, `\.`, `+`, `\+`, `(`, `\(`, `)`, `\)`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`, `|`, `\|`)
	return r.Replace(p)
}

func retention(d int) awslogs.RetentionDays {
	for _, r := range []struct {
		d int
		r awslogs.RetentionDays
	}{{1, awslogs.RetentionDays_ONE_DAY}, {3, awslogs.RetentionDays_THREE_DAYS}, {5, awslogs.RetentionDays_FIVE_DAYS},
		{7, awslogs.RetentionDays_ONE_WEEK}, {14, awslogs.RetentionDays_TWO_WEEKS}, {30, awslogs.RetentionDays_ONE_MONTH},
		{60, awslogs.RetentionDays_TWO_MONTHS}, {90, awslogs.RetentionDays_THREE_MONTHS}, {120, awslogs.RetentionDays_FOUR_MONTHS},
		{150, awslogs.RetentionDays_FIVE_MONTHS}, {180, awslogs.RetentionDays_SIX_MONTHS}, {365, awslogs.RetentionDays_ONE_YEAR}} {
		if d <= r.d {
			return r.r
		}
	}
	return awslogs.RetentionDays_TEN_YEARS
}

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
	migrateRole := awsiam.NewRole(st.Stack, s("MigrateStateMachineRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(s("states.amazonaws.com"), nil),
	})
	migrateRole.AddToPrincipalPolicy(invoke)
	migrateRole.AddToPrincipalPolicy(send)
	for _, stmt := range st.containerStatements() {
		migrateRole.AddToPrincipalPolicy(stmt)
	}
	suppressIAM5(migrateRole, "ecs:runTask.sync stops and describes the task it started, whose ID is not known before it runs (scoped to the convert cluster's tasks); ReadConvertResult reads the task's result object, named per run under a job's staging directory",
		`^Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task/<ConvertCluster[A-Z0-9]+>/\*$`,
		`^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/`+regexpQuote(c.StagingPrefix)+`\*/`+regexpQuote(migration.ContainerResultPrefix)+`\*$`)
	migrateLogs := awslogs.NewLogGroup(st.Stack, s("MigrateStateMachineLogs"), &awslogs.LogGroupProps{
		LogGroupName:  s("/aws/vendedlogs/states/" + migrateName),
		Retention:     retention(c.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	st.Migrate = awsstepfunctions.NewStateMachine(st.Stack, s("MigrateStateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName: s(migrateName),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(s(st.MigrateDefinition)),
		Role:             migrateRole,
		TracingEnabled:   jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination: migrateLogs, Level: awsstepfunctions.LogLevel_ALL, IncludeExecutionData: jsii.Bool(true),
		},
	})
	suppressIAM5(migrateRole, "Step Functions log delivery and X-Ray tracing APIs have no resource-level permissions (added by CDK for logging/tracing)", `^Resource::\*$`)

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

	backfillRole := awsiam.NewRole(st.Stack, s("BackfillStateMachineRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(s("states.amazonaws.com"), nil),
	})
	add := func(sid string, actions []string, res ...*string) {
		backfillRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Sid: s(sid), Actions: strs(actions...), Resources: &res}))
	}
	add("ListSourceForItemReader", []string{"s3:ListBucket"}, st.Source.BucketArn())
	add("ReadInventoryManifests", []string{"s3:GetObject"}, st.Ops.ArnForObjects(s("inventory/*")))
	add("WriteResults", []string{"s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"}, st.Ops.ArnForObjects(s("backfill-results/*")))
	add("RunOwnMapRunChildren", []string{"states:StartExecution"}, backfillArn)
	add("ManageOwnMapRunChildren", []string{"states:DescribeExecution", "states:StopExecution"}, backfillExecs)
	add("ReadPolicyDocument", []string{"ssm:GetParameter"}, st.Policy.ParameterArn())
	add("NameUnstartedItems", []string{"sqs:SendMessage"}, st.DeadLetter.QueueArn())
	if c.BackfillChildExecutionType == "EXPRESS" {
		backfillRole.AddToPrincipalPolicy(invoke)
		backfillRole.AddToPrincipalPolicy(send)
	} else {
		add("StartMigrateChildren", []string{"states:StartExecution"}, migrateArn)
		add("SyncMigrateChildren", []string{"states:DescribeExecution", "states:StopExecution"}, migrateExecs)
		add("SyncCompletionEvents", []string{"events:PutTargets", "events:PutRule", "events:DescribeRule"}, syncRule)
	}
	backfillLogs := awslogs.NewLogGroup(st.Stack, s("BackfillStateMachineLogs"), &awslogs.LogGroupProps{
		LogGroupName:  s("/aws/vendedlogs/states/" + backfillName),
		Retention:     retention(c.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	st.Backfill = awsstepfunctions.NewStateMachine(st.Stack, s("BackfillStateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName: s(backfillName),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromString(s(st.BackfillDefinition)),
		Role:             backfillRole,
		TracingEnabled:   jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination: backfillLogs, Level: awsstepfunctions.LogLevel_ERROR, IncludeExecutionData: jsii.Bool(false),
		},
	})
	suppressIAM5(backfillRole, "Step Functions log delivery and X-Ray tracing APIs have no resource-level permissions (added by CDK for logging/tracing)", `^Resource::\*$`)
	suppressIAM5(backfillRole, "Distributed Map needs object patterns for its ItemReader (inventory manifests under inventory/) and ResultWriter (backfill-results/), and execution patterns for its own and its migrate child executions; each is scoped to one prefix or state machine",
		`^Resource::<OpsBucket[A-Z0-9]+\.Arn>/inventory/\*$`,
		`^Resource::<OpsBucket[A-Z0-9]+\.Arn>/backfill-results/\*$`,
		`^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:`+regexpQuote(backfillName)+`/\*$`,
		`^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:`+regexpQuote(migrateName)+`:\*$`)
	suppress(st.Backfill, false, [2]string{"AwsSolutions-SF1", "the backfill logs ERROR level only: ALL would log one event per state of up to millions of map items; per-object detail is in the migrate state machine's ALL-level log and the ResultWriter output"})
	return nil
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

func (st *Stack) alarmsAndDashboard() {
	c := st.Config
	st.AlarmTopic = awssns.NewTopic(st.Stack, s("AlarmTopic"), &awssns.TopicProps{
		DisplayName: s("geomigrate alarms"), EnforceSSL: jsii.Bool(true),
	})
	suppress(st.AlarmTopic, true, [2]string{"AwsSolutions-SNS2", "alarm notifications carry no data; CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer-managed key is left to the operator"})
	if c.AlarmEmail != "" {
		st.AlarmTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(s(c.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(st.AlarmTopic)
	five := mins(5)
	alarm := func(id, desc string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(st.Stack, s(id), &awscloudwatch.AlarmProps{
			AlarmName:          s(c.NamePrefix + "-" + id),
			AlarmDescription:   s(desc),
			Metric:             metric,
			Threshold:          n(threshold),
			EvaluationPeriods:  n(1),
			ComparisonOperator: op,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		return a
	}
	gt := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	maxOpts := &awscloudwatch.MetricOptions{Statistic: s("Maximum"), Period: five}
	sumOpts := &awscloudwatch.MetricOptions{Statistic: s("Sum"), Period: five}
	for _, q := range []struct {
		id string
		q  awssqs.Queue
	}{{"DeadLetter", st.DeadLetter}, {"DeadLetterRedrive", st.DeadLetterRedrve}, {"RemediationRedrive", st.RemediationRedrive}, {"Events", st.EventsDLQ}} {
		alarm(q.id+"DlqDepth", "messages waiting in the "+q.id+" dead-letter queue (> 0)",
			q.q.MetricApproximateNumberOfMessagesVisible(maxOpts), 0, gt)
		alarm(q.id+"DlqOldestMessage", "oldest message in the "+q.id+" dead-letter queue older than 48 h",
			q.q.MetricApproximateAgeOfOldestMessage(maxOpts), 48*3600, gt)
	}
	started := st.Migrate.MetricStarted(sumOpts)
	remSent := st.Remediation.MetricNumberOfMessagesSent(sumOpts)
	dlqSent := st.DeadLetter.MetricNumberOfMessagesSent(sumOpts)
	alarm("RemediationRate", fmt.Sprintf("more than %d%% of migrate executions routed to remediation (data_specific) over 1 h", c.RemediationRateThresholdPct),
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: s("IF(started > 0, 100 * remediation / started, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"started":     st.Migrate.MetricStarted(&awscloudwatch.MetricOptions{Statistic: s("Sum"), Period: mins(60)}),
				"remediation": st.Remediation.MetricNumberOfMessagesSent(&awscloudwatch.MetricOptions{Statistic: s("Sum"), Period: mins(60)}),
			},
			Label:  s("remediation rate %"),
			Period: mins(60),
		}), float64(c.RemediationRateThresholdPct), gt)
	// Routed files end in Fail states (Routed.Remediation / Routed.DeadLetter) and are counted
	// by the queue alarms; this alarm counts the failures that no queue explains.
	alarm("MigrateUnroutedFailures", "migrate executions that failed, timed out or were aborted without being routed to a queue",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: s("FILL(failed, 0) + FILL(timedout, 0) + FILL(aborted, 0) - FILL(remediation, 0) - FILL(deadletter, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"failed": st.Migrate.MetricFailed(sumOpts), "timedout": st.Migrate.MetricTimedOut(sumOpts),
				"aborted": st.Migrate.MetricAborted(sumOpts), "remediation": remSent, "deadletter": dlqSent,
			},
			Label: s("unrouted failures"), Period: five,
		}), 0, gt)
	st.fallbackAlarms(action)
	alarm("BackfillFailed", "a backfill execution failed (tolerated-failure threshold exceeded, reader or writer error)",
		st.Backfill.MetricFailed(sumOpts), 0, gt)
	// The handlers' EMF metric (internal/breaker.CountTransitions): a bucket's
	// circuit breaker opened; files wait instead of retrying (docs/operations.md).
	alarm("BreakerOpened", "a bucket's circuit breaker opened: the bucket failed repeatedly and files are waiting for it",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: s(emf.Namespace), MetricName: s(breaker.MetricTransitions),
			DimensionsMap: &map[string]*string{"To": s(string(breaker.Open))},
			Statistic:     s("Sum"), Period: five,
		}), 0, gt)
	states := handlerStates(st.MigrateDefinition, st.BackfillDefinition)
	for _, name := range FunctionNames {
		fn := st.Functions[name]
		id := strings.ToUpper(name[:1]) + name[1:]
		alarm(id+"Throttles", name+" Lambda throttled", fn.MetricThrottles(sumOpts), 0, gt)
		if invoked := states[*fn.FunctionArn()]; len(invoked) > 0 {
			alarm(id+"Errors", fmt.Sprintf("%s handler returned more than %d systemic or unknown errors in 5 minutes (data errors and retried transient errors are not counted)", name, c.LambdaErrorsThreshold),
				systemicErrors(id, invoked), float64(c.LambdaErrorsThreshold), gt)
			continue
		}
		// Not a state machine task (executionfailed): it meters no tiers,
		// and every error it returns is the pipeline's own.
		alarm(id+"Errors", fmt.Sprintf("%s Lambda errors above %d in 5 minutes", name, c.LambdaErrorsThreshold),
			fn.MetricErrors(sumOpts), float64(c.LambdaErrorsThreshold), gt)
	}
	// Step Functions throttles state transitions and retries once the
	// account's token bucket is empty: executions slow down, and a
	// backfill's child starts may outlast their retries (docs/operations.md).
	for _, sm := range []struct {
		id string
		sm awsstepfunctions.StateMachine
	}{{"Migrate", st.Migrate}, {"Backfill", st.Backfill}} {
		alarm(sm.id+"ExecutionThrottled", "state transitions or retries of the "+strings.ToLower(sm.id)+" state machine throttled by Step Functions",
			sm.sm.Metric(s(MetricExecutionThrottled), sumOpts), 0, gt)
	}
	st.tableThrottleAlarms(alarm)

	// Dashboard: outcomes by tier. completed = succeeded executions, data_specific = remediation
	// sends, systemic/unknown/exhausted = dead-letter sends; transient retries are in Lambda errors.
	label := func(m awscloudwatch.Metric, l string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Label: s(l)})
	}
	dash := awscloudwatch.NewDashboard(st.Stack, s("Dashboard"), &awscloudwatch.DashboardProps{DashboardName: s(c.NamePrefix)})
	dash.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: s("Outcomes by tier"), Width: n(12), Stacked: jsii.Bool(true),
			Left: &[]awscloudwatch.IMetric{
				label(st.Migrate.MetricSucceeded(sumOpts), "completed / skipped"),
				label(remSent, "data_specific → remediation"),
				label(dlqSent, "systemic / unknown / exhausted → dead letter"),
			},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: s("Executions"), Width: n(12),
			Left: &[]awscloudwatch.IMetric{label(started, "migrate started"), label(st.Migrate.MetricFailed(sumOpts), "migrate failed (incl. routed)"),
				label(st.Backfill.MetricStarted(sumOpts), "backfill started"), label(st.Backfill.MetricFailed(sumOpts), "backfill failed")},
		}),
	)
	var errs, thr, dur []awscloudwatch.IMetric
	for _, name := range FunctionNames {
		fn := st.Functions[name]
		errs = append(errs, label(fn.MetricErrors(sumOpts), name))
		thr = append(thr, label(fn.MetricThrottles(sumOpts), name))
		dur = append(dur, label(fn.MetricDuration(&awscloudwatch.MetricOptions{Statistic: s("p99"), Period: five}), name))
	}
	dash.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Lambda errors (incl. transient, retried)"), Width: n(8), Left: &errs}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Lambda throttles"), Width: n(8), Left: &thr}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Lambda duration p99"), Width: n(8), Left: &dur}),
	)
	var depth []awscloudwatch.IMetric
	for _, q := range []struct {
		l string
		q awssqs.Queue
	}{{"remediation", st.Remediation}, {"dead letter", st.DeadLetter}, {"remediation redrive DLQ", st.RemediationRedrive}, {"dead-letter redrive DLQ", st.DeadLetterRedrve}, {"events DLQ", st.EventsDLQ}} {
		depth = append(depth, label(q.q.MetricApproximateNumberOfMessagesVisible(maxOpts), q.l))
	}
	dash.AddWidgets(awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Queue depth"), Width: n(24), Left: &depth}))

	// The fallback-rate signals (docs/operations.md): rate per tier, the
	// data-specific rate per dataset type (a spike there points at one
	// upstream source), recovery latency after replays.
	var byTier, byType []awscloudwatch.IMetric
	for _, tier := range signals.Tiers {
		byTier = append(byTier, fallbackRate(tier, ""))
	}
	for _, dt := range []string{"raster", "vector"} {
		byType = append(byType, fallbackRate(string(fault.TierDataSpecific), dt))
	}
	recovery := []awscloudwatch.IMetric{
		label(fallbackMetric(migration.MetricRecoveryLatency, "p50", map[string]*string{}), "median"),
		label(fallbackMetric(migration.MetricRecoveryLatency, "Maximum", map[string]*string{}), "max"),
	}
	dash.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Fallback rate by tier (routed / jobs ended)"), Width: n(8), Left: &byTier}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Data-specific fallback rate by dataset type"), Width: n(8), Left: &byType}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: s("Recovery latency, routed to completed after replay (s)"), Width: n(8), Left: &recovery}),
	)
}

// MetricExecutionThrottled is Step Functions' per state machine count of
// throttled StateEntered events and retries (AWS/States, StateMachineArn).
const MetricExecutionThrottled = "ExecutionThrottled"

// ThrottledOperations are the DynamoDB operations whose ThrottledRequests
// the table alarm sums (ThrottledRequests is only reported per operation,
// and an alarm's metric math takes at most 10 metrics): every operation
// the state store's adapter issues, and the other writes.
var ThrottledOperations = []awsdynamodb.Operation{
	awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM,
	awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_QUERY, awsdynamodb.Operation_SCAN,
	awsdynamodb.Operation_BATCH_WRITE_ITEM, awsdynamodb.Operation_TRANSACT_WRITE_ITEMS,
}

// tableThrottleAlarms alarm on any DynamoDB throttling of the state table:
// throttled requests, and the read and write throttle events of the table
// and of each global secondary index (an index's events carry its
// GlobalSecondaryIndexName; the table's TableName dimension alone leaves
// them out). A throttled store write is a TransientError that is retried,
// so throttling shows here long before it shows in the queues.
func (st *Stack) tableThrottleAlarms(alarm func(id, desc string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) awscloudwatch.Alarm) {
	gt := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	sum := &awscloudwatch.MetricOptions{Statistic: s("Sum"), Period: mins(5)}
	ops := ThrottledOperations
	alarm("StateTableThrottledRequests", "requests to the state table throttled by DynamoDB",
		st.Table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{Operations: &ops, Period: mins(5)}), 0, gt)
	events := func(metric string, index string) awscloudwatch.IMetric {
		dims := map[string]*string{"TableName": st.Table.TableName()}
		if index != "" {
			dims["GlobalSecondaryIndexName"] = s(index)
		}
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: s("AWS/DynamoDB"), MetricName: s(metric), DimensionsMap: &dims, Statistic: sum.Statistic, Period: sum.Period})
	}
	for _, m := range []string{"WriteThrottleEvents", "ReadThrottleEvents"} {
		alarm("StateTable"+m, m+" on the state table", events(m, ""), 0, gt)
		for _, index := range st.tableIndexes {
			alarm("StateIndex"+alarmID(index)+m, m+" on the state table's index "+index, events(m, index), 0, gt)
		}
	}
}

// alarmID turns an index name (status-index) into a construct and alarm
// name part (StatusIndex).
func alarmID(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if r == '-' || r == '_' || r == '.' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
		} else {
			b.WriteRune(r)
		}
		up = false
	}
	return b.String()
}

// systemicErrors is the handlers' EMF Errors metric of the systemic and
// unknown tiers, summed over the states that invoke one function: the
// errors that mean the pipeline, not a file, is failing. DataErrors (a
// refused file, routed to remediation) and TransientErrors (retried) are
// left out.
func systemicErrors(id string, states []string) awscloudwatch.MathExpression {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for i, state := range states {
		for _, tier := range []fault.Tier{fault.TierSystemic, fault.TierUnknown} {
			key := fmt.Sprintf("%s_%d", tier, i)
			using[key] = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: s(emf.Namespace), MetricName: s(migration.MetricErrors),
				DimensionsMap: &map[string]*string{"State": s(state), migration.DimTier: s(string(tier))},
				Statistic:     s("Sum"), Period: mins(5),
			})
			terms = append(terms, "FILL("+key+", 0)")
		}
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: s(strings.Join(terms, " + ")), UsingMetrics: &using,
		Label: s(strings.ToLower(id) + " systemic + unknown errors"), Period: mins(5),
	})
}

// handlerStates maps each Lambda function a definition invokes
// (lambda:invoke's FunctionName, as substituted) to the names of the
// states that invoke it, which the handlers report as the State dimension
// of their metrics: the inlined states of the EXPRESS backfill carry their
// Map's label as a prefix.
func handlerStates(defs ...string) map[string][]string {
	out := map[string][]string{}
	var walk func(states map[string]any)
	walk = func(states map[string]any) {
		for _, name := range sortedKeys(states) {
			st, _ := states[name].(map[string]any)
			if params, _ := st["Parameters"].(map[string]any); params != nil && st["Resource"] == "arn:aws:states:::lambda:invoke" {
				if fn, _ := params["FunctionName"].(string); fn != "" && !slices.Contains(out[fn], name) {
					out[fn] = append(out[fn], name)
				}
			}
			for _, key := range []string{"ItemProcessor", "Iterator"} {
				if proc, _ := st[key].(map[string]any); proc != nil {
					inner, _ := proc["States"].(map[string]any)
					walk(inner)
				}
			}
			branches, _ := st["Branches"].([]any)
			for _, b := range branches {
				if bm, _ := b.(map[string]any); bm != nil {
					inner, _ := bm["States"].(map[string]any)
					walk(inner)
				}
			}
		}
	}
	for _, def := range defs {
		var doc map[string]any
		if json.Unmarshal([]byte(def), &doc) == nil {
			states, _ := doc["States"].(map[string]any)
			walk(states)
		}
	}
	return out
}

// fallbackMetric is one of the handlers' fallback-rate metrics
// (internal/migration: JobsEnded, JobsRouted, FallbackThreshold,
// RecoveryLatency) over 5 minutes.
func fallbackMetric(name, statistic string, dims map[string]*string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: s(emf.Namespace), MetricName: s(name), DimensionsMap: &dims,
		Statistic: s(statistic), Period: mins(5),
	})
}

// fallbackRate is fallback_rate = routed / jobs of one tier (and dataset
// type, when given) per 5 minutes: JobsRouted is only sent when a job is
// routed, so a period with none is 0.
func fallbackRate(tier, datasetType string) awscloudwatch.MathExpression {
	routedDims := map[string]*string{migration.DimTier: s(tier)}
	jobsDims := map[string]*string{}
	label := tier
	if datasetType != "" {
		routedDims[migration.DimDatasetType] = s(datasetType)
		jobsDims[migration.DimDatasetType] = s(datasetType)
		label += " " + datasetType
	}
	// Ids are unique per metric: a graph of several rates shares one id space.
	id := strings.ReplaceAll(label, " ", "_")
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: s(fmt.Sprintf("FILL(routed_%s, 0) / jobs_%s", id, id)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"routed_" + id: fallbackMetric(migration.MetricJobsRouted, "Sum", routedDims),
			"jobs_" + id:   fallbackMetric(migration.MetricJobsEnded, "Sum", jobsDims),
		},
		Label: s(label), Period: mins(5),
	})
}

// fallbackAlarms alarm when a tier's fallback rate stays above its
// threshold. The threshold is not fixed here: Promote and Classify report
// the one they were given with every ended job (FallbackThreshold, from the
// run-time policy), and the expression compares the rate with it, so a new
// threshold takes effect without a redeploy; the configured default stands
// in for a period without a reported one. The expression is a breach flag
// (1 or 0), alarmed when it is 1 for FallbackAlarmPeriods periods in a row,
// and only periods where FallbackMinJobs jobs ended count (three failures
// of five files is not a trend).
func (st *Stack) fallbackAlarms(action awscloudwatchactions.SnsAction) {
	c := st.Config
	for _, a := range []struct {
		id, tier, desc string
		def            float64
	}{
		{"FallbackDataSpecificRate", string(fault.TierDataSpecific), "data-specific fallback rate (JobsRouted / JobsEnded) above its threshold: upstream corruption or schema drift; investigate the source before changing thresholds", c.FallbackThresholds.DataSpecificRate},
		{"FallbackTransientRate", string(fault.TierTransient), "transient fallback rate (retries exhausted, JobsRouted / JobsEnded) above its threshold: add capacity or raise back-off ceilings rather than lowering the retry ceiling", c.FallbackThresholds.TransientRate},
	} {
		tierDims := map[string]*string{migration.DimTier: s(a.tier)}
		breach := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: s(fmt.Sprintf("IF(jobs >= %d, IF(FILL(routed, 0) / jobs > FILL(threshold, %g), 1, 0), 0)", c.FallbackMinJobs, a.def)),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"routed":    fallbackMetric(migration.MetricJobsRouted, "Sum", tierDims),
				"jobs":      fallbackMetric(migration.MetricJobsEnded, "Sum", map[string]*string{}),
				"threshold": fallbackMetric(migration.MetricFallbackThreshold, "Maximum", tierDims),
			},
			Label: s(a.tier + " fallback rate above threshold (1) or not (0)"), Period: mins(5),
		})
		alarm := awscloudwatch.NewAlarm(st.Stack, s(a.id), &awscloudwatch.AlarmProps{
			AlarmName:          s(c.NamePrefix + "-" + a.id),
			AlarmDescription:   s(fmt.Sprintf("%s, for %d consecutive 5-minute periods with at least %d jobs ended (default threshold %g)", a.desc, c.FallbackAlarmPeriods, c.FallbackMinJobs, a.def)),
			Metric:             breach,
			Threshold:          n(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  n(float64(c.FallbackAlarmPeriods)),
			DatapointsToAlarm:  n(float64(c.FallbackAlarmPeriods)),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		alarm.AddAlarmAction(action)
	}
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
