package localrun_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
)

// diskFull is what the directory store returns when a write meets ENOSPC:
// the OS error classified by fault.FromOS.
func diskFull(where string) error {
	return fault.FromOS(where, &os.PathError{Op: "write", Path: "/out/_staging/x/.geomigrate-tmp-1", Err: syscall.ENOSPC})
}

func TestFromOSMakesExhaustionSystemic(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		err := fault.FromOS("dirstore.Put dest/k", &os.PathError{Op: "write", Path: "p", Err: errno})
		var s *fault.SystemicError
		var tr *fault.TransientError
		if !errors.As(err, &s) || errors.As(err, &tr) {
			t.Errorf("%v: %T %v, want a SystemicError and no TransientError", errno, err, err)
		}
		if localrun.Exhaustion("SystemicError", fault.ForBoundary(err).Error()) == "" {
			t.Errorf("%v: %v is not recognised as exhaustion", errno, err)
		}
	}
	for _, tc := range []struct{ name, cause, want string }{
		{"SystemicError", "convert: stage k: dirstore.Put: DiskFull: write p: no space left on device", "disk full"},
		{"States.TaskFailed", "jsonlqueue.Send q: write q: no space left on device", "disk full"},
		{"SystemicError", "gdal: out of memory allocating 4 GiB", "out of memory"},
		{"Runtime.OutOfMemory", "RequestId: 1 Error: Runtime exited with error: signal: killed", "out of memory"},
		// A data problem that mentions memory is the file's, not the machine's.
		{"DataError", "BudgetExceeded: declares 40 GiB, more than the 3 GiB of memory: out of memory", ""},
		{"wrapError", "hashcheck: statestore: write state.db: no space left on device", "disk full"},
		{"TransientError", "SlowDown", ""},
		{"SystemicError", "AccessDenied: dest", ""},
	} {
		if got := localrun.Exhaustion(tc.name, tc.cause); got != tc.want {
			t.Errorf("Exhaustion(%s, %q) = %q, want %q", tc.name, tc.cause, got, tc.want)
		}
	}
}

// TestDiskFullStopsTheRun: the first write that meets a full disk stops the
// run: no other file starts converting, each input has exactly one
// outcome, the ones not started say why.
func TestDiskFullStopsTheRun(t *testing.T) {
	dir, keys := goodKeys(t)
	p := newPipeline(t, dir)
	faulty := faultstore.New(p.store, faultstore.Rule{Op: faultstore.OpPut,
		Match: func(_, k string) bool { return strings.HasPrefix(k, migration.DefaultStagingPrefix) },
		Err:   diskFull("dirstore.Put dest/_staging")})
	halt := localrun.NewHalt()
	r := &localrun.Runner{Executor: p.executor(t, faulty, asl.WithHistory(halt.Observe)), Workers: 1, Halt: halt}
	var inputs []migration.Source
	for _, k := range keys {
		inputs = append(inputs, migration.Source{Bucket: "src", Key: k, KeyEncoding: "plain", DatasetID: "samples"})
	}
	start := time.Now()
	out := r.Run(t.Context(), inputs)
	if len(out) != len(inputs) {
		t.Fatalf("%d outcomes for %d inputs", len(out), len(inputs))
	}
	if !strings.Contains(halt.Reason(), "disk full") {
		t.Fatalf("halt reason %q, want disk full", halt.Reason())
	}
	report := localrun.NewReport(start, out)
	tot := report.Totals
	if tot.NotStarted != len(inputs)-1 || tot.DeadLetter != 1 {
		t.Errorf("totals %+v: want 1 dlq (the file that met the full disk) and %d not started", tot, len(inputs)-1)
	}
	for _, o := range out {
		if o.Status == localrun.StatusNotStarted && !strings.Contains(o.Reason, "disk full") {
			t.Errorf("%s not started without the reason: %+v", o.Key, o)
		}
	}
	if n := p.engine.count(); n != 1 {
		t.Errorf("%d conversions, want 1: the run goes on converting on a full disk", n)
	}
	if got := filepath.Join(t.TempDir(), "r.json"); report.Write(got) != nil {
		t.Error("report not written")
	}
}
