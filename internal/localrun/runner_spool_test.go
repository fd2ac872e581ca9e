package localrun_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// runnerChild ends a .txt key skipped, a .bad key failed and any other
// skipped as already migrated: outcomes that differ by input, so that an
// outcome read back at the wrong index shows.
const runnerChild = `{"StartAt":"Which","States":{
 "Which":{"Type":"Choice","Choices":[
  {"Variable":"$.key","StringMatches":"*.txt","Next":"Ignored"},
  {"Variable":"$.key","StringMatches":"*.bad","Next":"Broken"}],"Default":"Done"},
 "Ignored":{"Type":"Pass","Result":{"status":"skipped","reason":"not_geospatial"},"End":true},
 "Broken":{"Type":"Fail","Error":"DataError","Cause":"broken"},
 "Done":{"Type":"Pass","Result":{"status":"skipped","reason":"already_migrated"},"End":true}}}`

// A spooled run reads back, in input order, the outcomes Run returns for
// the same inputs (bar each execution's own name, trace id and duration).
func TestRunnerSpoolMatchesRun(t *testing.T) {
	child, err := asl.Parse([]byte(runnerChild))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		workers int
		n       int
	}{
		{"one worker", 1, 7},
		{"four workers", 4, 50},
		{"none", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inputs []migration.Source
			for i := range tt.n {
				inputs = append(inputs, migration.Source{Bucket: "b", Key: fmt.Sprintf("f%03d%s", i, []string{".tif", ".txt", ".bad"}[i%3])})
			}
			r := &localrun.Runner{Executor: asl.NewExecutor(child), Workers: tt.workers, DropHistory: true}
			want := r.Run(context.Background(), inputs)
			spool, err := localrun.NewOrderedOutcomes(len(inputs))
			if err != nil {
				t.Fatal(err)
			}
			defer spool.Close()
			r.Spool(context.Background(), inputs, spool)
			got, err := spool.All()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d outcomes spooled, want %d", len(got), len(want))
			}
			for i := range want {
				w := localrun.WithHint(want[i])
				g := got[i]
				g.TraceID, g.Duration, g.Execution, w.TraceID, w.Duration, w.Execution = "", 0, "", "", 0, ""
				if fmt.Sprintf("%+v", g) != fmt.Sprintf("%+v", w) {
					t.Errorf("outcome %d:\n%+v\nwant\n%+v", i, g, w)
				}
			}
		})
	}
}

// migrate's runner keeps nothing per file once it has spooled the file's
// outcome: the heap left live after a spooled run of 5,000 inputs
// (outcomes open, not read back) exceeds that of 1,000 by at most
// perFileBound per extra input. The inputs themselves are the caller's,
// made before the first reading. The child is a two-state machine (no
// GDAL), so what is measured is the runner's and the executor's own
// bookkeeping; the CLI's is measured with gctrace in docs/scale-local.md.
func TestRunnerSpoolRetainedHeapPerFile(t *testing.T) {
	const perFileBound = 64 // bytes; the spool's span is 16, an outcome held in memory ~600
	child, err := asl.Parse([]byte(runnerChild))
	if err != nil {
		t.Fatal(err)
	}
	live := func(n int) uint64 {
		inputs := make([]migration.Source, n)
		for i := range inputs {
			inputs[i] = migration.Source{Bucket: "b", Key: fmt.Sprintf("dir/f%05d.geojson", i)}
		}
		r := &localrun.Runner{Executor: asl.NewExecutor(child), Workers: 2, DropHistory: true}
		runtime.GC()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		spool, err := localrun.NewOrderedOutcomes(n)
		if err != nil {
			t.Fatal(err)
		}
		defer spool.Close()
		r.Spool(context.Background(), inputs, spool)
		runtime.GC()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(spool)
		runtime.KeepAlive(inputs)
		runtime.KeepAlive(r)
		if spool.Len() != n {
			t.Fatalf("%d outcomes spooled, want %d", spool.Len(), n)
		}
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	small, large := live(1000), live(5000)
	grown := int64(large) - int64(small)
	t.Logf("live heap after the run: %d KiB at 1,000 files, %d KiB at 5,000 (%d B per extra file)", small>>10, large>>10, grown/4000)
	if grown > perFileBound*4000 {
		t.Errorf("live heap grew %d B per file from 1,000 to 5,000 files, want at most %d", grown/4000, perFileBound)
	}
}
