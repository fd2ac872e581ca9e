package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
)

// Quotas are the service limits that bound how fast a run can go. The
// defaults are AWS's published figures for the large Regions (us-east-1,
// us-west-2, eu-west-1); QuotaPresets holds the other Regions' where AWS
// documents lower ones, and `geomigrate plan --quotas FILE` overrides any
// field (an account's raised quotas, a new account's lower ones).
type Quotas struct {
	Region string `json:"region"`
	// Step Functions Standard throttles StartExecution and state
	// transitions as token buckets: a burst of Bucket, then Refill per
	// second.
	StartExecutionBucket float64 `json:"start_execution_bucket"`
	StartExecutionRefill float64 `json:"start_execution_refill_per_s"`
	TransitionBucket     float64 `json:"state_transition_bucket"`
	TransitionRefill     float64 `json:"state_transition_refill_per_s"`
	// LambdaScalePer10s is how many execution environments a function
	// may add every 10 seconds (the concurrency itself is
	// Settings.Concurrency, the --concurrency flag).
	LambdaScalePer10s float64 `json:"lambda_scale_per_10s"`
	// S3 request rates per partitioned prefix, and the number of prefixes
	// the run's requests spread over (1: all keys under one prefix, the
	// conservative reading; S3 partitions busy prefixes over time).
	S3PutPerPrefix float64 `json:"s3_put_copy_post_delete_per_prefix_per_s"`
	S3GetPerPrefix float64 `json:"s3_get_head_per_prefix_per_s"`
	S3Prefixes     int     `json:"s3_prefixes"`
	// DynamoDB: a partition serves at most PartitionWCU write units a
	// second; an on-demand table TableWCU and TableRCU. IndexPartitions is
	// how many partition key values the status index's writes spread over
	// (StateIndexShards: the index is write-sharded, docs/decisions/0094).
	DynamoDBPartitionWCU float64 `json:"dynamodb_partition_wcu_per_s"`
	DynamoDBTableWCU     float64 `json:"dynamodb_table_wcu_per_s"`
	DynamoDBTableRCU     float64 `json:"dynamodb_table_rcu_per_s"`
	IndexPartitions      int     `json:"index_partitions"`
	// Fargate task launches (the large-object route's container tasks):
	// a burst, then a sustained rate.
	FargateLaunchBurst  float64 `json:"fargate_launch_burst"`
	FargateLaunchPerSec float64 `json:"fargate_launch_per_s"`

	Sources []string `json:"sources,omitempty"`
}

// DefaultQuotas are the large Regions' published defaults.
func DefaultQuotas() Quotas {
	return Quotas{
		Region:               "us-east-1, us-west-2, eu-west-1",
		StartExecutionBucket: 1300, StartExecutionRefill: 300,
		TransitionBucket: 5000, TransitionRefill: 1500,
		LambdaScalePer10s: 1000,
		S3PutPerPrefix:    3500, S3GetPerPrefix: 5500, S3Prefixes: 1,
		DynamoDBPartitionWCU: 1000, DynamoDBTableWCU: 40000, DynamoDBTableRCU: 40000, IndexPartitions: StateIndexShards,
		FargateLaunchBurst: 100, FargateLaunchPerSec: 20,
		// Each figure checked against the page named (docs/decisions/0096,
		// Sources): AWS may raise them; an account's own are in Service Quotas.
		Sources: []string{
			"Step Functions (Standard) StartExecution 1,300 / 300 per s and StateTransition 5,000 / 1,500 per s token buckets in us-east-1, us-west-2, eu-west-1 (800 / 150 and 800 / 500 elsewhere): https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html (new accounts have lower state transition quotas)",
			"Lambda 1,000 concurrent executions per Region and 1,000 execution environments every 10 s per function: https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html",
			"S3 at least 3,500 PUT/COPY/POST/DELETE or 5,500 GET/HEAD per s per partitioned prefix: https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html",
			"DynamoDB 1,000 write and 3,000 read units per s per partition: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/burst-adaptive-capacity.html, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html; on-demand 40,000 read and write units per s per table by default: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode-max-throughput.html",
			"Fargate on-demand task launches, a bucket of 100 refilled at 20 per s: https://docs.aws.amazon.com/AmazonECS/latest/developerguide/throttling.html",
		},
	}
}

// QuotaPresets are Regions whose Step Functions buckets AWS documents as
// smaller than the large Regions'; every other figure is the default's.
func QuotaPresets() map[string]Quotas {
	other := DefaultQuotas()
	other.Region = "other"
	other.StartExecutionBucket, other.StartExecutionRefill = 800, 150
	other.TransitionBucket, other.TransitionRefill = 800, 500
	return map[string]Quotas{"large": DefaultQuotas(), "other": other}
}

// OverrideQuotas reads a JSON document of Quotas fields over base.
func OverrideQuotas(r io.Reader, base Quotas) (Quotas, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	q := base
	if err := dec.Decode(&q); err != nil {
		return Quotas{}, fmt.Errorf("cost.OverrideQuotas: %w", err)
	}
	if err := q.Validate(); err != nil {
		return Quotas{}, fmt.Errorf("cost.OverrideQuotas: %w", err)
	}
	return q, nil
}

// Validate refuses quotas the arithmetic cannot divide by.
func (q Quotas) Validate() error {
	for name, v := range map[string]float64{
		"start_execution_refill_per_s": q.StartExecutionRefill, "state_transition_refill_per_s": q.TransitionRefill,
		"lambda_scale_per_10s": q.LambdaScalePer10s, "s3_put_copy_post_delete_per_prefix_per_s": q.S3PutPerPrefix,
		"s3_get_head_per_prefix_per_s": q.S3GetPerPrefix, "s3_prefixes": float64(q.S3Prefixes),
		"dynamodb_partition_wcu_per_s": q.DynamoDBPartitionWCU, "dynamodb_table_wcu_per_s": q.DynamoDBTableWCU,
		"dynamodb_table_rcu_per_s": q.DynamoDBTableRCU, "index_partitions": float64(q.IndexPartitions),
		"fargate_launch_per_s": q.FargateLaunchPerSec,
	} {
		if v <= 0 {
			return fmt.Errorf("quota %s %g: want more than 0", name, v)
		}
	}
	if q.StartExecutionBucket < 0 || q.TransitionBucket < 0 || q.FargateLaunchBurst < 0 {
		return fmt.Errorf("quota buckets must not be negative: %+v", q)
	}
	return nil
}

// BoundLongestExecution names the bound no quota sets: one execution's
// own duration.
const BoundLongestExecution = "longest execution"

// Bound is the shortest a run can take under one limit.
type Bound struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Demand and Rate are what the limit divides: the run's total, and
	// the rate the limit allows.
	Demand float64 `json:"demand"`
	Rate   float64 `json:"rate_per_s"`
	Raise  string  `json:"raise"`
}

// bucketSeconds is how long n requests take through a token bucket.
func bucketSeconds(n, bucket, refill float64) float64 {
	return math.Max(0, n-bucket) / refill
}

// Bounds are the run's duration under each limit, longest first: the
// first binds. Executions run at most min(Lambda concurrency, the
// backfill's MaxConcurrency) at once, each for its tasks' sum; the Step
// Functions buckets pass the executions and transitions (the backfill's
// own included); S3 and DynamoDB pass the requests and units; Lambda's
// scaling rate is the ramp to the concurrency used.
func Bounds(m Model, e Estimate) []Bound {
	s, q := m.Settings, m.Quotas
	bf := BackfillCost(m, e.Executions)
	transitions := float64(e.Transitions + bf.Transitions)
	running := math.Min(float64(min(s.Concurrency, s.MaxConcurrency)), float64(e.Executions))
	b := []Bound{
		{Name: "backfill MaxConcurrency", Demand: e.LambdaSeconds, Rate: float64(s.MaxConcurrency),
			Seconds: e.LambdaSeconds / float64(s.MaxConcurrency), Raise: "the policy's backfill.max_concurrency (geomigrate policy set)"},
		{Name: "Lambda concurrency", Demand: e.LambdaSeconds, Rate: float64(s.Concurrency),
			Seconds: e.LambdaSeconds / float64(s.Concurrency), Raise: "the account's Lambda concurrent executions quota (Service Quotas)"},
		{Name: "Lambda scaling rate", Demand: running, Rate: q.LambdaScalePer10s / 10,
			Seconds: bucketSeconds(running, q.LambdaScalePer10s, q.LambdaScalePer10s/10), Raise: "nothing to raise: the ramp to the concurrency used"},
		{Name: "Step Functions StartExecution", Demand: float64(e.Executions), Rate: q.StartExecutionRefill,
			Seconds: bucketSeconds(float64(e.Executions), q.StartExecutionBucket, q.StartExecutionRefill), Raise: "the StartExecution refill rate (Service Quotas, Step Functions)"},
		{Name: "Step Functions state transitions", Demand: transitions, Rate: q.TransitionRefill,
			Seconds: bucketSeconds(transitions, q.TransitionBucket, q.TransitionRefill), Raise: "the StateTransition refill rate (Service Quotas, Step Functions)"},
		{Name: "S3 PUT/COPY/POST/DELETE per prefix", Demand: float64(e.S3PutCopyList + e.S3Delete), Rate: q.S3PutPerPrefix * float64(q.S3Prefixes),
			Seconds: float64(e.S3PutCopyList+e.S3Delete) / (q.S3PutPerPrefix * float64(q.S3Prefixes)), Raise: "spread keys over more prefixes (s3_prefixes)"},
		{Name: "S3 GET/HEAD per prefix", Demand: float64(e.S3GetHead), Rate: q.S3GetPerPrefix * float64(q.S3Prefixes),
			Seconds: float64(e.S3GetHead) / (q.S3GetPerPrefix * float64(q.S3Prefixes)), Raise: "spread keys over more prefixes (s3_prefixes)"},
		{Name: "DynamoDB table write units", Demand: float64(e.DynamoDBWriteUnits), Rate: q.DynamoDBTableWCU,
			Seconds: float64(e.DynamoDBWriteUnits) / q.DynamoDBTableWCU, Raise: "the table's on-demand maximum write throughput (Service Quotas, DynamoDB)"},
		{Name: "DynamoDB table read units", Demand: float64(e.DynamoDBReadUnits), Rate: q.DynamoDBTableRCU,
			Seconds: float64(e.DynamoDBReadUnits) / q.DynamoDBTableRCU, Raise: "the table's on-demand maximum read throughput (Service Quotas, DynamoDB)"},
		{Name: "DynamoDB index partition writes", Demand: float64(e.IndexWrites), Rate: q.DynamoDBPartitionWCU * float64(q.IndexPartitions),
			Seconds: float64(e.IndexWrites) / (q.DynamoDBPartitionWCU * float64(q.IndexPartitions)), Raise: "nothing to raise (a hard per-partition limit): shard the index key (index_partitions)"},
		{Name: "Fargate task launches", Demand: float64(e.ContainerTasks), Rate: q.FargateLaunchPerSec,
			Seconds: bucketSeconds(float64(e.ContainerTasks), q.FargateLaunchBurst, q.FargateLaunchPerSec), Raise: "the Fargate launch rate (Service Quotas, ECS)"},
		{Name: BoundLongestExecution, Demand: e.LongestExecution, Rate: 1, Seconds: e.LongestExecution, Raise: "nothing: one file's own time"},
	}
	sort.SliceStable(b, func(i, j int) bool { return b[i].Seconds > b[j].Seconds })
	return b
}
