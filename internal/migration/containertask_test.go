package migration

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
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
