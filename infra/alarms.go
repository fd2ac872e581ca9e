package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/signals"
)

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
