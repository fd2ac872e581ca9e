//go:build integration

package main

// The crash/fault suite (issue 9): the CLI binary is killed with SIGKILL at
// random points of a run, stopped with SIGTERM, and run against an S3
// server behind a proxy that injects faults; every time the end state is
// checked against a clean run of the same inputs. `make test` runs it at a
// few hundred files; `make chaos N=…` at scale. GEOMIGRATE_CHAOS_SEED
// replays the random choices of a failed run (the kill delays, the corpus,
// the proxy's faults; not the scheduling of the processes).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// chaosSettings are the suite's knobs, from the environment.
type chaosSettings struct {
	files int   // inputs per scenario
	kills int   // SIGKILL rounds before the final run
	seed  int64 // every random choice derives from it
}

func chaosConfig(t *testing.T, defaultFiles int) chaosSettings {
	t.Helper()
	c := chaosSettings{files: defaultFiles, kills: 3, seed: time.Now().UnixNano() % 1e9}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"GEOMIGRATE_CHAOS_N", &c.files}, {"GEOMIGRATE_CHAOS_KILLS", &c.kills}} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want a non-negative integer", v.name, s)
			}
			*v.dst = n
		}
	}
	if s := os.Getenv("GEOMIGRATE_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("GEOMIGRATE_CHAOS_SEED=%q: %v", s, err)
		}
		c.seed = n
	}
	t.Logf("chaos: %d files, %d kill round(s), seed %d (GEOMIGRATE_CHAOS_SEED=%d replays the random choices)", c.files, c.kills, c.seed, c.seed)
	return c
}

// chaosInput is one generated source file.
type chaosInput struct {
	key string
	bad bool
}

// writeChaosCorpus writes n tiny inputs under dir: GeoTIFFs (16×16 Byte,
// EPSG:32633, random pixels) and GeoJSON point layers, one in twenty a
// deliberately broken file (a TIFF header over garbage, a truncated
// GeoJSON) that must go to remediation.
func writeChaosCorpus(t *testing.T, dir string, n int, rng *rand.Rand) []chaosInput {
	t.Helper()
	var out []chaosInput
	for i := range n {
		sub := fmt.Sprintf("d%02d", i%10)
		var name string
		var body []byte
		bad := i%20 == 7
		switch {
		case bad && i%40 == 7:
			name = fmt.Sprintf("broken_%05d.tif", i)
			body = append([]byte("II*\x00"), randomBytes(rng, 200)...)
		case bad:
			name = fmt.Sprintf("truncated_%05d.geojson", i)
			body = []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":` + strconv.Itoa(i))
		case i%2 == 0:
			name = fmt.Sprintf("grid_%05d.tif", i)
			body = tinyGeoTIFF(16, 16, randomBytes(rng, 16*16), 500000+float64(i)*480, 5000000, 30, 32633)
		default:
			name = fmt.Sprintf("points_%05d.geojson", i)
			body = tinyGeoJSON(i, rng)
		}
		p := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, chaosInput{key: sub + "/" + name, bad: bad})
	}
	return out
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

func tinyGeoJSON(i int, rng *rand.Rand) []byte {
	var feats []string
	for j := range 3 {
		lon, lat := -10+20*rng.Float64(), 35+20*rng.Float64()
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","properties":{"id":%d,"name":"p-%d-%d","value":%.3f},"geometry":{"type":"Point","coordinates":[%.6f,%.6f]}}`,
			i*10+j, i, j, rng.Float64()*100, lon, lat))
	}
	return []byte(`{"type":"FeatureCollection","features":[` + strings.Join(feats, ",") + "]}\n")
}

// tinyGeoTIFF encodes an uncompressed single-strip Byte GeoTIFF: pixel
// scale, tie point and a GeoKey directory naming a projected EPSG code.
func tinyGeoTIFF(w, h int, pix []byte, x0, y0, res float64, epsg uint16) []byte {
	const (
		tShort  = 3
		tLong   = 4
		tDouble = 12
	)
	type entry struct {
		tag, typ uint16
		count    uint32
		value    uint32 // inline value or offset
	}
	const nEntries = 14
	ifdEnd := uint32(8 + 2 + nEntries*12 + 4)
	scaleOff := ifdEnd
	tieOff := scaleOff + 3*8
	keysOff := tieOff + 6*8
	geoKeys := []uint16{1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, epsg}
	pixOff := keysOff + uint32(2*len(geoKeys))
	entries := []entry{
		{256, tShort, 1, uint32(w)}, {257, tShort, 1, uint32(h)}, {258, tShort, 1, 8}, {259, tShort, 1, 1},
		{262, tShort, 1, 1}, {273, tLong, 1, pixOff}, {277, tShort, 1, 1}, {278, tShort, 1, uint32(h)},
		{279, tLong, 1, uint32(len(pix))}, {284, tShort, 1, 1}, {339, tShort, 1, 1},
		{33550, tDouble, 3, scaleOff}, {33922, tDouble, 6, tieOff}, {34735, tShort, uint32(len(geoKeys)), keysOff},
	}
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("II")
	_ = binary.Write(&b, le, uint16(42))
	_ = binary.Write(&b, le, uint32(8))
	_ = binary.Write(&b, le, uint16(len(entries)))
	for _, e := range entries {
		_ = binary.Write(&b, le, e.tag)
		_ = binary.Write(&b, le, e.typ)
		_ = binary.Write(&b, le, e.count)
		if e.typ == tShort && e.count == 1 {
			_ = binary.Write(&b, le, uint16(e.value))
			_ = binary.Write(&b, le, uint16(0))
		} else {
			_ = binary.Write(&b, le, e.value)
		}
	}
	_ = binary.Write(&b, le, uint32(0))
	for _, f := range []float64{res, res, 0, 0, 0, 0, x0, y0, 0} {
		_ = binary.Write(&b, le, math.Float64bits(f))
	}
	for _, k := range geoKeys {
		_ = binary.Write(&b, le, k)
	}
	b.Write(pix)
	return b.Bytes()
}

// chaosCLI runs the geomigrate binary with the suite's environment.
type chaosCLI struct {
	bin, dir string
	env      []string
}

func newChaosCLI(t *testing.T, dir string, extraEnv ...string) chaosCLI {
	env := append(os.Environ(),
		"AWS_ACCESS_KEY_ID=geomigrate-test", "AWS_SECRET_ACCESS_KEY=geomigrate-test-secret", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
		// Retries keep the definition's policy at 1 % of its waits.
		localrun.RetryWaitScaleEnv+"=0.01")
	return chaosCLI{bin: cliBinary(t), dir: dir, env: append(env, extraEnv...)}
}

// chaosResult is how one run of the binary ended.
type chaosResult struct {
	stdout, stderr string
	exit           int
	killed         bool // ended by the signal the test sent
	took           time.Duration
}

// stopPlan says when a run is stopped: sig is sent once the run has
// printed `after` progress lines of files it worked on (converted or
// routed; skipped ones do not count), plus a short delay that lands the
// signal inside the next file's steps. A zero plan lets the run finish.
type stopPlan struct {
	sig   syscall.Signal
	after int
	extra time.Duration
}

// run starts the binary and stops it as planned. Every run has a
// deadline; passing it fails the test.
func (c chaosCLI) run(t *testing.T, plan stopPlan, deadline time.Duration, args ...string) chaosResult {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	var out, errOut syncBuffer
	cmd.Stdout = &out
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	worked := make(chan struct{}, 1<<16)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			errOut.Write([]byte(line + "\n"))
			if isWorkLine(line) {
				worked <- struct{}{}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		<-scanned
		done <- err
	}()
	var signalled bool
	var sigC <-chan time.Time
	seen := 0
	workC := (<-chan struct{})(worked)
	if plan.sig == 0 {
		workC = nil
	} else if plan.after <= 0 {
		sigC = time.After(plan.extra)
		workC = nil
	}
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-workC:
			if seen++; seen >= plan.after {
				sigC, workC = time.After(plan.extra), nil
			}
		case <-sigC:
			signalled = cmd.Process.Signal(plan.sig) == nil
			sigC = nil
		case <-limit.C:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("geomigrate %s did not end within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), deadline, out.String(), errOut.String())
		}
	}
	r := chaosResult{stdout: out.String(), stderr: errOut.String(), took: time.Since(start), killed: signalled}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("geomigrate %v: %v", args, err)
	}
	return r
}

// isWorkLine: a --progress plain line of a file the run converted or
// routed.
func isWorkLine(line string) bool {
	if !strings.HasPrefix(line, "[") {
		return false
	}
	f := strings.Fields(line)
	return len(f) > 1 && f[1] != localrun.StatusSkipped
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// workLines counts the files a run worked on, from its progress lines.
func workLines(stderr string) int {
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if isWorkLine(l) {
			n++
		}
	}
	return n
}

// reportOf reads the run report a finished run names on stdout.
func reportOf(t *testing.T, r chaosResult) localrun.Report {
	t.Helper()
	i := strings.LastIndex(r.stdout, "report: ")
	if i < 0 {
		t.Fatalf("no report (exit %d)\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	}
	path := strings.TrimSpace(strings.SplitN(r.stdout[i+len("report: "):], "\n", 2)[0])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep localrun.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	return rep
}

// localJobs reads every record of a local state store (the CLI has exited).
func localJobs(t *testing.T, dest string) []statestore.Job {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(dest, stateDirName, "state.db"))
	if err != nil {
		t.Fatalf("open the state store: %v", err)
	}
	defer db.Close()
	var jobs []statestore.Job
	if err := db.List(context.Background(), "", func(j statestore.Job) error {
		jobs = append(jobs, j)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// localOutputs maps every final object under dest to its SHA-256, and lists
// what must not be there: staged objects and temporary files.
func localOutputs(t *testing.T, dest string) (outputs map[string]string, leftovers []string) {
	t.Helper()
	outputs = map[string]string{}
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		inMeta := filepath.Base(filepath.Dir(p)) == ".geomigrate-meta"
		switch {
		case d.IsDir() && (name == stateDirName || name == ".geomigrate-locks"):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasPrefix(name, ".geomigrate-tmp-"), strings.HasPrefix(rel, migration.DefaultStagingPrefix):
			leftovers = append(leftovers, rel)
			return nil
		case inMeta:
			return nil // a sidecar
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		outputs[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return outputs, leftovers
}

// checkEndState is the suite's verdict, the same for every scenario:
// every input has exactly one record, in the terminal state the clean run
// gave it; no job reached COMPLETED twice; the outputs are exactly the clean
// run's, byte for byte; nothing is left in staging.
func checkEndState(t *testing.T, inputs []chaosInput, jobs []statestore.Job, keyOf func(statestore.Job) string,
	outputs, clean map[string]string, leftovers []string) {
	t.Helper()
	byKey := map[string][]statestore.Job{}
	for _, j := range jobs {
		byKey[keyOf(j)] = append(byKey[keyOf(j)], j)
	}
	for _, in := range inputs {
		recs := byKey[in.key]
		if len(recs) != 1 {
			t.Errorf("%s: %d state records, want exactly 1", in.key, len(recs))
			continue
		}
		j := recs[0]
		want := statestore.Completed
		if in.bad {
			want = statestore.Remedial
		}
		if j.Status != want {
			t.Errorf("%s: %s (%s: %s), want %s", in.key, j.Status, j.ErrorName, localrun.OneLine(j.ErrorCause, 200), want)
		}
		completions := 0
		for _, tr := range j.History {
			if tr.To == statestore.Completed && tr.From != statestore.Completed {
				completions++
			}
		}
		if want == statestore.Completed && completions != 1 {
			t.Errorf("%s: reached COMPLETED %d times in its history, want once", in.key, completions)
		}
	}
	if len(byKey) != len(inputs) {
		t.Errorf("%d sources in the state store, %d inputs", len(byKey), len(inputs))
	}
	for k, sum := range clean {
		switch got, ok := outputs[k]; {
		case !ok:
			t.Errorf("output %s missing", k)
		case got != sum:
			t.Errorf("output %s differs from the clean run's (sha256 %s, clean %s)", k, got, sum)
		}
	}
	for k := range outputs {
		if _, ok := clean[k]; !ok {
			t.Errorf("output %s is not among the clean run's", k)
		}
	}
	if len(leftovers) > 0 {
		sort.Strings(leftovers)
		t.Errorf("%d staged or temporary file(s) left, e.g. %v", len(leftovers), leftovers[:min(5, len(leftovers))])
	}
}

// killPlan draws a point inside a run that has about remaining files to
// work on: after 1 … 90 % of them, plus up to 40 ms into the next.
func killPlan(rng *rand.Rand, sig syscall.Signal, remaining int) stopPlan {
	return stopPlan{sig: sig, after: 1 + rng.IntN(max(1, remaining*9/10)), extra: time.Duration(rng.IntN(40)) * time.Millisecond}
}

// chaosFigures are what `make chaos` prints.
type chaosFigures struct {
	scenario       string
	files, kills   int
	faults         map[string]int
	requests       int
	retries        int
	clean, total   time.Duration
	finalConverted int
}

func (f chaosFigures) log(t *testing.T) {
	faults := 0
	var kinds []string
	for k, n := range f.faults {
		faults += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	overhead := float64(f.total-f.clean) / float64(max(f.files, 1))
	line := fmt.Sprintf("CHAOS %s: files %d, kills %d, faults injected %d of %d requests [%s], state-machine retries %d, clean run %s, chaos runs %s, per-file overhead %s",
		f.scenario, f.files, f.kills, faults, f.requests, strings.Join(kinds, ", "), f.retries,
		f.clean.Round(time.Millisecond), f.total.Round(time.Millisecond), time.Duration(overhead).Round(time.Microsecond))
	t.Log(line)
	if p := os.Getenv("GEOMIGRATE_CHAOS_FIGURES"); p != "" {
		fh, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(fh, line)
			fh.Close()
		}
	}
}

// TestChaosLocalKill9 kills a local run with SIGKILL at random points,
// several times, stops one with SIGTERM (report and state store must agree),
// then lets a run finish: the end state is the clean run's.
func TestChaosLocalKill9(t *testing.T) {
	cfg := chaosConfig(t, 300)
	rng := rand.New(rand.NewPCG(uint64(cfg.seed), 1))
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	inputs := writeChaosCorpus(t, corpus, cfg.files, rng)
	cli := newChaosCLI(t, dir)
	perRun := 10*time.Minute + time.Duration(cfg.files)*200*time.Millisecond
	migrateArgs := func(dest string) []string {
		return []string{"migrate", corpus, "--dest", dest, "--progress", "plain"}
	}

	cleanDest := filepath.Join(dir, "clean")
	clean := cli.run(t, stopPlan{}, perRun, migrateArgs(cleanDest)...)
	if clean.exit != 0 {
		t.Fatalf("clean run: exit %d\n%s\n%s", clean.exit, clean.stdout, clean.stderr)
	}
	cleanOut, cleanLeft := localOutputs(t, cleanDest)
	checkEndState(t, inputs, localJobs(t, cleanDest), func(j statestore.Job) string { return j.SourceKey }, cleanOut, cleanOut, cleanLeft)
	if t.Failed() {
		t.Fatal("the clean run is not a reference")
	}
	// The outputs are valid (COG rules, GeoParquet), judged once here; the
	// chaos runs must reproduce them byte for byte.
	var paths []string
	for k := range cleanOut {
		paths = append(paths, filepath.Join(cleanDest, filepath.FromSlash(k)))
	}
	sort.Strings(paths)
	if v := cli.run(t, stopPlan{}, perRun, append([]string{"validate"}, paths...)...); v.exit != 0 {
		t.Fatalf("clean outputs do not validate: exit %d\n%s\n%s", v.exit, localrun.OneLine(v.stdout, 2000), v.stderr)
	}
	t.Logf("clean run: %d files in %s", cfg.files, clean.took.Round(time.Millisecond))

	fig := chaosFigures{scenario: "local kill -9", files: cfg.files, clean: clean.took, faults: map[string]int{}}
	dest := filepath.Join(dir, "chaos")
	started := time.Now()
	remaining := cfg.files
	for round := range cfg.kills {
		plan := killPlan(rng, syscall.SIGKILL, remaining)
		r := cli.run(t, plan, perRun, migrateArgs(dest)...)
		remaining -= workLines(r.stderr)
		t.Logf("round %d: SIGKILL after %d file(s) + %s: killed %v (exit %d, %s)", round+1, plan.after, plan.extra, r.killed, r.exit, r.took.Round(time.Millisecond))
		if r.killed {
			fig.kills++
		} else if r.exit != 0 {
			t.Fatalf("round %d ended by itself with exit %d\n%s\n%s", round+1, r.exit, r.stdout, r.stderr)
		}
	}

	// SIGTERM: the run stops starting files, lets running ones finish, and
	// its report agrees with the state store.
	plan := killPlan(rng, syscall.SIGTERM, remaining)
	term := cli.run(t, plan, perRun, migrateArgs(dest)...)
	t.Logf("SIGTERM after %d file(s) + %s: exit %d in %s", plan.after, plan.extra, term.exit, term.took.Round(time.Millisecond))
	if term.killed {
		checkReportAgreesWithState(t, reportOf(t, term), localJobs(t, dest))
		if _, left := localOutputs(t, dest); len(left) > 0 {
			t.Errorf("after SIGTERM: staged or temporary files left: %v", left[:min(5, len(left))])
		}
	}

	final := cli.run(t, stopPlan{}, perRun, migrateArgs(dest)...)
	fig.total = time.Since(started)
	if final.exit != 0 {
		t.Errorf("final run: exit %d\n%s\n%s", final.exit, final.stdout, localrun.OneLine(final.stderr, 4000))
	}
	rep := reportOf(t, final)
	fig.retries, fig.finalConverted = rep.Totals.Retries, rep.Totals.Completed
	out, left := localOutputs(t, dest)
	checkEndState(t, inputs, localJobs(t, dest), func(j statestore.Job) string { return j.SourceKey }, out, cleanOut, left)
	fig.log(t)
}

// checkReportAgreesWithState: a run stopped by SIGTERM reports "completed"
// exactly for the files its executions brought to COMPLETED, and leaves no
// job of its own unfinished (PROCESSING or RETRYING).
func checkReportAgreesWithState(t *testing.T, rep localrun.Report, jobs []statestore.Job) {
	t.Helper()
	mine := map[string]localrun.Outcome{} // execution name → outcome
	for _, o := range rep.Files {
		if o.Execution != "" {
			mine[o.Execution] = o
		}
	}
	for _, j := range jobs {
		name := j.LeaseOwner[strings.LastIndexByte(j.LeaseOwner, ':')+1:]
		o, ours := mine[name]
		if !ours {
			continue
		}
		switch {
		case j.Status == statestore.Processing || j.Status == statestore.Retrying:
			t.Errorf("after SIGTERM %s is %s under the stopped run's execution %s", j.SourceKey, j.Status, name)
		case j.Status == statestore.Completed && o.Status != localrun.StatusCompleted:
			t.Errorf("after SIGTERM %s is COMPLETED in the state store, %q in the report (%s: %s)", j.SourceKey, o.Status, o.Error, o.Message)
		}
	}
	for _, o := range rep.Files {
		if o.Status != localrun.StatusCompleted {
			continue
		}
		found := false
		for _, j := range jobs {
			if j.ID == o.JobID && j.Status == statestore.Completed {
				found = true
			}
		}
		if !found {
			t.Errorf("after SIGTERM %s is completed in the report but its job %s is not COMPLETED", o.Key, o.JobID)
		}
	}
	t.Logf("SIGTERM report: %+v", rep.Totals)
}

// sha256Hex is the hex SHA-256 of a reader's bytes.
func sha256Hex(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
