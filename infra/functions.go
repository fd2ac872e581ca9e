package main

import (
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"

	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/policy"
)

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
	// Quarantine bundles go to the operations bucket: the destination
	// holds only outputs and their STAC metadata.
	settings.QuarantineBucket, settings.QuarantinePrefix = *st.Ops.BucketName(), QuarantinePrefix
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
	bundleStaging := st.Ops.ArnForObjects(s(c.StagingPrefix + "quarantine/*"))
	bundles := st.Ops.ArnForObjects(s(QuarantinePrefix + "*"))
	quarantineStmts := func() []awsiam.PolicyStatement {
		return []awsiam.PolicyStatement{
			s3Statement("ReadRoutedSource", get, st.sourceObjects()...),
			s3Statement("ListRoutedSourceSidecars", list, src.BucketArn()),
			s3Statement("StageQuarantineBundle", []string{"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"}, bundleStaging),
			s3Statement("WriteQuarantineBundle", []string{"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"}, bundles),
		}
	}
	bundleStagingRe := `^Resource::<OpsBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.StagingPrefix+"quarantine/") + `\*$`
	bundlesRe := `^Resource::<OpsBucket[A-Z0-9]+\.Arn>/` + regexpQuote(QuarantinePrefix) + `\*$`
	srcRe := `^Resource::<SourceBucket[A-Z0-9]+\.Arn>/.*\*$`
	stagingRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.StagingPrefix) + `\*$`
	finalRe := `^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/` + regexpQuote(c.DestPrefix) + `\*$`
	// The final keys' grant is the destination prefix's. An empty prefix
	// makes it the whole bucket: what no final key can be (staging) is then
	// denied to HashCheck explicitly, and the synth warns
	// (docs/decisions/0103). The quarantine bundles live in the ops bucket,
	// outside every destination grant.
	var hashcheckDeny []awsiam.PolicyStatement
	if c.DestPrefix == "" {
		awscdk.Annotations_Of(st.Stack).AddWarningV2(s("geomigrate:emptyDestPrefix"),
			s("destPrefix is empty: hashcheck and promote reach every key of the destination bucket but staging (denied to hashcheck explicitly); set destPrefix (e.g. out/) to scope them to the outputs"), nil)
		hashcheckDeny = []awsiam.PolicyStatement{s3Deny("NoFinalKeyInStaging", get, staging)}
	}
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
			}, append(hashcheckDeny, st.recipeStmts()...)...),
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
				// The EXPRESS backfill hands it each Map Run's result files: Express
				// children send no status-change events.
				s3Statement("ReadBackfillResults", get, st.Ops.ArnForObjects(s(BackfillResultsPrefix+"*"))),
			}, quarantineStmts()...),
			iam5: []string{stagingRe, srcRe, bundleStagingRe, bundlesRe, `^Resource::<OpsBucket[A-Z0-9]+\.Arn>/` + regexpQuote(BackfillResultsPrefix) + `\*$`}},
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
