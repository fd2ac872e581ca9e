//go:build integration

package main

// The crash/fault suite: the CLI binary is killed with SIGKILL at
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
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/stac"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
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
		case d.IsDir() && (name == stateDirName || name == quarantineDirName || name == ".geomigrate-locks"):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasPrefix(name, ".geomigrate-tmp-"), strings.HasPrefix(rel, migration.DefaultStagingPrefix),
			strings.HasPrefix(rel, ".geomigrate-scratch/"): // the directory store's staged (scratch) objects
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
		if strings.HasSuffix(k, stac.ItemSuffix) || strings.HasPrefix(k, migration.CollectionsDir) || k == stac.CatalogFileName {
			continue // STAC metadata, judged by the stac and localrun tests
		}
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
	// Every file completed: a dead letter the SIGTERM round sent for a file
	// it rolled back is superseded, none is outstanding.
	if st := cli.run(t, stopPlan{}, perRun, "status", "--dest", dest); st.exit != 0 || !outstandingDeadLetters0(st.stdout) {
		t.Errorf("status after every file completed: exit %d, want 0 outstanding dead letters\n%s", st.exit, st.stdout)
	}
	fig.log(t)
}

// outstandingDeadLetters0 reports whether status's dead-letter line has
// nothing outstanding: no message, or only superseded ones.
func outstandingDeadLetters0(status string) bool {
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, "queue dead-letter ") {
			return strings.Contains(l, " 0 message(s)") || strings.Contains(l, ", 0 outstanding (")
		}
	}
	return false
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

// awsChaos is the S3 + DynamoDB stand-ins the AWS scenarios run against.
type awsChaos struct {
	s3    *s3.Client
	ddb   *dynamodb.Client
	src   string // source bucket; inputs under in/
	n     int
	clean map[string]string // dest key → sha256 of the clean run
}

// awsArgs is a migrate --backend aws of the source into s3://dst/out.
func (a *awsChaos) awsArgs(dst, table, stateDir string) []string {
	return []string{"migrate", "s3://" + a.src + "/in/", "--backend", "aws", "--dest", "s3://" + dst + "/out",
		"--state-table", table, "--create-table", "--state-dir", stateDir, "--progress", "plain"}
}

func (a *awsChaos) createBucket(t *testing.T, name string) {
	t.Helper()
	if _, err := a.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket %s: %v", name, err)
	}
}

// upload puts the corpus under s3://src/in/, eight at a time.
func (a *awsChaos) upload(t *testing.T, dir string, inputs []chaosInput) {
	t.Helper()
	a.createBucket(t, a.src)
	keys := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k)))
				if err == nil {
					_, err = a.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(a.src), Key: aws.String("in/" + k), Body: bytes.NewReader(b)})
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("upload %s: %w", k, err):
					default:
					}
				}
			}
		}()
	}
	for _, in := range inputs {
		keys <- in.key
	}
	close(keys)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// jobs reads every record of a state table.
func (a *awsChaos) jobs(t *testing.T, table string) []statestore.Job {
	t.Helper()
	var jobs []statestore.Job
	err := dynamostore.New(a.ddb, dynamostore.Options{Table: table}).List(context.Background(), "", func(j statestore.Job) error {
		jobs = append(jobs, j)
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", table, err)
	}
	return jobs
}

// outputs maps every object of a destination bucket to its SHA-256 and
// lists the staged ones. Quarantine bundles are not outputs (their keys
// name executions); what a killed run left of one in staging is listed
// apart, in bundleStaged.
func (a *awsChaos) outputs(t *testing.T, bucket string) (out map[string]string, staged, bundleStaged []string) {
	t.Helper()
	ctx := context.Background()
	out = map[string]string{}
	p := s3.NewListObjectsV2Paginator(a.s3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list s3://%s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.HasPrefix(k, quarantine.DefaultPrefix) {
				continue
			}
			if strings.HasPrefix(k, migration.DefaultStagingPrefix+"quarantine/") {
				bundleStaged = append(bundleStaged, k)
				continue
			}
			if strings.Contains(k, migration.DefaultStagingPrefix) || strings.Contains(k, ".geomigrate-probe-") {
				staged = append(staged, k)
				continue
			}
			obj, err := a.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
			if err != nil {
				t.Fatalf("get s3://%s/%s: %v", bucket, k, err)
			}
			sum, err := sha256Hex(obj.Body)
			obj.Body.Close()
			if err != nil {
				t.Fatalf("read s3://%s/%s: %v", bucket, k, err)
			}
			out[k] = sum
		}
	}
	return out, staged, bundleStaged
}

func awsKeyOf(j statestore.Job) string { return strings.TrimPrefix(j.SourceKey, "in/") }

// checkFaultedRun is what a run under S3 faults must leave behind,
// whatever it dead-lettered: every final key holds the output of a
// COMPLETED job (a routed job's outputs were rolled back), nothing in
// staging, and no final key written twice (writes, from the proxy: a lost
// answer is resolved by reading the key, not by copying again). The
// dataset collection is rewritten by every job that widens it, and is
// not counted.
func (a *awsChaos) checkFaultedRun(t *testing.T, dst string, writes map[string][]string, run string) {
	t.Helper()
	ctx := context.Background()
	status := map[string]statestore.Job{}
	for _, j := range a.jobs(t, dst) {
		status[j.SourceBucket+"/"+j.SourceKey] = j
	}
	out, staged, bundleStaged := a.outputs(t, dst)
	if left := append(staged, bundleStaged...); len(left) > 0 {
		t.Errorf("%s: %d object(s) left in staging, e.g. %v", run, len(left), left[:min(5, len(left))])
	}
	live := 0
	for k := range out {
		h, err := a.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String(k)})
		if err != nil {
			t.Fatalf("head s3://%s/%s: %v", dst, k, err)
		}
		src := h.Metadata["src-key"]
		if src == "" {
			continue // the dataset collection
		}
		if j, ok := status[src]; !ok || j.Status != statestore.Completed {
			t.Errorf("%s: final key %s holds the output of %s, whose job is %s (%s)", run, k, src, j.Status, j.ErrorName)
		}
		live++
	}
	twice := 0
	for k, ops := range writes {
		n := len(ops)
		key, ok := strings.CutPrefix(k, dst+"/")
		if !ok || strings.HasPrefix(key, migration.DefaultStagingPrefix) || strings.HasPrefix(key, quarantine.DefaultPrefix) ||
			strings.Contains(key, ".geomigrate-probe-") || strings.HasSuffix(key, "/"+stac.CollectionFileName) {
			continue
		}
		if n > 1 {
			twice++
			if twice <= 5 {
				t.Errorf("%s: final key %s written %d times: %v", run, key, n, ops)
			}
		}
	}
	t.Logf("%s: %d final keys of completed jobs, %d final key(s) written more than once, %d writes counted", run, live, twice, len(writes))
}

// TestChaosAWS runs the same inputs through --backend aws against the S3
// (versitygw) and DynamoDB (dynalite) stand-ins: once cleanly, then killed
// with SIGKILL at random points and finished, then through a proxy that
// faults a quarter of the S3 requests. Both end in the clean run's state.
func TestChaosAWS(t *testing.T) {
	c := s3Client(t)
	cfg := chaosConfig(t, 300)
	rng := rand.New(rand.NewPCG(uint64(cfg.seed), 2))
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	inputs := writeChaosCorpus(t, corpus, cfg.files, rng)
	// The SDK reads the stand-ins' endpoints (AWS_ENDPOINT_URL_*) itself.
	o := awsconfig.Options{}
	acfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9) // fresh names on a shared server
	a := &awsChaos{s3: c, ddb: awsconfig.NewDynamoDB(acfg, o), src: "chaos-src-" + suffix, n: cfg.files}
	a.upload(t, corpus, inputs)
	cli := newChaosCLI(t, dir)
	perRun := 10*time.Minute + time.Duration(cfg.files)*time.Second

	a.createBucket(t, "chaos-clean-"+suffix)
	clean := cli.run(t, stopPlan{}, perRun, a.awsArgs("chaos-clean-"+suffix, "chaos-clean-"+suffix, filepath.Join(dir, "clean"))...)
	if clean.exit != 0 {
		t.Fatalf("clean aws run: exit %d\n%s\n%s", clean.exit, clean.stdout, clean.stderr)
	}
	var staged, bundleStaged []string
	a.clean, staged, bundleStaged = a.outputs(t, "chaos-clean-"+suffix)
	checkEndState(t, inputs, a.jobs(t, "chaos-clean-"+suffix), awsKeyOf, a.clean, a.clean, append(staged, bundleStaged...))
	if t.Failed() {
		t.Fatal("the clean run is not a reference")
	}
	t.Logf("clean aws run: %d files in %s", cfg.files, clean.took.Round(time.Millisecond))

	t.Run("kill9", func(t *testing.T) {
		dst := "chaos-kill-" + suffix
		a.createBucket(t, dst)
		args := a.awsArgs(dst, dst, filepath.Join(dir, "kill"))
		fig := chaosFigures{scenario: "aws kill -9", files: cfg.files, clean: clean.took, faults: map[string]int{}}
		started := time.Now()
		remaining := cfg.files
		for round := range cfg.kills {
			plan := killPlan(rng, syscall.SIGKILL, remaining)
			r := cli.run(t, plan, perRun, args...)
			remaining -= workLines(r.stderr)
			t.Logf("round %d: SIGKILL after %d file(s) + %s: killed %v (exit %d, %s)", round+1, plan.after, plan.extra, r.killed, r.exit, r.took.Round(time.Millisecond))
			if r.killed {
				fig.kills++
			} else if r.exit != 0 {
				t.Fatalf("round %d ended by itself with exit %d\n%s\n%s", round+1, r.exit, r.stdout, r.stderr)
			}
		}
		final := cli.run(t, stopPlan{}, perRun, args...)
		fig.total = time.Since(started)
		if final.exit != 0 {
			t.Errorf("final run: exit %d\n%s\n%s", final.exit, final.stdout, localrun.OneLine(final.stderr, 4000))
		}
		rep := reportOf(t, final)
		fig.retries, fig.finalConverted = rep.Totals.Retries, rep.Totals.Completed
		out, staged, bundleStaged := a.outputs(t, dst)
		// A process killed while writing a bundle leaves its staged
		// files; on AWS the staging lifecycle rule expires them (the
		// local run sweeps them at its end).
		t.Logf("%d quarantine bundle file(s) left in staging by the kills", len(bundleStaged))
		checkEndState(t, inputs, a.jobs(t, dst), awsKeyOf, out, a.clean, staged)
		// The reruns took the killed runs' files over and completed them:
		// no dead-letter message was sent for any.
		if dlq, _ := os.ReadFile(filepath.Join(dir, "kill", "dead-letter.jsonl")); len(dlq) > 0 {
			t.Errorf("dead-letter messages after the kill storm and a complete rerun:\n%s", localrun.OneLine(string(dlq), 2000))
		}
		fig.log(t)
	})

	t.Run("s3faults", func(t *testing.T) {
		upstream, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_S3"))
		if err != nil {
			t.Fatal(err)
		}
		proxy := startFaultProxy(t, upstream, rand.New(rand.NewPCG(uint64(cfg.seed), 3)))
		dst := "chaos-fault-" + suffix
		a.createBucket(t, dst)
		// S3 through the proxy, DynamoDB straight to its stand-in; the
		// SDK's own back-off capped at milliseconds, as the state
		// machine's is scaled. Random faults can string five failures of
		// a bucket together and open its circuit breaker: its cooldown is
		// cut to a second too (the Wait is in whole seconds).
		fcli := newChaosCLI(t, dir, "AWS_ENDPOINT_URL_S3="+proxy.URL(), "GEOMIGRATE_AWS_MAX_BACKOFF=20ms",
			"GEOMIGRATE_BREAKER_COOLDOWN_SECONDS=1")
		args := a.awsArgs(dst, dst, filepath.Join(dir, "fault"))
		fig := chaosFigures{scenario: "aws S3 faults", files: cfg.files, clean: clean.took}
		started := time.Now()
		r := fcli.run(t, stopPlan{}, perRun, args...)
		rep := reportOf(t, r)
		fig.retries = rep.Totals.Retries
		a.checkFaultedRun(t, dst, proxy.takeWrites(), "faulted run")
		if r.exit != 0 {
			// Retries exhausted for some files (dead-letter queue): the
			// next run converts them; count it and say so.
			t.Logf("faulted run: exit %d, totals %+v; running again", r.exit, rep.Totals)
			for _, o := range rep.Files {
				if o.Status == localrun.StatusDeadLetter || o.Status == localrun.StatusFailed {
					t.Logf("  %s %s: %s %s", o.Status, o.Key, o.Error, localrun.OneLine(o.Message, 300))
				}
			}
			r = fcli.run(t, stopPlan{}, perRun, args...)
			rep2 := reportOf(t, r)
			fig.retries += rep2.Totals.Retries
			a.checkFaultedRun(t, dst, proxy.takeWrites(), "second faulted run")
			if r.exit != 0 {
				t.Errorf("second faulted run: exit %d, totals %+v", r.exit, rep2.Totals)
			}
		}
		fig.total = time.Since(started)
		fig.faults, fig.requests = proxy.counts()
		out, staged, bundleStaged := a.outputs(t, dst)
		checkEndState(t, inputs, a.jobs(t, dst), awsKeyOf, out, a.clean, append(staged, bundleStaged...))
		faults := 0
		for _, n := range fig.faults {
			faults += n
		}
		if fig.requests == 0 || float64(faults) < 0.2*float64(fig.requests) {
			t.Errorf("%d faults in %d requests: under the 20 %% the suite promises", faults, fig.requests)
		}
		fig.log(t)
	})
}

// faultProxy is a reverse proxy in front of the S3 server that fails a
// quarter of the requests: 503 SlowDown, 500 InternalError, a connection
// reset before any answer, and a response dropped after the server did the
// request (the client cannot know it succeeded). Start-up requests
// (HeadBucket, the conditional-copy probe, the source listing) are faulted
// like any other: the run retries them. It counts the writes the server
// did per key (a 2xx PutObject, CopyObject or CompleteMultipartUpload,
// answered or not).
type faultProxy struct {
	upstream  *url.URL
	transport *http.Transport
	srv       *httptest.Server

	mu       sync.Mutex
	rng      *rand.Rand
	byKind   map[string]int
	requests int
	writes   map[string][]string // "bucket/key" → the writes done (operation names)
}

const (
	faultSlowDown = "503 SlowDown"
	faultInternal = "500 InternalError"
	faultReset    = "connection reset"
	faultDropped  = "response dropped after success"
)

func startFaultProxy(t *testing.T, upstream *url.URL, rng *rand.Rand) *faultProxy {
	t.Helper()
	p := &faultProxy{upstream: upstream, rng: rng, byKind: map[string]int{}, writes: map[string][]string{},
		transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p
}

func (p *faultProxy) URL() string { return p.srv.URL }

func (p *faultProxy) counts() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for k, v := range p.byKind {
		m[k] = v
	}
	return m, p.requests
}

// takeWrites returns the writes counted so far and starts counting anew.
func (p *faultProxy) takeWrites() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.writes
	p.writes = map[string][]string{}
	return w
}

// written counts r if the server did it and it writes a whole object:
// PutObject or CopyObject (a PUT that is not a part), or
// CompleteMultipartUpload (a POST with an uploadId).
func (p *faultProxy) written(r *http.Request, status int) {
	q := r.URL.Query()
	whole := (r.Method == http.MethodPut && q.Get("partNumber") == "") ||
		(r.Method == http.MethodPost && q.Get("uploadId") != "")
	if !whole || status < 200 || status > 299 {
		return
	}
	op := "PutObject"
	switch {
	case r.Method == http.MethodPost:
		op = "CompleteMultipartUpload"
	case r.Header.Get("X-Amz-Copy-Source") != "":
		op = "CopyObject"
	}
	if m := r.Header.Get("If-None-Match") + r.Header.Get("If-Match"); m != "" {
		op += " if " + m
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := strings.TrimPrefix(r.URL.Path, "/")
	p.writes[k] = append(p.writes[k], op)
}

func (p *faultProxy) pick(r *http.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	kind := ""
	switch x := p.rng.Float64(); {
	case x < 0.08:
		kind = faultSlowDown
	case x < 0.14:
		kind = faultInternal
	case x < 0.20:
		kind = faultReset
	case x < 0.27:
		kind = faultDropped
	}
	if kind != "" {
		p.byKind[kind]++
	}
	return kind
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch kind := p.pick(r); kind {
	case faultSlowDown, faultInternal:
		_, _ = io.Copy(io.Discard, r.Body)
		status, code := http.StatusServiceUnavailable, "SlowDown"
		if kind == faultInternal {
			status, code = http.StatusInternalServerError, "InternalError"
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the chaos proxy</Message><RequestId>chaos</RequestId></Error>`, code)
	case faultReset:
		p.hangUp(w, true)
	case faultDropped:
		resp, err := p.forward(r)
		if err == nil {
			// A CompleteMultipartUpload's failure can come in a 200's body;
			// read whole, it is counted as the client would see it.
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			p.written(r, proxyStatus(resp.StatusCode, b))
		}
		p.hangUp(w, false)
	default:
		resp, err := p.forward(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			p.hangUp(w, true)
			return
		}
		p.written(r, proxyStatus(resp.StatusCode, b))
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
	}
}

// proxyStatus is a response's status, or 500 for a 200 whose body is an
// S3 error (CompleteMultipartUpload and CopyObject may answer so).
func proxyStatus(code int, body []byte) int {
	if code == http.StatusOK && bytes.Contains(body[:min(len(body), 200)], []byte("<Error>")) {
		return http.StatusInternalServerError
	}
	return code
}

// forward sends the request on unchanged: same Host header (it is signed),
// same body and length.
func (p *faultProxy) forward(r *http.Request) (*http.Response, error) {
	u := *p.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	body := io.Reader(r.Body)
	if r.ContentLength == 0 {
		body = http.NoBody
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host, out.ContentLength = r.Host, r.ContentLength
	return p.transport.RoundTrip(out)
}

// hangUp closes the client's connection without an answer; reset sends a
// TCP RST instead of a FIN.
func (p *faultProxy) hangUp(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}
