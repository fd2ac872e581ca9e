package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// containerExecutor is p's executor with the container path wired: run is
// the container task (in this process here; a child process of the CLI in
// the integration test).
func (p *pipeline) containerExecutor(t *testing.T, run localrun.ContainerRunner) *asl.Executor {
	t.Helper()
	finger := migration.StoreFingerprinter{Store: p.store, Threshold: 1 << 30}
	h := localrun.Handlers{
		HashCheck:   migration.NewHashCheck(p.cfg, p.store, p.tracker, finger, quiet),
		Convert:     migration.NewConvert(p.cfg, p.store, p.tracker, p.engine, validate.Output, quiet),
		Promote:     migration.NewPromote(p.cfg, p.store, p.tracker, quiet),
		Classify:    migration.NewClassify(p.tracker, nil, quiet).WithStagingCleanup(p.store, p.cfg),
		ConvertTask: run,
		Results:     p.store,
	}
	exec, err := localrun.NewExecutor(h, localrun.Queues{Remediation: p.remediation, DeadLetter: p.deadLetter}, asl.WithClock(p.clock))
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// inProcessTask runs the container task's code (migration.RunContainerTask)
// in this process, over the pipeline's ports.
func (p *pipeline) inProcessTask(conv *migration.Convert) localrun.ContainerRunner {
	return func(ctx context.Context, input json.RawMessage) error {
		var in migration.ContainerTaskInput
		if err := json.Unmarshal(input, &in); err != nil {
			return err
		}
		return migration.RunContainerTask(ctx, conv, p.store, in)
	}
}

func entered(o localrun.Outcome) []string {
	var states []string
	for _, ev := range o.History {
		if ev.Type == asl.EventStateEntered {
			states = append(states, ev.State)
		}
	}
	return states
}

// TestContainerRouteEndsLikeTheLambdaRoute: with a one-byte limit every
// sample goes to the container task; each ends as it does through the
// Convert Lambda — the good ones completed, the bad ones routed with the
// same tier, error and code (a DataError from the task is classified as
// the Lambda's is).
func TestContainerRouteEndsLikeTheLambdaRoute(t *testing.T) {
	dir, _, keys := samples(t)
	lambda := newPipeline(t, dir)
	want := lambda.run(t, lambda.store, keys)

	p := newPipeline(t, dir)
	p.cfg.Container = migration.ContainerLimits{Bytes: 1, PixelsBands: 1, Features: 1}
	conv := migration.NewConvert(p.cfg, p.store, p.tracker, p.engine, validate.Output, quiet)
	var tasks atomic.Int32
	inner := p.inProcessTask(conv)
	exec := p.containerExecutor(t, func(ctx context.Context, input json.RawMessage) error {
		tasks.Add(1)
		return inner(ctx, input)
	})
	var inputs []migration.Source
	for _, k := range keys {
		inputs = append(inputs, migration.Source{Bucket: "src", Key: k, KeyEncoding: "plain", DatasetID: "samples"})
	}
	got := map[string]localrun.Outcome{}
	for _, o := range (&localrun.Runner{Executor: exec, Workers: 2}).Run(context.Background(), inputs) {
		got[o.Key] = o
	}
	routed := 0
	for _, k := range keys {
		g, w := got[k], want[k]
		if g.Status != w.Status || g.Tier != w.Tier || g.Error != w.Error || g.Code != w.Code || len(g.Outputs) != len(w.Outputs) {
			t.Errorf("%s: container route ended %s/%s/%s/%s with %d outputs, Lambda route %s/%s/%s/%s with %d (%s)",
				k, g.Status, g.Tier, g.Error, g.Code, len(g.Outputs), w.Status, w.Tier, w.Error, w.Code, len(w.Outputs), g.Message)
		}
		states := entered(g)
		if slices.Contains(states, "ConvertInContainer") {
			routed++
			if g.Engine != migration.EngineContainer {
				t.Errorf("%s: converted in the container, reported engine %q", k, g.Engine)
			}
			if slices.Contains(states, "Convert") {
				t.Errorf("%s: converted on both engines: %v", k, states)
			}
		}
		if k == "pixel_bomb.tif" && slices.Contains(states, "ConvertInContainer") {
			t.Errorf("%s: over the recipe's budget, yet sent to the container", k)
		}
	}
	if routed == 0 || int(tasks.Load()) != routed {
		t.Fatalf("%d executions entered ConvertInContainer, %d tasks ran", routed, tasks.Load())
	}
	// Promote removed the completed jobs' result objects with their staged
	// outputs; a routed job's is left to the staging expiry.
	all, _ := filepath.Glob(filepath.Join(p.destDir, migration.DefaultStagingPrefix, "*", "*"))
	routedResults := 0
	for _, f := range all {
		base := filepath.Base(f)
		switch {
		case strings.HasPrefix(base, ".geomigrate-"): // the directory store's metadata
		case strings.HasPrefix(base, migration.ContainerResultPrefix):
			routedResults++
		default:
			t.Errorf("staging still holds %s", f)
		}
	}
	completedInContainer := 0
	for _, o := range got {
		if o.Engine == migration.EngineContainer && o.Status == localrun.StatusCompleted {
			completedInContainer++
		}
	}
	if completedInContainer == 0 || routedResults >= routed {
		t.Errorf("%d result objects left in staging for %d jobs routed to the container (%d completed there)", routedResults, routed, completedInContainer)
	}
	if o := got["no_crs.tif"]; o.Status != localrun.StatusRemediation || o.Error != "DataError" || o.Code != string(fault.MissingCRS) {
		t.Fatalf("no_crs.tif through the container: %+v", o)
	}
}

// TestContainerTaskFailuresAreClassified: a task whose result says
// TransientError is run again (the Parallel's retrier) and completes; a
// task that exits non-zero without a result goes to the dead-letter queue.
func TestContainerTaskFailuresAreClassified(t *testing.T) {
	dir, _, _ := samples(t)
	for _, c := range []struct {
		name     string
		task     func(p *pipeline, conv *migration.Convert) localrun.ContainerRunner
		status   string
		minTasks int32
	}{
		{"transient then converted", func(p *pipeline, conv *migration.Convert) localrun.ContainerRunner {
			var n atomic.Int32
			inner := p.inProcessTask(conv)
			return func(ctx context.Context, input json.RawMessage) error {
				if n.Add(1) > 1 {
					return inner(ctx, input)
				}
				var in migration.ContainerTaskInput
				_ = json.Unmarshal(input, &in)
				res, _ := json.Marshal(migration.ContainerResult{Error: migration.LambdaError(fault.Transient("test", errors.New("slow down")))})
				return putJSON(ctx, p, in.Result.Bucket, in.Result.Key, res)
			}
		}, localrun.StatusCompleted, 2},
		{"exits non-zero", func(p *pipeline, conv *migration.Convert) localrun.ContainerRunner {
			return func(ctx context.Context, input json.RawMessage) error {
				return &localrun.ExitError{Code: 137, Reason: "OutOfMemoryError: Container killed due to memory usage"}
			}
		}, localrun.StatusDeadLetter, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(localrun.RetryWaitScaleEnv, "0.001")
			p := newPipeline(t, dir)
			p.cfg.Container = migration.ContainerLimits{Bytes: 1, PixelsBands: 1, Features: 1}
			conv := migration.NewConvert(p.cfg, p.store, p.tracker, p.engine, validate.Output, quiet)
			var tasks atomic.Int32
			inner := c.task(p, conv)
			exec := p.containerExecutor(t, func(ctx context.Context, input json.RawMessage) error {
				tasks.Add(1)
				return inner(ctx, input)
			})
			out := (&localrun.Runner{Executor: exec, Workers: 1}).Run(context.Background(),
				[]migration.Source{{Bucket: "src", Key: "dem_utm33.tif", KeyEncoding: "plain", DatasetID: "samples"}})
			if out[0].Status != c.status || tasks.Load() < c.minTasks {
				t.Fatalf("ended %s after %d task(s) (%s %s), want %s after at least %d", out[0].Status, tasks.Load(), out[0].Error, out[0].Message, c.status, c.minTasks)
			}
		})
	}
}

func putJSON(ctx context.Context, p *pipeline, bucket, key string, body []byte) error {
	_, err := p.store.Put(ctx, objectstore.PutRequest{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body))})
	return err
}
