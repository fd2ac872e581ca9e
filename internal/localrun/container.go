package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/statemachine"
)

// ContainerRunner runs the convert container task with its input (the
// JSON the state machine puts in GEOMIGRATE_TASK_INPUT) and waits for it
// to stop. A non-nil error is a task that did not exit 0 (ExitError says
// how it ended). The CLI's runner starts a child process of its own binary
// (`geomigrate task convert`); on AWS it is an ECS Fargate task.
type ContainerRunner func(ctx context.Context, input json.RawMessage) error

// ExitError is a container task that stopped with a non-zero exit code.
type ExitError struct {
	Code   int
	Reason string // the end of its standard error, or why it could not start
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("container exited with code %d: %s", e.Code, e.Reason)
}

// ecsRunTaskSync stands in for arn:aws:states:::ecs:runTask.sync: it
// takes the container's input from the overrides, checks the ephemeral
// storage ECS would check, runs the task and answers with the stopped
// task, as DescribeTasks does. A task whose container exits non-zero fails
// with States.TaskFailed and the stopped task as Cause, as Step Functions
// reports a .sync task that did not succeed.
func ecsRunTaskSync(run ContainerRunner) asl.ResourceFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Cluster, TaskDefinition, LaunchType string
			Overrides                           struct {
				EphemeralStorage   *struct{ SizeInGiB int }
				ContainerOverrides []struct {
					Name        string
					Environment []struct{ Name, Value string }
				}
			}
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, asl.TaskError{Name: "ECS.InvalidParameterException", Cause: err.Error()}
		}
		if p.Cluster == "" || p.TaskDefinition == "" || p.LaunchType != "FARGATE" {
			return nil, asl.TaskError{Name: "ECS.InvalidParameterException", Cause: "Cluster, TaskDefinition and LaunchType FARGATE are required"}
		}
		if es := p.Overrides.EphemeralStorage; es != nil && (es.SizeInGiB < migration.MinEphemeralGiB || es.SizeInGiB > migration.MaxEphemeralGiB) {
			return nil, asl.TaskError{Name: "ECS.InvalidParameterException", Cause: fmt.Sprintf("ephemeralStorage sizeInGiB %d: must be %d to %d", es.SizeInGiB, migration.MinEphemeralGiB, migration.MaxEphemeralGiB)}
		}
		var input string
		for _, c := range p.Overrides.ContainerOverrides {
			if c.Name != statemachine.ConvertContainerName {
				continue
			}
			for _, e := range c.Environment {
				if e.Name == statemachine.TaskInputEnv {
					input = e.Value
				}
			}
		}
		if input == "" {
			return nil, asl.TaskError{Name: "ECS.InvalidParameterException", Cause: fmt.Sprintf("no %s for container %q in the overrides", statemachine.TaskInputEnv, statemachine.ConvertContainerName)}
		}
		task := map[string]any{"ClusterArn": p.Cluster, "TaskDefinitionArn": p.TaskDefinition, "LaunchType": p.LaunchType,
			"LastStatus": "STOPPED", "StopCode": "EssentialContainerExited"}
		err := run(ctx, json.RawMessage(input))
		container := map[string]any{"Name": statemachine.ConvertContainerName, "ExitCode": 0, "LastStatus": "STOPPED"}
		task["Containers"] = []any{container}
		if err != nil {
			if ctx.Err() != nil {
				return nil, err // the execution's timeout or abort, reported by the executor
			}
			code := 1
			var ee *ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			}
			container["ExitCode"], container["Reason"] = code, err.Error()
			task["StoppedReason"] = "Essential container in task exited"
			cause, _ := json.Marshal(task)
			return nil, asl.TaskError{Name: asl.ErrTaskFailed, Cause: string(cause)}
		}
		return json.Marshal(task)
	}
}

// resultReadLimit bounds a result object read back: it holds a list of
// outputs or an error, never data.
const resultReadLimit = 4 << 20

// s3GetObject stands in for arn:aws:states:::aws-sdk:s3:getObject on the
// run's object store: {Bucket, Key} in, {Body, ContentLength} out; a
// missing object fails with S3.NoSuchKeyException, as the SDK integration
// names S3's NoSuchKey.
func s3GetObject(store objectstore.Store) asl.ResourceFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p struct{ Bucket, Key string }
		if err := json.Unmarshal(raw, &p); err != nil || p.Bucket == "" || p.Key == "" {
			return nil, asl.TaskError{Name: "S3.S3Exception", Cause: fmt.Sprintf("Bucket and Key are required: %s", raw)}
		}
		rc, err := store.Open(ctx, p.Bucket, p.Key)
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			return nil, asl.TaskError{Name: "S3.NoSuchKeyException", Cause: fmt.Sprintf("The specified key does not exist: s3://%s/%s", p.Bucket, p.Key)}
		case err != nil:
			return nil, asl.TaskError{Name: "S3.S3Exception", Cause: err.Error()}
		}
		defer rc.Close()
		body, err := io.ReadAll(io.LimitReader(rc, resultReadLimit+1))
		if err != nil {
			return nil, asl.TaskError{Name: "S3.SdkClientException", Cause: err.Error()}
		}
		if len(body) > resultReadLimit {
			return nil, asl.TaskError{Name: asl.ErrTaskFailed, Cause: fmt.Sprintf("s3://%s/%s is over %d bytes", p.Bucket, p.Key, resultReadLimit)}
		}
		return json.Marshal(map[string]any{"Body": string(body), "ContentLength": len(body), "ContentType": "application/json"})
	}
}
