package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// The 10,000-item runs take minutes: make test-scale and make
// bench-backfill set these to run them, each with its own -timeout.
const (
	scaleTestEnv  = "GEOMIGRATE_TEST_SCALE"
	scaleBenchEnv = "GEOMIGRATE_BENCH_BACKFILL"
)

// timingEngine records how long each conversion and output validation took
// (wall time by file stem, and CPU time of the working thread), so a
// run's orchestration cost is its total minus these.
type timingEngine struct {
	recipe.Engine
	mu   sync.Mutex
	took map[string]time.Duration
	cpu  time.Duration // conversions' and validations' CPU time
	// marks are taken as each conversion starts: with one item at a time,
	// the CPU spent between two marks minus the conversions' is one item's
	// orchestration CPU.
	marks []cpuMark
}

type cpuMark struct{ process, work time.Duration }

// cpuOverheads are the orchestration CPU times between consecutive
// conversions, in order.
func (e *timingEngine) cpuOverheads() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(e.marks); i++ {
		out = append(out, (e.marks[i].process-e.marks[i-1].process)-(e.marks[i].work-e.marks[i-1].work))
	}
	return out
}

// stem names an item by its file name without extension: the source and
// its output share it.
func stem(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func (e *timingEngine) Convert(ctx context.Context, src, work string, r recipe.Recipe) ([]recipe.Output, error) {
	e.mu.Lock()
	e.marks = append(e.marks, cpuMark{process: processCPU(), work: e.cpu})
	e.mu.Unlock()
	// GDAL runs on this goroutine's thread: its CPU time is the thread's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu := time.Now(), threadCPU()
	out, err := e.Engine.Convert(ctx, src, work, r)
	d, c := time.Since(start), threadCPU()-cpu
	e.mu.Lock()
	e.took[stem(src)] += d
	e.cpu += c
	e.mu.Unlock()
	return out, err
}

// validate wraps the output validator (GDAL opens the output again): its
// time is the conversion's, not the orchestration's.
func (e *timingEngine) validate(check migration.OutputValidator) migration.OutputValidator {
	return func(path, format string) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start, cpu := time.Now(), threadCPU()
		err := check(path, format)
		d, c := time.Since(start), threadCPU()-cpu
		e.mu.Lock()
		e.took[stem(path)] += d
		e.cpu += c
		e.mu.Unlock()
		return err
	}
}

// scaleRun is one backfill over n tiny GeoJSON files in one directory (the
// worst case for per-file listings).
type scaleRun struct {
	p        *pipeline
	engine   *timingEngine
	backfill *localrun.Backfill
	keys     []string
}

// newScaleRun prepares the run; bolt puts the job records in the embedded
// bbolt store the CLI uses (its commits and fsyncs are then part of the
// figures) instead of the in-memory double.
func newScaleRun(tb testing.TB, n int, bolt bool) *scaleRun {
	tb.Helper()
	src := tb.TempDir()
	dir := filepath.Join(src, "incoming")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	keys := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("point_%05d.geojson", i)
		keys[i] = "incoming/" + name
		// Distinct content per file (the job key is the content hash), a
		// valid WGS 84 point.
		body := fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":%d},"geometry":{"type":"Point","coordinates":[%d.5,%d.25]}}]}`, i, i%359-179, i%179-89)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	// The sources exist before a migration starts: their data and inodes
	// are written out here, or the run's first fsyncs would flush them
	// (ext4 commits the journal, and with it every file written so far).
	syscall.Sync()
	p := newPipeline(tb, src)
	if bolt {
		db, err := boltstore.Open(filepath.Join(tb.TempDir(), "state.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		p.tracker = statestore.NewTracker(db)
	}
	eng := &timingEngine{Engine: p.engine.Engine, took: map[string]time.Duration{}}
	p.engine.Engine = eng
	p.validate = eng.validate(validate.Output)
	store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("dest", p.destDir), dirstore.WithBucketDir("ops", tb.TempDir()))
	if err != nil {
		tb.Fatal(err)
	}
	p.store = store
	bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: p.executor(tb, store)})
	if err != nil {
		tb.Fatal(err)
	}
	return &scaleRun{p: p, engine: eng, backfill: bf, keys: keys}
}

// run backfills the prefix, workers items at a time (1 for measuring: an
// item's wall time is then its own).
func (s *scaleRun) run(tb testing.TB, workers int) *localrun.Outcomes {
	tb.Helper()
	input := fmt.Sprintf(`{"prefix":"incoming/","max_concurrency":%d,"dataset_id":"points"}`, workers)
	res, outcomes, err := s.backfill.Run(context.Background(), "scale", json.RawMessage(input))
	if err != nil {
		tb.Fatal(err)
	}
	if res.Status != "SUCCEEDED" {
		tb.Fatalf("backfill %s: %s %s", res.Status, res.Error, res.Cause)
	}
	return outcomes
}

// overheads are each item's orchestration time (its child execution's
// wall time minus its conversion), in the order the items ran.
func (s *scaleRun) overheads(outcomes []localrun.Outcome) []time.Duration {
	s.engine.mu.Lock()
	defer s.engine.mu.Unlock()
	out := make([]time.Duration, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.Duration - s.engine.took[stem(o.Key)]
	}
	return out
}

// TestBackfillOverTenThousandObjects runs backfill.asl.json in the local
// executor over 10,000 tiny GeoJSON files in one directory: every file
// must end with exactly one terminal job record. make test-scale (part of
// make test) runs it with its own -timeout as the time bound; the speed is
// measured by BenchmarkBackfillOverhead, never asserted.
func TestBackfillOverTenThousandObjects(t *testing.T) {
	if os.Getenv(scaleTestEnv) == "" {
		t.Skipf("10,000 conversions: run by make test-scale (%s=1), not in every go test ./...", scaleTestEnv)
	}
	const n = 10000
	s := newScaleRun(t, n, false)
	outcomes := allOutcomes(t, s.run(t, 4))
	if len(outcomes) != n {
		t.Errorf("%d child executions, want %d", len(outcomes), n)
	}
	for _, o := range outcomes {
		if o.Status != localrun.StatusCompleted {
			t.Errorf("%s ended %q: %s %s", o.Key, o.Status, o.Error, o.Message)
		}
	}
	records := map[string][]statestore.Status{}
	err := s.p.tracker.List(context.Background(), "", func(j statestore.Job) error {
		records[j.SourceKey] = append(records[j.SourceKey], j.Status)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range s.keys {
		st := records[k]
		if len(st) != 1 || !st[0].Terminal() {
			t.Errorf("%s: job records %v, want exactly one terminal", k, st)
		}
	}
	if len(records) != n {
		t.Errorf("job records for %d keys, want %d", len(records), n)
	}
}

// BenchmarkBackfillOverhead runs the local backfill over 100, 1,000 and
// 10,000 tiny files, one at a time, and reports the orchestration overhead
// per item: wall time minus GDAL's (conversion and output validation), and
// CPU time outside GDAL (robust on a loaded machine, where wall time is
// not), each for the whole run and for its first and last tenth (flat
// means they match), with the job records in the embedded bbolt store as
// the CLI keeps them; the bytes allocated per item and the heap the run
// left live (the outcomes the report needs, the result writer's input),
// and the run's peak Go heap and peak resident set (the process's, reset
// before each size).
func BenchmarkBackfillOverhead(b *testing.B) {
	if os.Getenv(scaleBenchEnv) == "" {
		b.Skipf("11,100 conversions: run by make bench-backfill (%s=1) at -benchtime 1x", scaleBenchEnv)
	}
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			var mean, first, last, convert, cpu, cpuFirst, cpuLast, live, alloc, rss, heap float64
			for range b.N {
				b.StopTimer()
				s := newScaleRun(b, n, true)
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				resetPeakRSS()
				stopSampling, peakHeap := sampleHeap()
				cpu0 := processCPU()
				b.StartTimer()
				spool := s.run(b, 1)
				b.StopTimer()
				stopSampling()
				rss += float64(peakRSS()) / (1 << 20)
				heap += float64(*peakHeap) / (1 << 20)
				cpu += float64(processCPU()-cpu0-s.engine.cpu) / float64(time.Millisecond) / float64(n)
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				outcomes := allOutcomes(b, spool)
				if len(outcomes) != n {
					b.Fatalf("%d outcomes, want %d", len(outcomes), n)
				}
				o := s.overheads(outcomes)
				tenth := max(n/10, 1)
				mean += avgMS(o)
				first += avgMS(o[:tenth])
				last += avgMS(o[n-tenth:])
				if c := s.engine.cpuOverheads(); len(c) >= 10 {
					t := len(c) / 10
					cpuFirst += avgMS(c[:t])
					cpuLast += avgMS(c[len(c)-t:])
				}
				var conv time.Duration
				for _, d := range s.engine.took {
					conv += d
				}
				convert += float64(conv) / float64(time.Millisecond) / float64(n)
				live += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
				alloc += float64(after.TotalAlloc-before.TotalAlloc) / 1024 / float64(n)
			}
			k := float64(b.N)
			b.ReportMetric(mean/k, "overhead-ms/item")
			b.ReportMetric(first/k, "first10%-ms/item")
			b.ReportMetric(last/k, "last10%-ms/item")
			b.ReportMetric(convert/k, "convert+validate-ms/item")
			b.ReportMetric(cpu/k, "overhead-cpu-ms/item")
			b.ReportMetric(cpuFirst/k, "first10%-cpu-ms/item")
			b.ReportMetric(cpuLast/k, "last10%-cpu-ms/item")
			b.ReportMetric(live/k, "live-heap-MiB")
			b.ReportMetric(alloc/k, "alloc-KiB/item")
			b.ReportMetric(rss/k, "peak-rss-MiB")
			b.ReportMetric(heap/k, "peak-heap-MiB")
		})
	}
}

// sampleHeap reads the Go heap's in-use bytes every 10 ms (runtime/metrics,
// which does not stop the world) until stop is called; *peak is the
// largest reading.
func sampleHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value; v.Kind() == metrics.KindUint64 {
			*peak = max(*peak, v.Uint64())
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished; read() }, peak
}

func avgMS(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(time.Millisecond) / float64(len(ds))
}
