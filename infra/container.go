package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/statemachine"
)

// The large-object path on ECS Fargate (docs/large-objects.md): the migrate state machine's
// ConvertInContainer runs the convert container (cmd/geomigrate-image: the layer's /opt and the
// geomigrate CLI, entry point `geomigrate task convert`) with
// ecs:runTask.sync, arm64, its ephemeral storage sized per job by HashCheck (21 to 200 GiB).

// containerImage is the convert container's image: the registry image given as context
// convertImage (pushed by `make image-push`, built without Docker from the layer's /opt and the
// CLI: cmd/geomigrate-image), or, with placeholderAssets, a stand-in build context of one
// Dockerfile that cannot build (synth and the tests need no image). There is no Docker build at
// deploy: `cdk deploy` needs no Docker engine.
func (st *Stack) containerImage(assets *Assets) (awsecs.ContainerImage, error) {
	c := st.Config
	if c.ConvertImage != "" {
		return awsecs.ContainerImage_FromRegistry(s(c.ConvertImage), nil), nil
	}
	if assets.ContainerContext != "" {
		return awsecs.ContainerImage_FromAsset(s(assets.ContainerContext), &awsecs.AssetImageProps{
			Platform: awsecrassets.Platform_LINUX_ARM64(),
		}), nil
	}
	return nil, fmt.Errorf("convert container: no image: push one with `make image-push IMAGE=<repository>:<tag>` " +
		"(builds it from build/gdal-layer-arm64 and the CLI, no Docker) and pass -c convertImage=<that reference>")
}

// container builds the network, cluster, task definition, roles and log group of the convert
// container, and returns the migrate definition's values for its placeholders.
func (st *Stack) container(assets *Assets, settings config.Lambda, gdalEnv map[string]string) (map[string]string, error) {
	c := st.Config
	stack := st.Stack

	// Public subnets and no NAT gateway: the task pulls its image and writes its logs through
	// the internet gateway with a public address (AssignPublicIp in the definition), S3 and
	// DynamoDB are reached through gateway endpoints; nothing can connect in.
	flowLogs := awslogs.NewLogGroup(stack, s("ConvertVpcFlowLogs"), &awslogs.LogGroupProps{
		Retention: retention(c.LogRetentionDays), RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	vpc := awsec2.NewVpc(stack, s("ConvertVpc"), &awsec2.VpcProps{
		MaxAzs:      n(2),
		NatGateways: n(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: s("convert"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: n(24), MapPublicIpOnLaunch: jsii.Bool(false),
		}},
		GatewayEndpoints: &map[string]*awsec2.GatewayVpcEndpointOptions{
			"S3":       {Service: awsec2.GatewayVpcEndpointAwsService_S3()},
			"DynamoDB": {Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB()},
		},
		FlowLogs: &map[string]*awsec2.FlowLogOptions{
			"Rejected": {Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(flowLogs, nil), TrafficType: awsec2.FlowLogTrafficType_REJECT},
		},
		// The default security group is used by nothing (the tasks have their own); restricting
		// it would add a custom resource and its Lambda function.
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	sg := awsec2.NewSecurityGroup(stack, s("ConvertTaskSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc: vpc, Description: s("geomigrate convert tasks: no inbound; outbound to S3, DynamoDB, ECR and CloudWatch Logs"),
		AllowAllOutbound: jsii.Bool(true),
	})
	st.ConvertCluster = awsecs.NewCluster(stack, s("ConvertCluster"), &awsecs.ClusterProps{
		Vpc: vpc, ContainerInsightsV2: awsecs.ContainerInsights_ENABLED,
	})

	logs := awslogs.NewLogGroup(stack, s("ConvertTaskLogs"), &awslogs.LogGroupProps{
		Retention: retention(c.LogRetentionDays), RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// The task role: what the Convert Lambda's role allows, and no more. It reads the source
	// prefixes, writes under staging (the outputs and the result object), and keeps the job
	// record; it cannot read or write a final key, delete anything, or send to a queue.
	src, dst := st.Source, st.Dest
	taskRole := awsiam.NewRole(stack, s("ConvertTaskRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(s("ecs-tasks.amazonaws.com"), nil),
		Description: s("geomigrate convert container task: reads the source, writes staging and its result object, keeps the job record"),
	})
	for _, stmt := range []awsiam.PolicyStatement{
		s3Statement("ReadSourcePrefixes", []string{"s3:GetObject"}, st.sourceObjects()...),
		s3Statement("ListSourceFor404", []string{"s3:ListBucket"}, src.BucketArn()),
		s3Statement("WriteStagingAndResult", []string{"s3:PutObject", "s3:AbortMultipartUpload"}, dst.ArnForObjects(s(c.StagingPrefix+"*"))),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       s("StateTableReadWrite"),
			Actions:   strs("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"),
			Resources: arns(st.Table.TableArn()),
		}),
	} {
		taskRole.AddToPrincipalPolicy(stmt)
	}
	// The execution role: ECS pulls the image and writes the container's logs with it (CDK
	// grants the image repository's pull and the log group's writes).
	execRole := awsiam.NewRole(stack, s("ConvertTaskExecutionRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(s("ecs-tasks.amazonaws.com"), nil),
		Description: s("geomigrate convert container task: ECS pulls the image and writes the logs"),
	})
	st.ConvertTask = awsecs.NewFargateTaskDefinition(stack, s("ConvertTaskDefinition"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            n(float64(c.ConvertTaskCPU)),
		MemoryLimitMiB: n(float64(c.ConvertTaskMemoryMiB)),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture: awsecs.CpuArchitecture_ARM64(), OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		// The minimum; each run asks for its job's size (Overrides.EphemeralStorage).
		EphemeralStorageGiB: n(migration.MinEphemeralGiB),
		TaskRole:            taskRole,
		ExecutionRole:       execRole,
	})
	image, err := st.containerImage(assets)
	if err != nil {
		return nil, err
	}
	// The Convert Lambda's settings and GDAL environment, with GDAL's cache sized to the task.
	env := map[string]*string{}
	for k, v := range settings.Environment() {
		env[k] = s(v)
	}
	for k, v := range gdalEnv {
		env[k] = s(v)
	}
	env["GDAL_CACHEMAX"] = s(itoa(c.ConvertTaskMemoryMiB / 4))
	st.ConvertTask.AddContainer(s(statemachine.ConvertContainerName), &awsecs.ContainerDefinitionOptions{
		ContainerName: s(statemachine.ConvertContainerName),
		Image:         image,
		Essential:     jsii.Bool(true),
		Environment:   &env,
		Logging:       awsecs.LogDrivers_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: logs, StreamPrefix: s("convert")}),
	})

	suppressIAM5(taskRole, "object-level S3 actions need an object ARN pattern; each pattern is scoped to one configured bucket prefix (convert container task)",
		`^Resource::<SourceBucket[A-Z0-9]+\.Arn>/.*\*$`,
		`^Resource::<DestinationBucket[A-Z0-9]+\.Arn>/`+regexpQuote(c.StagingPrefix)+`\*$`)
	suppressIAM5(execRole, "ecr:GetAuthorizationToken has no resource-level permissions (added by CDK for the image pull)", `^Resource::\*$`)
	suppress(st.ConvertTask, true, [2]string{"AwsSolutions-ECS2",
		"the environment holds the same non-secret settings as the Convert Lambda's (internal/config: bucket and table names, prefixes, limits, GDAL options); no secret is passed"})

	subnets := vpc.SelectSubnets(&awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PUBLIC}).SubnetIds
	return map[string]string{
		statemachine.ConvertClusterArn:        *st.ConvertCluster.ClusterArn(),
		statemachine.ConvertTaskDefinitionArn: *st.ConvertTask.TaskDefinitionArn(),
		statemachine.ConvertSubnetIDs:         *awscdk.Fn_Join(s(","), subnets),
		statemachine.ConvertSecurityGroupID:   *sg.SecurityGroupId(),
	}, nil
}

// containerStatements are what the migrate state machine needs for ConvertInContainer
// (AWS Step Functions Developer Guide, "IAM policies for Amazon ECS/AWS Fargate", Run a Job
// (.sync), static resources): ecs:RunTask on the task definition; ecs:StopTask and
// ecs:DescribeTasks on the cluster's tasks (the task ID is not known before it runs);
// events:PutTargets/PutRule/DescribeRule on the managed rule StepFunctionsGetEventsForECSTaskRule
// through which .sync learns the task stopped; iam:PassRole on the task and execution roles,
// to ECS tasks only; and s3:GetObject on the result objects under staging (ReadConvertResult).
func (st *Stack) containerStatements() []awsiam.PolicyStatement {
	c := st.Config
	stack := st.Stack
	clusterTasks := stack.FormatArn(&awscdk.ArnComponents{Service: s("ecs"), Resource: s("task"),
		ResourceName: s(*st.ConvertCluster.ClusterName() + "/*"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
	ecsRule := stack.FormatArn(&awscdk.ArnComponents{Service: s("events"), Resource: s("rule"),
		ResourceName: s("StepFunctionsGetEventsForECSTaskRule"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
	stmt := func(sid string, actions []string, res []*string, cond map[string]interface{}) awsiam.PolicyStatement {
		p := &awsiam.PolicyStatementProps{Sid: s(sid), Actions: strs(actions...), Resources: &res}
		if cond != nil {
			p.Conditions = &cond
		}
		return awsiam.NewPolicyStatement(p)
	}
	return []awsiam.PolicyStatement{
		stmt("RunConvertTask", []string{"ecs:RunTask"}, []*string{st.ConvertTask.TaskDefinitionArn()},
			map[string]interface{}{"ArnEquals": map[string]interface{}{"ecs:cluster": st.ConvertCluster.ClusterArn()}}),
		stmt("WatchConvertTasks", []string{"ecs:StopTask", "ecs:DescribeTasks"}, []*string{clusterTasks}, nil),
		stmt("ConvertTaskCompletionEvents", []string{"events:PutTargets", "events:PutRule", "events:DescribeRule"}, []*string{ecsRule}, nil),
		stmt("PassConvertTaskRoles", []string{"iam:PassRole"}, []*string{st.ConvertTask.TaskRole().RoleArn(), st.ConvertTask.ExecutionRole().RoleArn()},
			map[string]interface{}{"StringEquals": map[string]interface{}{"iam:PassedToService": "ecs-tasks.amazonaws.com"}}),
		stmt("ReadConvertResults", []string{"s3:GetObject"}, []*string{st.Dest.ArnForObjects(s(c.StagingPrefix + "*/" + migration.ContainerResultPrefix + "*"))}, nil),
	}
}

// placeholderContainerContext writes a stand-in build context: one Dockerfile that fails to
// build, so a template made with placeholderAssets can never publish a working image.
func (a *Assets) placeholderContainerContext() (string, error) {
	t, err := a.tmpDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(t, "convert-container")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	df := "# geomigrate placeholder: the convert container image is pushed by make image-push and named with -c convertImage\nFROM scratch\nRUN false\n"
	return d, os.WriteFile(filepath.Join(d, "Dockerfile"), []byte(df), 0o644)
}
