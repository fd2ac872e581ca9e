package migration

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// TestContainerTaskWritesItsResult: the container task writes Convert's
// outputs, or its typed error as Step Functions catches a Lambda's, to the
// result object; Classify reads the code back from it as from a Lambda.
func TestContainerTaskWritesItsResult(t *testing.T) {
	ctx := context.Background()
	read := func(t *testing.T, f *fixture, key string) ContainerResult {
		t.Helper()
		rc, err := f.store.Open(ctx, "dest", key)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		var r ContainerResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return r
	}
	for _, c := range []struct {
		name, body string
		wantErr    string
		wantCode   fault.Code
	}{
		{"converted", "raster-bytes", "", ""},
		{"data error", "BAD:CorruptSource", "DataError", fault.CorruptSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.put(t, "a/dem.img", c.body)
			hc := f.check(t, "exec-1", "a/dem.img")
			in := ContainerTaskInput{Job: hc.Job, Context: Invocation{Execution: "exec-1", State: "ConvertInContainer"}}
			in.Result.Bucket, in.Result.Key = "dest", hc.Job.StagingPrefix+"container-result-1.json"
			if err := RunContainerTask(ctx, f.convert, f.store, in); err != nil {
				t.Fatal(err)
			}
			r := read(t, f, in.Result.Key)
			if c.wantErr == "" {
				if r.Error != nil || len(r.Outputs) != 1 {
					t.Fatalf("result %+v, want one output", r)
				}
				return
			}
			if r.Error == nil || r.Error.Error != c.wantErr {
				t.Fatalf("result %+v, want error %s", r, c.wantErr)
			}
			if _, code, attempts := Describe(*r.Error); code != c.wantCode || attempts != 1 {
				t.Fatalf("Describe(%+v) = code %q attempt %d, want %q 1", r.Error, code, attempts, c.wantCode)
			}
		})
	}
	t.Run("no result location", func(t *testing.T) {
		f := newFixture(t)
		if err := RunContainerTask(ctx, f.convert, f.store, ContainerTaskInput{}); err == nil {
			t.Fatal("no error without a result location")
		}
	})
}

// slowEngine converts as its Engine does, after a pause: a task longer
// than the lease.
type slowEngine struct {
	*fakeEngine
	pause time.Duration
}

func (e slowEngine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	time.Sleep(e.pause)
	return e.fakeEngine.Convert(ctx, src, workDir, r)
}

// TestContainerTaskKeepsItsLease: a container task that runs longer than
// the lease renews it while Convert runs, so the job is still held (not
// taken over by a second execution) when it ends.
func TestContainerTaskKeepsItsLease(t *testing.T) {
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	f := newFixture(t)
	tracker := statestore.NewTracker(statestoretest.NewMemory(), statestore.WithLease(lease))
	quiet := slog.New(slog.DiscardHandler)
	hash := NewHashCheck(f.cfg, f.store, tracker, StoreFingerprinter{Store: f.store, Threshold: 1 << 20}, quiet)
	conv := NewConvert(f.cfg, f.store, tracker, slowEngine{fakeEngine: &fakeEngine{}, pause: 3 * lease}, fakeValidator, quiet)
	f.put(t, "a/dem.img", "raster-bytes")
	hc, err := hash.Handle(ctx, HashCheckInput{Source: Source{Bucket: "src", Key: "a/dem.img"}, Context: inv("exec-1", 0)})
	if err != nil || hc.Decision != DecisionConvert {
		t.Fatalf("hashcheck: %+v %v", hc, err)
	}
	in := ContainerTaskInput{Job: hc.Job, Context: Invocation{Execution: "exec-1", State: "ConvertInContainer"}}
	in.Result.Bucket, in.Result.Key = "dest", hc.Job.StagingPrefix+ContainerResultPrefix+"1.json"
	start := time.Now()
	if err := RunContainerTask(ctx, conv, f.store, in); err != nil {
		t.Fatal(err)
	}
	j, err := tracker.Get(ctx, hc.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Without renewal the lease would end at start + lease (Convert's
	// BeginAttempt); renewed every lease/3 it ends after the conversion.
	if !j.LeaseUntil.After(start.Add(2*lease)) || j.LeaseOwner != "exec-1" {
		t.Fatalf("lease held by %s until %v, %v after the task started; want it renewed past %v", j.LeaseOwner, j.LeaseUntil, j.LeaseUntil.Sub(start), 2*lease)
	}
}
