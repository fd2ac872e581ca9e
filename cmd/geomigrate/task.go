package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/rpcstore"
	"github.com/geomigrate/geomigrate/internal/steps"
	"github.com/geomigrate/geomigrate/internal/validate"
	"github.com/geomigrate/geomigrate/statemachine"
)

// taskCmd groups the container entry points: what the state machine runs
// as an ECS Fargate task (and the local executor as a child process).
type taskCmd struct {
	Convert taskConvertCmd `cmd:"" help:"Convert one claimed job as the container task: reads GEOMIGRATE_TASK_INPUT, writes the result object the state machine reads back."`
}

// taskConvertCmd is the container's entry point. On AWS it reads the
// functions' configuration from the environment (internal/config, as the
// Convert Lambda does) and reaches S3 and DynamoDB through the same
// adapters; started by the local executor (taskLocalEnv set) it opens the
// run's directories and reaches the state store through its parent.
// Either way the Convert handler and migration.RunContainerTask do the
// work: the Lambda's code path.
type taskConvertCmd struct{}

// taskLocalEnv carries a local child's ports (localTaskPorts, JSON).
const taskLocalEnv = "GEOMIGRATE_TASK_LOCAL"

// localTaskPorts is what a local child needs to open its parent's run: the
// directories served as buckets, the destination and the handlers'
// settings, whole, as internal/config declares them (the child derives its
// configuration from them as the parent does, so a new setting reaches it
// with no change here; TestLocalTaskGetsEveryHandlerSetting). The state
// store is reached over file descriptors 3 (requests in) and 4 (answers
// out).
type localTaskPorts struct {
	Buckets    map[string]string `json:"buckets"`
	DestBucket string            `json:"dest_bucket"`
	DestPrefix string            `json:"dest_prefix"`
	Handlers   config.Handlers   `json:"handlers"`
}

// migrationConfig is the child's handler configuration: the parent's
// (runConfig) without the recipe book, which only HashCheck reads.
func (p localTaskPorts) migrationConfig(engineVersion string) migration.Config {
	return runConfig(p.Handlers, nil, p.DestBucket, p.DestPrefix, engineVersion)
}

func (c *taskConvertCmd) Run(e *cmdEnv) error {
	raw := os.Getenv(statemachine.TaskInputEnv)
	if raw == "" {
		return fmt.Errorf("task convert: %s is not set (the state machine's ConvertInContainer sets it)", statemachine.TaskInputEnv)
	}
	var in migration.ContainerTaskInput
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return fmt.Errorf("task convert: %s: %w", statemachine.TaskInputEnv, err)
	}
	log := slog.New(slog.NewJSONHandler(e.stderr, nil))
	var (
		conv  *migration.Convert
		store objectstore.Store
		done  func() error
		err   error
	)
	if local := os.Getenv(taskLocalEnv); local != "" {
		conv, store, done, err = openLocalTask(local, log)
	} else {
		conv, store, done, err = openAWSTask(e.ctx)
	}
	if err != nil {
		return fmt.Errorf("task convert: %w", err)
	}
	defer done()
	return migration.RunContainerTask(e.ctx, conv, store, in)
}

// openAWSTask wires Convert as functions/convert does.
func openAWSTask(ctx context.Context) (*migration.Convert, objectstore.Store, func() error, error) {
	cfg, err := config.LoadLambda()
	if err != nil {
		return nil, nil, nil, err
	}
	app, err := awsapp.New(ctx, cfg.Migration(), cfg.AWS, awsapp.WithLogger(awsapp.NewLambdaLogger(cfg.LogLevel)))
	if err != nil {
		return nil, nil, nil, err
	}
	engine, err := gdal.New(gdal.WithTmpDir(app.Config.WorkDir))
	if err != nil {
		return nil, nil, nil, err
	}
	ports := app.Ports()
	conv := ports.Convert(engine, validate.Output)
	return conv, ports.Store, conv.Close, nil
}

// openLocalTask wires Convert over the parent's directories and, through
// the parent, its state store. No breaker: the parent's is in its state
// store, and a child converts one job.
func openLocalTask(spec string, log *slog.Logger) (*migration.Convert, objectstore.Store, func() error, error) {
	var p localTaskPorts
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", taskLocalEnv, err)
	}
	var opts []dirstore.Option
	for name, dir := range p.Buckets {
		opts = append(opts, dirstore.WithBucketDir(name, dir))
	}
	store, err := dirstore.New("", opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	in, out := os.NewFile(3, "state-answers"), os.NewFile(4, "state-requests")
	if in == nil || out == nil {
		return nil, nil, nil, errors.New("no state store connection on file descriptors 3 and 4")
	}
	client := rpcstore.NewClient(pipeConn{Reader: in, Writer: out, closers: []io.Closer{in, out}})
	cfg := p.migrationConfig("")
	engine, err := gdal.New(gdal.WithTmpDir(cfg.WorkDir))
	if err != nil {
		client.Close()
		return nil, nil, nil, err
	}
	cfg.Recipe.EngineVersion = engine.Version() // the GDAL this child converts with
	ports := steps.Ports{Config: cfg, Store: wrapObjects(store), Tracker: statestore.NewTracker(client, statestore.WithLease(cfg.Lease)), Log: log}
	conv := ports.Convert(engine, validate.Output)
	return conv, ports.Store, func() error { return errors.Join(conv.Close(), client.Close()) }, nil
}

// pipeConn is a pair of pipes as one connection.
type pipeConn struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (c pipeConn) Close() error {
	var errs []error
	for _, cl := range c.closers {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// childTaskReasonBytes is how much of a failed child's standard error its
// ExitError keeps.
const childTaskReasonBytes = 2048

// cliForTasks is the binary that runs container tasks: GEOMIGRATE_CLI when
// set (tests run the CLI in their own process, which is not a geomigrate
// binary), else this executable.
func cliForTasks() (string, error) {
	if p := os.Getenv("GEOMIGRATE_CLI"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("container task: %w", err)
	}
	return exe, nil
}

// childConvertTask runs the container task as `exe task convert`, a child
// process of the same binary; this is the local executor's
// ecs:runTask.sync. env is added to the child's environment (the local
// ports, or the AWS settings). With state set the child reaches that state
// store through two pipes served here (a local run: one process holds the
// embedded store's file); without, it opens its own (DynamoDB). Its
// standard error (JSON logs) is passed on to log at debug level, and its
// tail names a failure.
func childConvertTask(exe string, env []string, state statestore.Backend, log *slog.Logger) localrun.ContainerRunner {
	return func(ctx context.Context, input json.RawMessage) error {
		cmd := exec.CommandContext(ctx, exe, "task", "convert")
		cmd.Env = append(append(os.Environ(), env...), statemachine.TaskInputEnv+"="+string(input))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdout = &stderr
		var served sync.WaitGroup
		if state != nil {
			// One pipe each way: the child reads the parent's answers on
			// fd 3 and writes its requests on fd 4 (openLocalTask).
			toChildR, toChildW, err := os.Pipe()
			if err != nil {
				return fmt.Errorf("childConvertTask: %w", err)
			}
			fromChildR, fromChildW, err := os.Pipe()
			if err != nil {
				toChildR.Close()
				toChildW.Close()
				return fmt.Errorf("childConvertTask: %w", err)
			}
			cmd.ExtraFiles = []*os.File{toChildR, fromChildW}
			if err := cmd.Start(); err != nil {
				for _, f := range []*os.File{toChildR, toChildW, fromChildR, fromChildW} {
					f.Close()
				}
				return &localrun.ExitError{Code: -1, Reason: err.Error()}
			}
			// The child holds its ends now; its exit closes them, which
			// ends Serve.
			toChildR.Close()
			fromChildW.Close()
			served.Add(1)
			go func() {
				defer served.Done()
				rpcstore.Serve(pipeConn{Reader: fromChildR, Writer: toChildW, closers: []io.Closer{fromChildR, toChildW}}, state)
			}()
		} else if err := cmd.Start(); err != nil {
			return &localrun.ExitError{Code: -1, Reason: err.Error()}
		}
		werr := cmd.Wait()
		served.Wait()
		if log != nil && stderr.Len() > 0 {
			log.Debug("container task", slog.String("output", stderr.String()))
		}
		if werr == nil {
			return nil
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			code = ee.ExitCode()
		}
		reason := strings.TrimSpace(stderr.String())
		if len(reason) > childTaskReasonBytes {
			reason = "…" + reason[len(reason)-childTaskReasonBytes:]
		}
		if reason == "" {
			reason = werr.Error()
		}
		return &localrun.ExitError{Code: code, Reason: reason}
	}
}
