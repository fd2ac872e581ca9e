package localrun_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// memQueue records what the state machine sends.
type memQueue struct {
	mu   sync.Mutex
	msgs []string
}

func (q *memQueue) Send(_ context.Context, body string) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, body)
	return "m" + string(rune('0'+len(q.msgs))), nil
}

func (q *memQueue) messages(t *testing.T) []migration.RouteMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []migration.RouteMessage
	for _, b := range q.msgs {
		var m migration.RouteMessage
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("queue message is not a RouteMessage: %v: %s", err, b)
		}
		out = append(out, m)
	}
	return out
}

var (
	engineOnce sync.Once
	engine     *gdal.Engine
	engineErr  error
)

func gdalEngine(t testing.TB) *gdal.Engine {
	t.Helper()
	engineOnce.Do(func() { engine, engineErr = gdal.New() })
	if engineErr != nil {
		t.Fatalf("GDAL: %v", engineErr)
	}
	return engine
}

var quiet = slog.New(slog.DiscardHandler)

// countingEngine counts conversions and can hold them until released.
type countingEngine struct {
	recipe.Engine
	mu    sync.Mutex
	calls int
	gate  chan struct{}
}

func (e *countingEngine) Convert(ctx context.Context, src, work string, r recipe.Recipe) ([]recipe.Output, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	if e.gate != nil {
		<-e.gate
	}
	return e.Engine.Convert(ctx, src, work, r)
}

func (e *countingEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// pipeline is one local deployment: source dir, dest dir, state, queues.
type pipeline struct {
	srcDir, destDir string
	store           objectstore.Store
	tracker         *statestore.Tracker
	engine          *countingEngine
	remediation     *memQueue
	deadLetter      *memQueue
	cfg             migration.Config
	clock           *asl.FakeClock
	validate        migration.OutputValidator // validate.Output unless a test wraps it
	rules           migration.RuleBook        // Classify's run-time rules (nil: the built-in ones only)
	deadline        migration.JobDeadline     // HashCheck's job deadline (nil: none but the state machine's)
}

func newPipeline(t testing.TB, srcDir string) *pipeline {
	t.Helper()
	p := &pipeline{srcDir: srcDir, destDir: t.TempDir(), remediation: &memQueue{}, deadLetter: &memQueue{},
		engine: &countingEngine{Engine: gdalEngine(t)}, clock: asl.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))}
	store, err := dirstore.New("", dirstore.WithBucketDir("src", srcDir), dirstore.WithBucketDir("dest", p.destDir))
	if err != nil {
		t.Fatal(err)
	}
	p.store = store
	p.tracker = statestore.NewTracker(statestoretest.NewMemory())
	p.cfg = migration.Config{DestBucket: "dest", WorkDir: t.TempDir(), Recipe: recipe.Recipe{EngineVersion: p.engine.Version(), ToolVersion: "test"}}
	return p
}

func (p *pipeline) executor(t testing.TB, store objectstore.Store, opts ...asl.Option) *asl.Executor {
	t.Helper()
	finger := migration.StoreFingerprinter{Store: store, Threshold: 1 << 30}
	check := p.validate
	if check == nil {
		check = validate.Output
	}
	h := localrun.Handlers{
		HashCheck: migration.NewHashCheck(p.cfg, store, p.tracker, finger, quiet).WithJobDeadline(p.deadline).WithClock(p.clock.Now),
		Convert:   migration.NewConvert(p.cfg, store, p.tracker, p.engine, check, quiet),
		Promote:   migration.NewPromote(p.cfg, store, p.tracker, quiet),
		Classify:  migration.NewClassify(p.tracker, nil, quiet).WithRuleBook(p.rules),
	}
	exec, err := localrun.NewExecutor(h, localrun.Queues{Remediation: p.remediation, DeadLetter: p.deadLetter},
		append([]asl.Option{asl.WithClock(p.clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func (p *pipeline) run(t *testing.T, store objectstore.Store, keys []string, opts ...asl.Option) map[string]localrun.Outcome {
	t.Helper()
	var inputs []migration.Source
	for _, k := range keys {
		inputs = append(inputs, migration.Source{Bucket: "src", Key: k, KeyEncoding: "plain", DatasetID: "samples"})
	}
	w := 2
	if os.Getenv("W1") != "" {
		w = 1
	}
	r := &localrun.Runner{Executor: p.executor(t, store, opts...), Workers: w}
	out := map[string]localrun.Outcome{}
	for _, o := range r.Run(context.Background(), inputs) {
		if _, dup := out[o.Key]; dup {
			t.Fatalf("%s reported twice", o.Key)
		}
		out[o.Key] = o
	}
	if len(out) != len(keys) {
		t.Fatalf("%d outcomes for %d inputs", len(out), len(keys))
	}
	return out
}

// samples writes the demo data and returns the keys a migrate run takes.
func samples(t *testing.T) (string, []sampledata.Sample, []string) {
	t.Helper()
	gdalEngine(t)
	dir := t.TempDir()
	ss, err := sampledata.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range ss {
		keys = append(keys, relKey(t, dir, s.Path))
	}
	sort.Strings(keys)
	return dir, ss, keys
}

func relKey(t *testing.T, dir, path string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

func sha(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// outputs maps every final object in dest to its SHA-256.
func outputs(t *testing.T, p *pipeline) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := p.store.List(context.Background(), "dest", "", func(o objectstore.Object) error {
		if strings.HasPrefix(o.Key, migration.DefaultStagingPrefix) {
			t.Errorf("staging object %s left behind", o.Key)
		}
		m[o.Key] = sha(t, filepath.Join(p.destDir, filepath.FromSlash(o.Key)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const cogValidator = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_cloud_optimized_geotiff.py"

func TestSampleRunEndsEveryFileInOneStateAndIsIdempotent(t *testing.T) {
	dir, ss, keys := samples(t)
	p := newPipeline(t, dir)
	first := p.run(t, p.store, keys)

	for _, s := range ss {
		rel, _ := filepath.Rel(dir, s.Path)
		o := first[filepath.ToSlash(rel)]
		switch {
		case s.Bad && o.Status != localrun.StatusRemediation:
			t.Errorf("bad sample %s: status %s (%s %s), want remediation", rel, o.Status, o.Error, o.Message)
		case s.Bad && (o.Code == "" || o.Message == ""):
			t.Errorf("bad sample %s routed without a readable reason: %+v", rel, o)
		case !s.Bad && o.Status != localrun.StatusCompleted:
			t.Errorf("good sample %s: status %s (%s: %s)", rel, o.Status, o.Error, o.Message)
		}
		if s.Bad {
			rec, err := p.tracker.Get(context.Background(), o.JobID)
			if err != nil || rec.Status != statestore.Remedial {
				t.Errorf("bad sample %s: state %+v, %v; want REMEDIAL", rel, rec.Status, err)
			}
		}
	}
	if n := len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d message(s) in the DLQ on a fault-free run", n)
	}
	msgs := p.remediation.messages(t)
	for _, m := range msgs {
		if m.Code == "" || m.Hint == "" || m.Replay.Key == "" {
			t.Errorf("remediation message lacks code, hint or replay input: %+v", m)
		}
	}

	outs := outputs(t, p)
	if len(outs) == 0 {
		t.Fatal("no outputs")
	}
	if _, err := os.Stat(cogValidator); err == nil {
		for key := range outs {
			if !strings.HasSuffix(key, ".tif") {
				continue
			}
			cmd := exec.Command("/usr/bin/python3", cogValidator, filepath.Join(p.destDir, filepath.FromSlash(key)))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GDAL's COG validator rejects %s: %v\n%s", key, err, out)
			}
		}
	} else {
		t.Errorf("GDAL's COG validator is not installed (%s): run make deps", cogValidator)
	}

	// Second run: nothing converted, every file skipped.
	calls := p.engine.count()
	second := p.run(t, p.store, keys)
	for k, o := range second {
		if o.Status != localrun.StatusSkipped {
			t.Errorf("second run: %s is %s, want skipped", k, o.Status)
		}
	}
	if p.engine.count() != calls {
		t.Fatalf("second run converted %d file(s)", p.engine.count()-calls)
	}
	if got := len(p.remediation.messages(t)); got != len(msgs) {
		t.Errorf("second run routed %d more message(s)", got-len(msgs))
	}

	// Change one good source: only it is converted again.
	var changed string
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" && strings.HasSuffix(s.Path, ".tif") {
			changed, _ = filepath.Rel(dir, s.Path)
			break
		}
	}
	if changed == "" {
		t.Fatal("no good GeoTIFF sample to change")
	}
	if err := exec.Command("gdal_edit.py", "-mo", "EDITED=yes", filepath.Join(dir, changed)).Run(); err != nil {
		t.Fatalf("gdal_edit.py: %v", err)
	}
	third := p.run(t, p.store, keys)
	for k, o := range third {
		want := localrun.StatusSkipped
		if k == filepath.ToSlash(changed) {
			want = localrun.StatusCompleted
		}
		if o.Status != want {
			t.Errorf("after changing %s: %s is %s, want %s", changed, k, o.Status, want)
		}
	}
	if p.engine.count() != calls+1 {
		t.Fatalf("after changing one file %d conversions ran", p.engine.count()-calls)
	}
}

// TestLeaseStopsASecondExecution runs two executions of one file at once:
// the second finds the first's lease and skips; one conversion happens.
func TestLeaseStopsASecondExecution(t *testing.T) {
	dir, ss, _ := samples(t)
	var key string
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" {
			key, _ = filepath.Rel(dir, s.Path)
			break
		}
	}
	p := newPipeline(t, dir)
	p.engine.gate = make(chan struct{})
	first := make(chan map[string]localrun.Outcome)
	go func() { first <- p.run(t, p.store, []string{key}) }()
	// Then the first execution is converting, its lease held.
	waitFor(t, "the first execution's conversion to start", func() bool { return p.engine.count() > 0 })
	second := p.run(t, p.store, []string{key})
	close(p.engine.gate)
	one := <-first
	if o := second[key]; o.Status != localrun.StatusSkipped || o.Reason != migration.ReasonInProgress {
		t.Fatalf("second execution: %s/%s, want skipped/in_progress", o.Status, o.Reason)
	}
	if o := one[key]; o.Status != localrun.StatusCompleted {
		t.Fatalf("first execution: %+v", o)
	}
	if p.engine.count() != 1 {
		t.Fatalf("%d conversions", p.engine.count())
	}
}

// TestAnInterruptedRunReleasesItsLease: after Ctrl-C the next run converts
// the file at once instead of finding it in progress until the lease
// expires.
func TestAnInterruptedRunReleasesItsLease(t *testing.T) {
	dir, ss, _ := samples(t)
	var key string
	for _, s := range ss {
		if !s.Bad && s.Kind == "raster" {
			key = relKey(t, dir, s.Path)
			break
		}
	}
	p := newPipeline(t, dir)
	p.engine.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan localrun.Outcome, 1)
	r := &localrun.Runner{Executor: p.executor(t, p.store), Workers: 1,
		Release: func(ctx context.Context, id, execution string) error {
			return p.tracker.Release(ctx, id, execution, "test")
		}}
	go func() {
		done <- r.Run(ctx, []migration.Source{{Bucket: "src", Key: key, KeyEncoding: "plain", DatasetID: "samples"}})[0]
	}()
	waitFor(t, "the conversion to start", func() bool { return p.engine.count() > 0 })
	cancel()
	first := <-done
	close(p.engine.gate) // the abandoned conversion may finish; later ones pass
	if first.Status != localrun.StatusFailed || first.Error != "Aborted" || first.JobID == "" {
		t.Fatalf("interrupted run: %+v", first)
	}
	if o := p.run(t, p.store, []string{key})[key]; o.Status != localrun.StatusCompleted {
		t.Fatalf("next run: %s/%s, want completed at once", o.Status, o.Reason)
	}
}
