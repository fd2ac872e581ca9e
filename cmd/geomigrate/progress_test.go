package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/vbauerster/cupwriter"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

func TestPlainProgressLines(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    localrun.Outcome
		want string
	}{
		{"completed", localrun.Outcome{Bucket: "b", Key: "k.tif", Status: localrun.StatusCompleted, Outputs: []string{"k.tif"}, BytesOut: 2048, Duration: 1500 * time.Millisecond},
			"[1/3] completed   b/k.tif k.tif (2.0 KiB) 1.5s"},
		{"remediation, message on one line", localrun.Outcome{Bucket: "b", Key: "bad.tif", Status: localrun.StatusRemediation, Code: "MissingCRS", Message: "no\nCRS"},
			"[1/3] remediation b/bad.tif MissingCRS: no CRS 0s"},
		{"failed", localrun.Outcome{Bucket: "b", Key: "x.tif", Status: localrun.StatusFailed, Error: "States.Timeout", Message: "too slow"},
			"[1/3] failed      b/x.tif States.Timeout: too slow 0s"},
		{"ignored", localrun.Outcome{Bucket: "b", Key: "README.txt", Status: localrun.StatusIgnored, Reason: "not geospatial"},
			"[1/3] ignored     b/README.txt not geospatial 0s"},
		{"warnings counted", localrun.Outcome{Bucket: "b", Key: "v.gpkg", Status: localrun.StatusCompleted, Outputs: []string{"v.parquet"}, Warnings: []string{"promoted to multi", "M dropped"}},
			"[1/3] completed   b/v.gpkg v.parquet (0 B)  warnings: 2 (promoted to multi) 0s"},
		{"control characters in a key are quoted", localrun.Outcome{Bucket: "b", Key: "a\nb.tif", Status: localrun.StatusSkipped, Reason: "already_migrated"},
			`[1/3] skipped     b/"a\nb.tif" already_migrated 0s`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(progressPlain, &buf, 3, nil, 2)
			p.done(tt.o)
			p.finish(nil, "")
			if got := buf.String(); got != tt.want+"\n" {
				t.Errorf("got  %q\nwant %q", got, tt.want+"\n")
			}
		})
	}
	var buf bytes.Buffer
	p := newProgress(progressPlain, &buf, 2, nil, 1)
	p.start(runHeader{Version: "v1", Files: 2, Dest: "out", Backend: "local", GDAL: "3.9", Workers: 1})
	p.done(localrun.Outcome{Bucket: "b", Key: "a.tif", Status: localrun.StatusSkipped})
	p.done(localrun.Outcome{Bucket: "b", Key: "c.tif", Status: localrun.StatusSkipped})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "geomigrate v1: 2 file(s) → out") || !strings.HasPrefix(lines[2], "[2/2] ") || strings.Contains(buf.String(), "\r") {
		t.Errorf("plain run output %q", buf.String())
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeTTY is a terminal of a given width for mpb: each redraw (Flush) is
// sent on frames.
type fakeTTY struct {
	width  int
	buf    bytes.Buffer
	frames chan string
}

func newFakeTTY(width int) *fakeTTY { return &fakeTTY{width: width, frames: make(chan string, 64)} }

func (f *fakeTTY) Write(p []byte) (int, error)         { return f.buf.Write(p) }
func (f *fakeTTY) ReadFrom(r io.Reader) (int64, error) { return f.buf.ReadFrom(r) }
func (f *fakeTTY) IsTerminal() bool                    { return true }
func (f *fakeTTY) GetTermSize() (int, int, error)      { return f.width, 40, nil }
func (f *fakeTTY) Flush(int) error {
	f.frames <- f.buf.String()
	f.buf.Reset()
	return nil
}

// frame asks for a redraw and returns it.
func (f *fakeTTY) frame(t *testing.T, refresh chan<- any) string {
	t.Helper()
	select {
	case refresh <- time.Time{}:
	case <-time.After(10 * time.Second):
		t.Fatal("the bar took no refresh")
	}
	return f.next(t)
}

func (f *fakeTTY) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-f.frames:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no frame drawn")
		return ""
	}
}

// startExecution feeds p the events of an execution entering state.
func startExecution(p progress, clk *fakeClock, execution, key, state string) {
	in, _ := json.Marshal(map[string]string{"bucket": "samples", "key": key})
	p.observe(execution, asl.Event{Type: asl.EventExecutionStarted, Timestamp: clk.Now(), Input: in})
	p.observe(execution, asl.Event{Type: asl.EventStateEntered, State: state, Timestamp: clk.Now()})
}

func TestBarFitsTheTerminalWidth(t *testing.T) {
	long := strings.Repeat("very_long_directory_name/", 6) + "elevation_tile_with_a_long_name.tif"
	for _, width := range []int{40, 80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			clk := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			tty, refresh := newFakeTTY(width), make(chan any)
			p := newBarProgress(io.Discard, tty, 166, nil, 4, clk.Now, refresh)
			p.start(runHeader{Files: 166})
			for i, key := range []string{long, "dem.tif", "landcover_4326.tif", "city.gpkg", "places.shp"} {
				startExecution(p, clk, fmt.Sprint("exec", i), key, "Convert")
				clk.Advance(time.Second) // the long key runs longest: shown first
			}
			p.observe("exec1", asl.Event{Type: asl.EventRetryScheduled, State: "Convert", Attempt: 1, Timestamp: clk.Now()})
			for i := range 7 {
				clk.Advance(90 * time.Second)
				p.done(localrun.Outcome{Bucket: "samples", Key: fmt.Sprint("done", i, ".tif"), Execution: "x", Status: []string{localrun.StatusCompleted, localrun.StatusRemediation, localrun.StatusSkipped}[i%3], BytesIn: 40e6})
			}
			frame := tty.frame(t, refresh)
			lines := strings.Split(strings.TrimSuffix(frame, "\n"), "\n")
			// bar, rates, 3 running files, "… and 2 more"
			if len(lines) != 6 {
				t.Errorf("%d lines, want 6:\n%s", len(lines), frame)
			}
			for _, l := range lines {
				if w := runewidth.StringWidth(l); w > width {
					t.Errorf("line of %d columns on a %d-column terminal: %q", w, width, l)
				}
			}
			for _, want := range []string{"7/166", "[#", "…", "and 2 more", "Convert"} {
				if !strings.Contains(frame, want) {
					t.Errorf("frame lacks %q:\n%s", want, frame)
				}
			}
			if width >= 80 {
				// 7 files in 635 s, 280 MB: 0.01 files/s, 0.4 MB/s, 159 left.
				for _, want := range []string{"ETA 4:00:24", "10:35", "0.01 files/s", "0.4 MB/s", "completed 3", "remediation 2", "skipped 2", "attempt 2", "elevation_tile_with_a_long_name.tif"} {
					if !strings.Contains(frame, want) {
						t.Errorf("frame lacks %q:\n%s", want, frame)
					}
				}
			}
			p.finish(nil, "")
		})
	}
}

// TestBarTickerMovesElapsed: a long file with no file finishing still
// moves the run's and the file's elapsed time at each tick.
func TestBarTickerMovesElapsed(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tty, refresh := newFakeTTY(80), make(chan any)
	p := newBarProgress(io.Discard, tty, 2, nil, 1, clk.Now, refresh)
	p.start(runHeader{Files: 2})
	startExecution(p, clk, "e1", "huge.tif", "Convert")
	for _, tt := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "  0s"},
		{5 * time.Second, "  5s"},
		{65 * time.Second, "1:10"},
		{time.Hour, "1:01:10"},
	} {
		clk.Advance(tt.advance)
		frame := tty.frame(t, refresh)
		lines := strings.Split(frame, "\n")
		if len(lines) < 3 || !strings.HasSuffix(lines[0], "ETA --  "+strings.TrimSpace(tt.want)) || !strings.Contains(lines[2], tt.want+"  samples/huge.tif") {
			t.Errorf("after %s more, want elapsed %q on the bar and the running file:\n%s", tt.advance, tt.want, frame)
		}
	}
	p.observe("e1", asl.Event{Type: asl.EventExecutionSucceeded, Timestamp: clk.Now()})
	p.done(localrun.Outcome{Bucket: "samples", Key: "huge.tif", Execution: "e1", Status: localrun.StatusCompleted})
	p.done(localrun.Outcome{Bucket: "samples", Key: "other.tif", Execution: "e2", Status: localrun.StatusCompleted})
	last := tty.next(t) // completing the bar draws it once more
	if !strings.Contains(last, "2/2") || !strings.Contains(last, "done") || strings.Contains(last, "huge.tif") {
		t.Errorf("final frame:\n%s", last)
	}
	p.finish(nil, "")
}

// TestJSONProgressStream runs migrate with --progress json over two
// samples and an ignored file: stderr is one JSON object per line, one per
// state transition, the files, and a final summary that agrees with the
// report.
func TestJSONProgressStream(t *testing.T) {
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, src)
	var srcBytes int64 // what the listing gives the ETA
	for _, name := range []string{"landcover_4326.tif", "no_crs.tif", "parks.geojson"} {
		if err := sampledata.Writer(name)(filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		srcBytes += fi.Size()
	}
	if err := os.WriteFile(filepath.Join(src, "README.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(dir, "events.jsonl")
	for _, tt := range []struct {
		name     string
		args     []string
		file     string
		wantLogs bool
	}{
		{"stderr", nil, "", false},
		{"progress-file", []string{"--progress-file", events}, events, false},
		// The handlers' log lines join the stream as objects.
		{"stderr with info logs", []string{"--log-level", "info"}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"migrate", src, "--dest", dest + "-" + tt.name, "--workers", "2", "--progress", "json"}, tt.args...)
			out, stderr, err := run(t, args...)
			if err != nil {
				t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
			}
			stream := stderr
			if tt.file != "" {
				b, err := os.ReadFile(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				stream = string(b)
				if stderr != "" {
					t.Errorf("stderr holds more than nothing with --progress-file:\n%s", stderr)
				}
			}
			checkJSONStream(t, stream, lastReport(t, out), srcBytes)
			if logs := strings.Count(stream, `"type":"log"`); (logs > 0) != tt.wantLogs {
				t.Errorf("%d log objects in the stream, want some: %v", logs, tt.wantLogs)
			}
		})
	}
}

// checkJSONStream checks a run's stream against its report; srcBytes are
// the sources' bytes the file events count towards the ETA.
func checkJSONStream(t *testing.T, stream string, report localrun.Report, srcBytes int64) {
	t.Helper()
	var events []progressEvent
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		var ev progressEvent
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d is not a progress event: %v\n%s", len(events)+1, err, sc.Text())
		}
		if ev.Time.IsZero() || ev.Type == "" {
			t.Errorf("line %d lacks time or type: %s", len(events)+1, sc.Text())
		}
		events = append(events, ev)
	}
	if len(events) < 3 || events[0].Type != eventRunStarted || events[len(events)-1].Type != eventSummary {
		t.Fatalf("stream does not go from run_started to summary:\n%s", stream)
	}
	sum := events[len(events)-1]
	if sum.Totals == nil || *sum.Totals != report.Totals || sum.Report == "" {
		t.Errorf("summary %+v, report totals %+v", sum, report.Totals)
	}
	if events[0].BytesTotal != srcBytes || sum.BytesTotal != srcBytes || sum.BytesDone == nil || *sum.BytesDone != srcBytes {
		t.Errorf("run_started bytes_total %d, summary bytes %v of %d; want %d of %d", events[0].BytesTotal, sum.BytesDone, sum.BytesTotal, srcBytes, srcBytes)
	}
	// Per execution: started, then each state entered and left (exited or
	// failed) before the next, retries and catches inside a state, ended.
	type execState struct {
		key, state     string
		started, ended bool
		retries        int
		jobID          string // the last event's
	}
	execs := map[string]*execState{}
	files := map[string]progressEvent{}
	for i, ev := range events[1 : len(events)-1] {
		switch ev.Type {
		case eventFile:
			files[ev.Key] = ev
			if ev.Execution != "" && (ev.ETABy != etaBytes || ev.BytesTotal != srcBytes || ev.BytesDone == nil || ev.ETAMS == nil) {
				t.Errorf("event %d: file %s carries eta %v by %q, bytes %v of %d; want an ETA by bytes of %d", i+1, ev.Key, ev.ETAMS, ev.ETABy, ev.BytesDone, ev.BytesTotal, srcBytes)
			}
			continue
		case eventLog, eventNotice:
			if ev.Message == "" {
				t.Errorf("event %d: %s without a message", i+1, ev.Type)
			}
			continue
		}
		x := execs[ev.Execution]
		if x == nil {
			x = &execState{key: ev.Key}
			execs[ev.Execution] = x
		}
		if x.jobID != "" && ev.JobID != x.jobID {
			t.Errorf("event %d: job %q after job %q", i+1, ev.JobID, x.jobID)
		}
		x.jobID = ev.JobID
		bad := func(why string) { t.Errorf("event %d (%s %s %s) %s", i+1, ev.Type, ev.Key, ev.State, why) }
		if ev.Execution == "" || ev.Key == "" || ev.Key != x.key || x.ended {
			bad("is not attributed to an execution running a source")
		}
		switch ev.Type {
		case eventExecutionStarted:
			if x.started {
				bad("starts the execution twice")
			}
			x.started = true
		case eventEntered:
			if x.state != "" || ev.Attempt != 1 {
				bad(fmt.Sprintf("enters while in %q, attempt %d", x.state, ev.Attempt))
			}
			x.state = ev.State
		case eventRetry:
			x.retries++
			if ev.State != x.state || ev.Attempt < 2 || ev.Error == "" {
				bad("retries outside its state or without an error")
			}
		case eventCaught:
			if ev.State != x.state || ev.Error == "" {
				bad("catches outside its state or without an error")
			}
		case eventExited, eventFailed:
			if ev.State != x.state {
				bad(fmt.Sprintf("leaves while in %q", x.state))
			}
			x.state = ""
		case eventExecutionEnded:
			if x.state != "" || ev.Status == "" {
				bad("ends inside a state or without a status")
			}
			x.ended = true
		default:
			bad("has an unknown type")
		}
	}
	ran, hinted, warned := 0, 0, 0
	for _, o := range report.Files {
		f, ok := files[o.Key]
		if !ok || f.Status != o.Status || f.Execution != o.Execution {
			t.Errorf("%s: file event %+v, report %s %s", o.Key, f, o.Status, o.Execution)
		}
		if f.Hint != o.Hint || strings.Join(f.Warnings, "\n") != strings.Join(o.Warnings, "\n") {
			t.Errorf("%s: file event hint %q warnings %q, report hint %q warnings %q", o.Key, f.Hint, f.Warnings, o.Hint, o.Warnings)
		}
		if f.Hint != "" {
			hinted++
		}
		if len(f.Warnings) > 0 {
			warned++
		}
		if o.Execution == "" {
			continue
		}
		ran++
		x := execs[o.Execution]
		if x == nil || !x.started || !x.ended || x.retries != o.Retries || (o.JobID != "" && x.jobID != o.JobID) {
			t.Errorf("%s: execution %s in the stream %+v, report retries %d", o.Key, o.Execution, x, o.Retries)
		}
	}
	if hinted == 0 || warned == 0 {
		t.Errorf("%d file events with a hint, %d with warnings: want the routed no_crs.tif's hint and parks.geojson's warning", hinted, warned)
	}
	if ran != 3 || len(execs) != ran || len(files) != 4 {
		t.Errorf("%d executions, %d file events in the stream; report: %d ran of %d", len(execs), len(files), ran, len(report.Files))
	}
}

// TestSizedTerminalHasASize: without a usable size (not a terminal, or a
// pseudo-terminal reporting 0 rows) the bar still gets 80x24 to draw in.
func TestSizedTerminalHasASize(t *testing.T) {
	w, h, err := sizedTerminal{cupwriter.New(io.Discard, false)}.GetTermSize()
	if w != 80 || h != 24 || err != nil {
		t.Errorf("size %dx%d, %v; want 80x24", w, h, err)
	}
}

// TestNoticesKeepTheDisplay: a notice is a line in plain mode, a JSON
// object in the stream, and printed above the bar while it is drawn.
func TestNoticesKeepTheDisplay(t *testing.T) {
	var plain, stream bytes.Buffer
	newProgress(progressPlain, &plain, 1, nil, 1).notice("geomigrate: removed 2 staged object(s)")
	if plain.String() != "geomigrate: removed 2 staged object(s)\n" {
		t.Errorf("plain notice %q", plain.String())
	}
	fmt.Fprint(noticeWriter{p: newProgress(progressJSON, &stream, 1, nil, 1)}, "first\n\nsecond\n")
	var got []string
	for line := range strings.Lines(stream.String()) {
		var ev progressEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != eventNotice {
			t.Errorf("notice line %q: %v", line, err)
		}
		got = append(got, ev.Message)
	}
	if strings.Join(got, "|") != "first|second" {
		t.Errorf("notices %q", got)
	}

	clk := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var out bytes.Buffer
	tty, refresh := newFakeTTY(80), make(chan any)
	b := newBarProgress(&out, tty, 2, nil, 1, clk.Now, refresh)
	b.notice("before the bar")
	b.start(runHeader{Files: 2})
	b.notice("during the bar")
	frame := tty.frame(t, refresh)
	if !strings.HasPrefix(frame, "during the bar\n0/2 [") {
		t.Errorf("frame with a notice:\n%s", frame)
	}
	b.finish(nil, "")
	b.notice("after the bar")
	if !strings.HasPrefix(out.String(), "before the bar\n") || !strings.HasSuffix(out.String(), "after the bar\n") {
		t.Errorf("notices outside the bar: %q", out.String())
	}
}

// TestProgressModes: auto is plain lines when stderr is not a terminal;
// --progress-file takes the JSON stream off stderr.
func TestProgressModes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.jsonl")
	for _, tt := range []struct {
		mode, file string
		want       string
	}{
		{progressAuto, "", "*main.plainProgress"},
		{progressPlain, "", "*main.plainProgress"},
		{progressBar, "", "*main.barProgress"},
		{progressJSON, "", "*main.jsonProgress"},
		{progressJSON, file, "*main.jsonProgress"},
	} {
		var stderr bytes.Buffer
		f := runFlags{Progress: tt.mode, ProgressFile: tt.file, Workers: 2}
		p, closeFile, err := f.progress(&stderr, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T", p); got != tt.want {
			t.Errorf("--progress %s: %s, want %s", tt.mode, got, tt.want)
		}
		p.notice("hello")
		closeFile()
		written := stderr.String()
		if tt.file != "" {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if stderr.Len() != 0 {
				t.Errorf("--progress-file: stderr got %q", stderr.String())
			}
			written = string(b)
		}
		if !strings.Contains(written, "hello") {
			t.Errorf("--progress %s %s: the notice went elsewhere", tt.mode, tt.file)
		}
	}
}

// TestETAByBytes: one 1 GB file and 99 tiny ones, the tiny ones finishing
// one a second on a fake clock. Measured by the listing's bytes, the ETA
// after them is the gigabyte still to go at the pace of 99 kB in 99 s
// (some 11.6 days), not the one file in 99 left (1 s); without sizes (a
// replay) it falls back to files. The JSON stream carries the bytes and
// the ETA; the bar shows it.
func TestETAByBytes(t *testing.T) {
	const tiny, big, n = 1_000, 1_000_000_000, 99
	inputs := []migration.Source{{Bucket: "samples", Key: "big.tif", Size: big}}
	for i := range n {
		inputs = append(inputs, migration.Source{Bucket: "samples", Key: fmt.Sprintf("tiny-%02d.tif", i), Size: tiny})
	}
	finishTiny := func(p progress, clk *fakeClock) {
		for i := range n {
			clk.Advance(time.Second)
			p.done(localrun.Outcome{Bucket: "samples", Key: fmt.Sprintf("tiny-%02d.tif", i), Execution: fmt.Sprint("e", i), Status: localrun.StatusCompleted, BytesIn: tiny})
		}
	}
	ms := func(v *int64) int64 {
		if v == nil {
			return -1
		}
		return *v
	}
	// 99 s for 99 kB: the 1 GB left takes 99 s × 10^9 / 99,000.
	wantBytesETA := (99 * time.Second).Milliseconds() * big / (n * tiny)
	for _, tt := range []struct {
		name      string
		sizes     listedSizes
		wantBy    string
		wantETA   int64 // ms after the tiny files
		wantTotal int64
	}{
		{"listed sizes", sizesOf(inputs), etaBytes, wantBytesETA, big + n*tiny},
		{"no sizes", sizesOf([]migration.Source{{Bucket: "samples", Key: "big.tif"}}), etaFiles, 1000, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			var stream bytes.Buffer
			p := newJSONProgress(&stream, len(inputs), tt.sizes, clk.Now)
			p.start(runHeader{Files: len(inputs)})
			finishTiny(p, clk)
			clk.Advance(time.Hour)
			p.done(localrun.Outcome{Bucket: "samples", Key: "big.tif", Execution: "big", Status: localrun.StatusCompleted, BytesIn: big})
			p.finish(nil, "")
			var events []progressEvent
			for line := range strings.Lines(stream.String()) {
				var ev progressEvent
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
				events = append(events, ev)
			}
			if len(events) != len(inputs)+2 {
				t.Fatalf("%d events, want %d", len(events), len(inputs)+2)
			}
			started, afterTiny, last, summary := events[0], events[n], events[n+1], events[n+2]
			if started.BytesTotal != tt.wantTotal || afterTiny.BytesTotal != tt.wantTotal || summary.BytesTotal != tt.wantTotal {
				t.Errorf("bytes_total %d, %d, %d; want %d", started.BytesTotal, afterTiny.BytesTotal, summary.BytesTotal, tt.wantTotal)
			}
			if afterTiny.ETABy != tt.wantBy || last.ETABy != tt.wantBy {
				t.Errorf("eta_by %q, %q; want %q", afterTiny.ETABy, last.ETABy, tt.wantBy)
			}
			if got := ms(afterTiny.ETAMS); got < tt.wantETA-1 || got > tt.wantETA+1 {
				t.Errorf("after %d tiny files: eta %d ms, want %d", n, got, tt.wantETA)
			}
			if got := ms(last.ETAMS); got != 0 {
				t.Errorf("after the last file: eta %d ms, want 0", got)
			}
			if tt.wantTotal == 0 {
				if afterTiny.BytesDone != nil || summary.BytesDone != nil {
					t.Errorf("bytes_done without sizes: %v, %v", afterTiny.BytesDone, summary.BytesDone)
				}
				return
			}
			if got := ms(afterTiny.BytesDone); got != n*tiny {
				t.Errorf("bytes_done after the tiny files %d, want %d", got, n*tiny)
			}
			if got := ms(summary.BytesDone); got != tt.wantTotal {
				t.Errorf("bytes_done at the end %d, want %d", got, tt.wantTotal)
			}
		})
	}

	// The bar: 99 of 100 files done, and the ETA is the gigabyte's.
	clk := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tty, refresh := newFakeTTY(80), make(chan any)
	b := newBarProgress(io.Discard, tty, len(inputs), sizesOf(inputs), 2, clk.Now, refresh)
	b.start(runHeader{Files: len(inputs)})
	finishTiny(b, clk)
	frame := tty.frame(t, refresh)
	if want := "ETA " + shortDuration(time.Duration(wantBytesETA)*time.Millisecond); !strings.Contains(frame, "99/100") || !strings.Contains(frame, want) {
		t.Errorf("bar frame lacks 99/100 and %q:\n%s", want, frame)
	}
	b.finish(nil, "")
}

// TestListingsCarrySizes: the local walk and the S3 lister give each
// input the bytes they listed (a File Geodatabase its files together),
// which the run's ETA counts.
func TestListingsCarrySizes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	files := map[string]int{"a.tif": 10, "sub/b.geojson": 2000, "city.gdb/a00000001.gdbtable": 300, "city.gdb/a00000001.gdbtablx": 40}
	for name, size := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		mkdirs(t, filepath.Dir(p))
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{"a.tif": 10, "sub/b.geojson": 2000, "city.gdb": 340}
	check := func(lister string, inputs []migration.Source) {
		t.Helper()
		got := map[string]int64{}
		for _, in := range inputs {
			got[in.Key] = in.Size
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: sizes %v, want %v", lister, got, want)
		}
	}
	_, inputs, _, err := collectSources([]string{src}, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	check("local walk", inputs)
	_, one, _, err := collectSources([]string{filepath.Join(src, "sub", "b.geojson")}, filepath.Join(dir, "out"))
	if err != nil || len(one) != 1 || one[0].Size != 2000 {
		t.Errorf("a file named on the command line: %+v, %v", one, err)
	}

	store := memstore.New("src")
	for name, size := range files {
		if _, err := store.Put(context.Background(), objectstore.PutRequest{Bucket: "src", Key: name, Body: bytes.NewReader(make([]byte, size)), Size: int64(size)}); err != nil {
			t.Fatal(err)
		}
	}
	inputs, err = listS3Sources(context.Background(), store, []string{"s3://src/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("S3 lister", inputs)
	inputs, err = listS3Sources(context.Background(), store, []string{"s3://src/sub/b.geojson"}, nil)
	if err != nil || len(inputs) != 1 || inputs[0].Size != 2000 {
		t.Errorf("an S3 key named exactly: %+v, %v", inputs, err)
	}
}
