package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

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
			{Id: s("expire-inventory"), Prefix: s("inventory/"), Expiration: days(30)},
			// Quarantine bundles are staged here before they are copied under
			// QuarantinePrefix (kept: an operator deletes a bundle once dealt with).
			{Id: s("expire-quarantine-staging"), Prefix: s(c.StagingPrefix + "quarantine/"), Expiration: days(c.StagingExpirationDays)}},
	})

	var inventories *[]*awss3.Inventory
	if c.EnableInventory {
		inventories = &[]*awss3.Inventory{{
			InventoryId: s("geomigrate-backfill"),
			Destination: &awss3.InventoryDestination{Bucket: st.Ops, Prefix: s("inventory")},
			Frequency:   awss3.InventoryFrequency_WEEKLY,
			Format:      awss3.InventoryFormat_CSV,
			Enabled:     jsii.Bool(true),
			// Current versions only: a backfill migrates what a key holds
			// now, never a non-current version or a delete marker
			// (docs/decisions/0100). CDK's default lists all versions.
			IncludeObjectVersions: awss3.InventoryObjectVersion_CURRENT,
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
