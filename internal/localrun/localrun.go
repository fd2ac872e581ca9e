// Package localrun runs the migrate state machine on one machine: the
// project's own States Language executor drives the real handlers
// in-process, and the SQS tasks append to local queues. `geomigrate migrate`
// and the integration tests use it with embedded or AWS backends alike.
package localrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Local names substituted for the definition's placeholders, the way CDK
// substitutes ARNs and queue URLs on AWS.
const (
	HashCheckFunction   = "arn:aws:lambda:local:000000000000:function:geomigrate-hashcheck"
	ConvertFunction     = "arn:aws:lambda:local:000000000000:function:geomigrate-convert"
	PromoteFunction     = "arn:aws:lambda:local:000000000000:function:geomigrate-promote"
	ClassifyFunction    = "arn:aws:lambda:local:000000000000:function:geomigrate-classify"
	RemediationQueueURL = "local://queues/remediation"
	DeadLetterQueueURL  = "local://queues/dead-letter"
	// The container task's stand-ins: locally it is a child process, and
	// the cluster, task definition and network only name it.
	ConvertCluster        = "arn:aws:ecs:local:000000000000:cluster/geomigrate"
	ConvertTaskDefinition = "arn:aws:ecs:local:000000000000:task-definition/geomigrate-convert:1"
	ConvertSubnets        = "subnet-local"
	ConvertSecurityGroup  = "sg-local"
)

// Substitutions maps every placeholder of the migrate definition to its
// local stand-in.
func Substitutions() map[string]string {
	return map[string]string{
		statemachine.HashCheckFunctionArn: HashCheckFunction,
		statemachine.ConvertFunctionArn:   ConvertFunction,
		statemachine.PromoteFunctionArn:   PromoteFunction,
		statemachine.ClassifyFunctionArn:  ClassifyFunction,
		statemachine.RemediationQueueURL:  RemediationQueueURL,
		statemachine.DeadLetterQueueURL:   DeadLetterQueueURL,

		statemachine.ConvertClusterArn:        ConvertCluster,
		statemachine.ConvertTaskDefinitionArn: ConvertTaskDefinition,
		statemachine.ConvertSubnetIDs:         ConvertSubnets,
		statemachine.ConvertSecurityGroupID:   ConvertSecurityGroup,
	}
}

// Handlers are the four steps, and what the container path needs.
type Handlers struct {
	HashCheck *migration.HashCheck
	Convert   *migration.Convert
	Promote   *migration.Promote
	Classify  *migration.Classify
	// ConvertTask runs ConvertInContainer's task (ecs:runTask.sync): the
	// same Convert handler in a child process. Nil: a job routed there
	// fails (no handler for the resource) and is classified like any
	// task failure.
	ConvertTask ContainerRunner
	// Results is the object store the task's result object is read from
	// (aws-sdk:s3:getObject). Nil: the read fails likewise.
	Results objectstore.Store
}

// Recipe is the recipe the handlers convert with.
func (h Handlers) Recipe() recipe.Recipe { return h.HashCheck.Recipe() }

// Queues receive what the state machine routes.
type Queues struct {
	Remediation queue.Sender
	DeadLetter  queue.Sender
}

// MigrateDefinition is the migrate definition as the local executor runs
// it: the task timeouts expanded from statemachine.DefaultTaskTimeouts, the
// same rule infra applies with the deployed functions' timeouts, and the
// string placeholders substituted with the local stand-ins.
func MigrateDefinition() ([]byte, error) {
	def, err := statemachine.ExpandMigrate(statemachine.Migrate, statemachine.DefaultTaskTimeouts)
	if err != nil {
		return nil, fmt.Errorf("localrun.MigrateDefinition: %w", err)
	}
	def, err = asl.Substitute(def, Substitutions())
	if err != nil {
		return nil, fmt.Errorf("localrun.MigrateDefinition: %w", err)
	}
	return def, nil
}

// ParsedMigrate is MigrateDefinition parsed: the machine the local
// executor runs, and what the graph and the tests inspect.
func ParsedMigrate() (*asl.StateMachine, error) {
	def, err := MigrateDefinition()
	if err != nil {
		return nil, err
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("localrun: %w", err)
	}
	return sm, nil
}

// LambdaFunc adapts a typed handler to the executor the way the Lambda
// runtime does: JSON in, JSON out, the handler's error passed through
// unchanged so its type name becomes the Step Functions error.
func LambdaFunc[I, O any](h func(context.Context, I) (O, error)) asl.LambdaFunc {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		var in I
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, err
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// RetryWaitScaleEnv names the variable that scales the local executor's
// Retry waits (IntervalSeconds, MaxDelaySeconds and the back-off between
// them): 0.01 turns the definition's 4 s … 60 s into 40 ms … 600 ms for tests
// and chaos runs. Unset or 1 is Step Functions' timing; the ASL file is
// never changed and AWS runs never read it.
const RetryWaitScaleEnv = "GEOMIGRATE_RETRY_WAIT_SCALE"

// RetryWaitScale reads RetryWaitScaleEnv: 1 when unset, an error when it is
// not a number in (0, 1000].
func RetryWaitScale() (float64, error) {
	v := os.Getenv(RetryWaitScaleEnv)
	if v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 1000 {
		return 0, fmt.Errorf("%s=%q: want a number in (0, 1000], e.g. 0.01", RetryWaitScaleEnv, v)
	}
	return f, nil
}

// NewExecutor parses the migrate definition with local substitutions and
// binds the handlers and queues to it. Retry waits are scaled by
// RetryWaitScaleEnv when set. More options (clock, randomness,
// history observers) are passed through.
func NewExecutor(h Handlers, q Queues, opts ...asl.Option) (*asl.Executor, error) {
	sm, err := ParsedMigrate()
	if err != nil {
		return nil, err
	}
	scale, err := RetryWaitScale()
	if err != nil {
		return nil, fmt.Errorf("localrun: %w", err)
	}
	queues := map[string]queue.Sender{RemediationQueueURL: q.Remediation, DeadLetterQueueURL: q.DeadLetter}
	all := []asl.Option{
		asl.WithRetryScale(scale),
		asl.WithLambda(HashCheckFunction, LambdaFunc(h.HashCheck.Handle)),
		asl.WithLambda(ConvertFunction, LambdaFunc(h.Convert.Handle)),
		asl.WithLambda(PromoteFunction, LambdaFunc(h.Promote.Handle)),
		asl.WithLambda(ClassifyFunction, LambdaFunc(h.Classify.Handle)),
		asl.WithSQS(func(ctx context.Context, url, body string) (string, error) {
			s, ok := queues[url]
			if !ok || s == nil {
				return "", fmt.Errorf("no local queue for %s", url)
			}
			return s.Send(ctx, body)
		}),
	}
	if h.ConvertTask != nil {
		all = append(all, asl.WithResource(statemachine.ResourceECSRunTaskSync, ecsRunTaskSync(h.ConvertTask)))
	}
	if h.Results != nil {
		all = append(all, asl.WithResource(statemachine.ResourceS3GetObject, s3GetObject(h.Results)))
	}
	return asl.NewExecutor(sm, append(all, opts...)...), nil
}
