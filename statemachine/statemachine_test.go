package statemachine

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// errorTypeName is how aws-lambda-go names a returned error (errorType):
// the Go type name with the pointer elided. Step Functions matches
// ErrorEquals against exactly this string.
func errorTypeName(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// goErrors ties each custom ErrorEquals name to the Go type that raises it.
var goErrors = map[string]error{
	"TransientError": &fault.TransientError{},
	"DataError":      &fault.DataError{},
	"SystemicError":  &fault.SystemicError{},
	// An open circuit breaker: caught into the WaitForBreaker loop.
	"BreakerOpenError": &fault.BreakerOpenError{},
}

// serviceErrors are names Step Functions or the Lambda service raise.
var serviceErrors = []string{
	"States.ALL", "States.TaskFailed", "States.Timeout", "States.ItemReaderFailed",
	"StepFunctions.ExecutionLimitExceededException", "StepFunctions.SdkClientException", "StepFunctions.AWSStepFunctionsException",
	"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
	"Lambda.TooManyRequestsException", "Lambda.ClientExecutionTimeoutException",
	// ecs:runTask.sync: ECS API and capacity errors (a RunTask answer with
	// Failures fails the task as AmazonECS.Unknown), and the SDK
	// integration's S3 errors (ServiceName.ErrorName).
	"ECS.AmazonECSException", "ECS.SdkClientException", "AmazonECS.Unknown",
	// A RunTask refused while ECS throttles the account's task launches
	// (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html).
	"ECS.InvalidParameterException",
	"S3.SdkClientException", "S3.S3Exception",
	// The backfill's policy read (aws-sdk:ssm:getParameter): GetParameter's
	// InternalServerError and the integration's generic service and client
	// errors, as ServiceName.ErrorName with the Exception suffix
	// (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).
	"Ssm.InternalServerErrorException", "Ssm.SsmException", "Ssm.SdkClientException",
}

func parsed(t *testing.T) *asl.StateMachine { return parse(t, "migrate.asl.json", Migrate) }

// expanded is a definition with its value placeholders expanded the way
// infra and the local executor expand them.
func expanded(t *testing.T, name string, def []byte) []byte {
	t.Helper()
	var err error
	switch name {
	case "migrate.asl.json":
		def, err = ExpandMigrate(def, DefaultTaskTimeouts)
	case "backfill.asl.json":
		def, err = ExpandBackfill(def, []string{"incoming/", "legacy/gis/"})
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return def
}

func parse(t *testing.T, name string, def []byte) *asl.StateMachine {
	t.Helper()
	def = expanded(t, name, def)
	vars := map[string]string{}
	for _, p := range asl.Placeholders(def) {
		vars[p] = "arn:aws:lambda:local:000000000000:function:" + p
	}
	def, err := asl.Substitute(def, vars)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		t.Fatalf("%s does not parse strictly: %v", name, err)
	}
	return sm
}

// definitions are every state machine the project deploys.
func definitions(t *testing.T) map[string]*asl.StateMachine {
	return map[string]*asl.StateMachine{
		"migrate.asl.json":  parse(t, "migrate.asl.json", Migrate),
		"backfill.asl.json": parse(t, "backfill.asl.json", Backfill),
		// The EXPRESS backfill's state after each Map.
		"close-map-run.asl.json": parse(t, "close-map-run.asl.json", CloseMapRun),
	}
}

func TestPlaceholdersAreTheDocumentedOnes(t *testing.T) {
	want := []string{ClassifyFunctionArn, ConvertFunctionArn, DeadLetterQueueURL, HashCheckFunctionArn, PromoteFunctionArn, RemediationQueueURL,
		ConvertClusterArn, ConvertTaskDefinitionArn, ConvertSubnetIDs, ConvertSecurityGroupID,
		HashCheckTimeoutSeconds, ConvertTimeoutSeconds, PromoteTimeoutSeconds, ClassifyTimeoutSeconds, ContainerTaskTimeoutSeconds}
	slices.Sort(want)
	if got := asl.Placeholders(Migrate); !slices.Equal(got, want) {
		t.Fatalf("placeholders = %v, want %v", got, want)
	}
}

func TestErrorEqualsNamesAreGoTypes(t *testing.T) {
	for name, err := range goErrors {
		if got := errorTypeName(err); got != name {
			t.Errorf("Go type for %q reports errorType %q", name, got)
		}
	}
	seen := map[string]bool{}
	for file, sm := range definitions(t) {
		sm.Walk(func(path []string, name string, st *asl.State) {
			var names []string
			for _, r := range st.Retry {
				names = append(names, r.ErrorEquals...)
			}
			for _, c := range st.Catch {
				names = append(names, c.ErrorEquals...)
			}
			for _, n := range names {
				seen[n] = true
				if _, ok := goErrors[n]; !ok && !slices.Contains(serviceErrors, n) {
					t.Errorf("%s state %s: ErrorEquals %q is neither a Go error type nor a service error", file, name, n)
				}
			}
		})
	}
	for name := range goErrors {
		if name != "DataError" && name != "SystemicError" && !seen[name] {
			t.Errorf("Go error type %s is not referenced by the state machine", name)
		}
	}
}

func TestEveryTaskHasRetryAndCatch(t *testing.T) {
	for file, sm := range definitions(t) {
		tasks := 0
		sm.Walk(func(path []string, name string, st *asl.State) {
			// A Distributed Map is a task too: it reads, runs and writes.
			if st.Type != "Task" && !(st.Type == "Map" && st.ItemReader != nil) {
				return
			}
			tasks++
			if len(st.Retry) == 0 {
				t.Errorf("%s: %s %s has no Retry", file, st.Type, name)
			}
			if len(st.Catch) == 0 {
				t.Errorf("%s: %s %s has no Catch", file, st.Type, name)
			}
		})
		if tasks == 0 {
			t.Errorf("%s: no tasks found", file)
		}
	}
}

// TestRetryPolicy pins the retry numbers (TransientError: 4 retries from
// 4 s, doubling, capped at 60 s, FULL jitter; docs/decisions/0002) and keeps
// data and systemic errors out of every retrier.
func TestRetryPolicy(t *testing.T) {
	parsed(t).Walk(func(path []string, name string, st *asl.State) {
		for _, r := range st.Retry {
			for _, n := range r.ErrorEquals {
				if n == "DataError" || n == "SystemicError" || n == "States.ALL" {
					t.Errorf("state %s retries %s", name, n)
				}
			}
			if !slices.Contains(r.ErrorEquals, "TransientError") {
				continue
			}
			if r.IntervalSeconds != 4 || r.BackoffRate != 2 || r.MaxDelaySeconds != 60 || r.JitterStrategy != "FULL" || r.MaxAttempts != 4 {
				t.Errorf("state %s TransientError retrier = %+v, want 4 s, x2, cap 60 s, FULL, 4 retries", name, r)
			}
		}
	})
}

func TestLambdaTasksReceiveTheRetryCount(t *testing.T) {
	var raw struct {
		States map[string]struct {
			Resource   string
			Parameters struct {
				Payload map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(Migrate, &raw); err != nil {
		t.Fatal(err)
	}
	for name, st := range raw.States {
		if st.Resource != "arn:aws:states:::lambda:invoke" {
			continue
		}
		ctx := string(st.Parameters.Payload["context"])
		if !strings.Contains(ctx, `"$$.State.RetryCount"`) || !strings.Contains(ctx, `"$$.Execution.Id"`) {
			t.Errorf("task %s does not pass execution and retry count to its handler: %s", name, ctx)
		}
	}
}

func TestStateMachineHasAJobDeadline(t *testing.T) {
	if sm := parsed(t); sm.TimeoutSeconds <= 0 {
		t.Fatal("no state-machine TimeoutSeconds")
	}
}

// TestBreakerOpenIsWaitedOutNotRetried: every task that reaches a bucket
// catches BreakerOpenError first (before States.ALL sends the job to
// Classify and a queue) into the wait loop back to HashCheck, and no
// retrier spends attempts on it.
func TestBreakerOpenIsWaitedOutNotRetried(t *testing.T) {
	sm := parsed(t)
	for _, name := range []string{"HashCheck", "Convert", "ConvertInContainer", "Promote"} {
		st := sm.States[name]
		if len(st.Catch) == 0 || !slices.Equal(st.Catch[0].ErrorEquals, []string{"BreakerOpenError"}) || st.Catch[0].Next != "ReadBreakerCause" {
			t.Errorf("%s: first catcher %+v, want BreakerOpenError → ReadBreakerCause", name, st.Catch)
		}
	}
	sm.Walk(func(path []string, name string, st *asl.State) {
		for _, r := range st.Retry {
			if slices.Contains(r.ErrorEquals, "BreakerOpenError") {
				t.Errorf("state %s retries BreakerOpenError", name)
			}
		}
	})
	wait := sm.States["WaitForBreaker"]
	if wait == nil || wait.Type != "Wait" || wait.SecondsPath == "" || wait.Next != "HashCheck" {
		t.Fatalf("WaitForBreaker = %+v, want a Wait on SecondsPath back to HashCheck", wait)
	}
	if sm.TimeoutSeconds <= 0 {
		t.Fatal("the wait loop needs the job deadline (TimeoutSeconds) to end")
	}
}

// TestContainerResultKeyIsWhatPromoteRemoves: the result object's key is
// built in the definition; Promote and the routed jobs' cleanup find it by
// migration.ContainerResultPrefix.
func TestContainerResultKeyIsWhatPromoteRemoves(t *testing.T) {
	want := "States.Format('{}" + migration.ContainerResultPrefix + "{}.json', $.job.staging_prefix, States.UUID())"
	if !strings.Contains(string(Migrate), want) {
		t.Fatalf("migrate.asl.json does not build the result key as %s", want)
	}
}
