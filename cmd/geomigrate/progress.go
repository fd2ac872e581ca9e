package main

// Size: the two progress renderers (plain and bar) and the run state they share change together.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Progress modes (--progress).
const (
	progressAuto  = "auto"  // bar on a terminal, plain otherwise
	progressBar   = "bar"   // redrawn lines: bar, rates, ETA, files being converted
	progressPlain = "plain" // one line per finished file: logs, pipes, scripts
	progressJSON  = "json"  // newline-delimited JSON events (jsonProgress)
)

// progress is how a run shows itself while it goes. start, done and
// finish are called by the run; observe by the executor for every history
// event of every execution (asl.WithExecutionHistory), under that
// execution's lock, so it must not block for long.
type progress interface {
	start(h runHeader)
	observe(execution string, ev asl.Event)
	done(o localrun.Outcome)
	// finish ends the display once the report was written to reportPath
	// ("" when it could not be).
	finish(r *localrun.Report, reportPath string)
	// notice shows a line about the run itself (leftovers swept, a signal
	// received) without breaking the display: above the bar, as a JSON
	// object in the stream.
	notice(msg string)
	// logLine shows a line of the handlers' log the same way (in the JSON
	// stream: a "log" object).
	logLine(line string)
}

// noticeWriter passes each line written to it to a progress's notice (or,
// with log set, logLine).
type noticeWriter struct {
	p   progress
	log bool
}

func (w noticeWriter) Write(b []byte) (int, error) {
	for line := range strings.Lines(string(b)) {
		switch line = strings.TrimSpace(line); {
		case line == "":
		case w.log:
			w.p.logLine(line)
		default:
			w.p.notice(line)
		}
	}
	return len(b), nil
}

// runHeader is what the first line of a run says.
type runHeader struct {
	Version string `json:"version"`
	Files   int    `json:"files"`
	// Listed are inputs decided before the run (ignored, links not followed).
	Listed  int    `json:"listed,omitempty"`
	Dest    string `json:"dest"`
	Backend string `json:"backend"`
	GDAL    string `json:"gdal"`
	Workers int    `json:"workers"`
}

func (h runHeader) String() string {
	listed := ""
	if h.Listed > 0 {
		listed = fmt.Sprintf(" (+%d ignored or not followed)", h.Listed)
	}
	return fmt.Sprintf("geomigrate %s: %d file(s)%s → %s (%s backend, GDAL %s, %d worker(s))", h.Version, h.Files, listed, h.Dest, h.Backend, h.GDAL, h.Workers)
}

// newProgress returns the view of mode ("auto" already resolved) writing
// to w; total counts every input, sizes are the listing's bytes of those
// that run (the ETA's measure), workers bounds the files converted at
// once (the bar shows them).
func newProgress(mode string, w io.Writer, total int, sizes listedSizes, workers int) progress {
	switch mode {
	case progressBar:
		return newBarProgress(w, sizedTerminal{cupwriter.New(w, false)}, total, sizes, workers, time.Now, nil)
	case progressJSON:
		return newJSONProgress(w, total, sizes, time.Now)
	default:
		return &plainProgress{w: w, total: total}
	}
}

// plainProgress writes one line per finished file ("[3/12] completed
// bucket/key outputs (size) duration"), never a carriage return: what CI
// logs, pipes and the tests read.
type plainProgress struct {
	mu     sync.Mutex
	w      io.Writer
	total  int
	totals localrun.Totals
}

func (p *plainProgress) start(h runHeader)               { fmt.Fprintln(p.w, h) }
func (p *plainProgress) observe(string, asl.Event)       {}
func (p *plainProgress) finish(*localrun.Report, string) {}

func (p *plainProgress) notice(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, msg)
}

func (p *plainProgress) logLine(line string) { p.notice(line) }

func (p *plainProgress) done(o localrun.Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals.Add(o)
	detail := o.Reason
	switch {
	case o.Status == localrun.StatusCompleted:
		detail = strings.Join(o.Outputs, ", ") + " (" + localrun.HumanBytes(o.BytesOut) + ")"
	case o.Code != "":
		detail = o.Code + ": " + o.Message
	case o.Error != "":
		detail = o.Error + ": " + o.Message
	}
	detail = localrun.OneLine(detail, 200)
	if n := len(o.Warnings); n > 0 {
		// At the default log level the handlers' warnings are not
		// shown: the count (and the first) is, the report has them all.
		detail += fmt.Sprintf("  warnings: %d (%s)", n, localrun.OneLine(o.Warnings[0], 120))
	}
	fmt.Fprintf(p.w, "[%d/%d] %-11s %s/%s %s %s\n", p.totals.Files, p.total, o.Status, o.Bucket, objectstore.QuoteKey(o.Key), detail, o.Duration.Round(time.Millisecond))
}

// logSink is where the handlers' logs go: stderr, or while a run is
// shown, its display (noticeWriter), so that a log line neither breaks the
// bar's redraw nor the JSON stream's one object per line.
type logSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *logSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	return w.Write(b)
}

func (s *logSink) to(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

// runningFile is an execution between its ExecutionStarted and its end:
// the source it converts, the state it is in and that state's attempt.
type runningFile struct {
	execution   string
	bucket, key string
	// jobID is known once HashCheck has claimed (or found) the job: the
	// payload carries it as job.id from then on.
	jobID   string
	state   string
	attempt int // 1-based attempt of state
	since   time.Time
}

// runningFiles follows executions through their history events.
type runningFiles map[string]*runningFile

// observe updates the file of execution with ev and returns it; ended is
// true for the execution's last event (the file is then forgotten).
func (r runningFiles) observe(execution string, ev asl.Event) (f *runningFile, ended bool) {
	f = r[execution]
	if f == nil {
		f = &runningFile{execution: execution, since: ev.Timestamp}
		r[execution] = f
	}
	switch ev.Type {
	case asl.EventExecutionStarted:
		var src migration.Source
		if json.Unmarshal(ev.Input, &src) == nil {
			f.bucket, f.key = src.Bucket, src.Key
		}
	case asl.EventStateEntered:
		f.state, f.attempt = ev.State, 1
	case asl.EventRetryScheduled:
		f.attempt = ev.Attempt + 1 // Attempt is the 1-based retry number
	case asl.EventStateExited:
		if f.jobID == "" {
			var out struct {
				Job struct {
					ID string `json:"id"`
				} `json:"job"`
			}
			if json.Unmarshal(ev.Output, &out) == nil {
				f.jobID = out.Job.ID
			}
		}
	case asl.EventExecutionSucceeded, asl.EventExecutionFailed, asl.EventExecutionTimedOut, asl.EventExecutionAborted:
		delete(r, execution)
		return f, true
	}
	return f, false
}

// runRates are the run's speeds so far: files that ran (not those
// decided before the run) per second, their source megabytes (10^6 B) per
// second, and the time left at the run's pace (-1: not known yet),
// measured in etaBy (etaBytes or etaFiles).
type runRates struct {
	filesPerSecond, mbPerSecond float64
	eta                         time.Duration
	etaBy                       string
}

// What an ETA is measured in (progressEvent.ETABy).
const (
	etaBytes = "bytes"
	etaFiles = "files"
)

func ratesOf(elapsed time.Duration, ran int, bytesIn int64, remaining int) runRates {
	r := runRates{eta: -1, etaBy: etaFiles}
	if s := elapsed.Seconds(); s > 0 {
		r.filesPerSecond = float64(ran) / s
		r.mbPerSecond = float64(bytesIn) / 1e6 / s
	}
	if r.filesPerSecond > 0 {
		r.eta = time.Duration(float64(remaining) / r.filesPerSecond * float64(time.Second))
	}
	return r
}

// sourceRef names an input by bucket and key, as its outcome does.
type sourceRef struct{ bucket, key string }

// listedSizes are the bytes the source listing gave for each input that
// runs. Nil when it gave none (a replay's inputs, named by earlier
// reports): the ETA then counts files.
type listedSizes map[sourceRef]int64

// sizesOf is the listing's sizes of inputs; nil when they add up to
// nothing (not listed with sizes, or all empty: files are then the
// better measure).
func sizesOf(inputs []migration.Source) listedSizes {
	sizes := make(listedSizes, len(inputs))
	sized := false
	for _, in := range inputs {
		sizes[sourceRef{in.Bucket, in.Key}] = in.Size
		sized = sized || in.Size > 0
	}
	if !sized {
		return nil
	}
	return sizes
}

// runTally is what a view counts as files finish: the totals, the files
// that ran in this run and their bytes converted, and the listed bytes of
// every input that finished, whatever its outcome.
type runTally struct {
	totals     localrun.Totals
	ran        int
	ranIn      int64
	sizes      listedSizes
	bytesTotal int64
	bytesDone  int64
}

func newRunTally(sizes listedSizes) runTally {
	t := runTally{sizes: maps.Clone(sizes)} // add forgets each input it counted
	for _, n := range sizes {
		t.bytesTotal += n
	}
	return t
}

func (t *runTally) add(o localrun.Outcome) {
	t.totals.Add(o)
	if o.Execution != "" {
		t.ran++
		t.ranIn += o.BytesIn
	}
	// Each input once: a key the listing named twice ran once.
	ref := sourceRef{o.Bucket, o.Key}
	if n, ok := t.sizes[ref]; ok {
		t.bytesDone += n
		delete(t.sizes, ref)
	}
}

// rates are the speeds after elapsed of a run of total inputs. With the
// listing's sizes the time left is the listed bytes left at the bytes per
// second finished so far: one 1 GB file left after 99 small ones is
// nearly all of the run, not 1 % of it. Without, it is the files left at
// the files per second. Either is a pace, not a promise: files skipped as
// already migrated finish their bytes at once.
func (t *runTally) rates(elapsed time.Duration, total int) runRates {
	r := ratesOf(elapsed, t.ran, t.ranIn, total-t.totals.Files)
	if t.bytesTotal == 0 {
		return r
	}
	r.eta, r.etaBy = -1, etaBytes
	if t.bytesDone > 0 && elapsed > 0 {
		left := max(t.bytesTotal-t.bytesDone, 0)
		r.eta = time.Duration(float64(elapsed) * (float64(left) / float64(t.bytesDone)))
	}
	return r
}

// sizedTerminal is mpb's console writer with a size it can draw in: a
// pseudo-terminal may report 0 rows (script(1), some CI runners), where mpb
// would draw no line at all, or fail the size query, which would stop the
// bar for good.
type sizedTerminal struct{ *cupwriter.Writer }

func (t sizedTerminal) GetTermSize() (width, height int, err error) {
	width, height, err = t.Writer.GetTermSize()
	if err != nil || width <= 0 {
		width = 80
	}
	if err != nil || height <= 0 {
		height = 24
	}
	return width, height, nil
}

// barRefresh is how often the bar is redrawn without a file finishing, so
// that elapsed time and the running files' clocks move during a long file.
const barRefresh = 250 * time.Millisecond

// maxRunningShown bounds the lines listing files being converted.
const maxRunningShown = 3

// barProgress draws, with mpb (github.com/vbauerster/mpb/v8), a block of
// lines redrawn in place on a terminal:
//
//	12/166 [#######.........................] ETA 3m10s  1m02s
//	0.19 files/s  4.1 MB/s  completed 10  skipped 1  remediation 1
//	  Convert   0:41  rasters/big_dem.tif
//
// Every line fits the terminal's width (mpb measures it at every redraw
// and shortens the decorators; the lines written here are cut to it).
type barProgress struct {
	out        io.Writer // the header line, before the bar starts
	clock      func() time.Time
	console    mpb.ConsoleWriter
	refresh    <-chan any
	stopTicker func()
	total      int
	workers    int

	container *mpb.Progress
	bar       *mpb.Bar

	mu      sync.Mutex
	started time.Time
	tally   runTally
	running runningFiles
}

// newBarProgress draws on console, redrawn at each value of refresh (and
// when the bar completes; nil: every barRefresh); clock is read for every elapsed time shown. The
// header goes to out as a line of its own (it may wrap: it is not redrawn).
func newBarProgress(out io.Writer, console mpb.ConsoleWriter, total int, sizes listedSizes, workers int, clock func() time.Time, refresh <-chan any) *barProgress {
	return &barProgress{out: out, clock: clock, console: console, refresh: refresh, total: total, tally: newRunTally(sizes), workers: max(workers, 1), running: runningFiles{}}
}

func (b *barProgress) start(h runHeader) {
	fmt.Fprintln(b.out, h)
	b.mu.Lock()
	b.started = b.clock()
	b.mu.Unlock()
	if b.refresh == nil {
		b.refresh, b.stopTicker = tickEvery(barRefresh)
	}
	container := mpb.New(mpb.WithConsoleWriter(b.console), mpb.WithManualRefresh(b.refresh))
	lines := []mpb.BarFiller{mpb.BarFillerFunc(b.ratesLine)}
	for i := range min(b.workers, maxRunningShown) {
		lines = append(lines, mpb.BarFillerFunc(func(w io.Writer, s decor.Statistics) error { return b.runningLine(w, s, i) }))
	}
	if b.workers > maxRunningShown {
		lines = append(lines, mpb.BarFillerFunc(b.moreLine))
	}
	bar := container.New(int64(b.total),
		mpb.BarStyle().Lbound("[").Filler("#").Tip("#").Padding(".").Rbound("]"),
		mpb.PrependDecorators(decor.Any(b.countDecor)),
		mpb.AppendDecorators(decor.Any(b.timeDecor)),
		mpb.BarBtmExtender(lines...),
	)
	b.mu.Lock()
	b.bar, b.container = bar, container
	b.mu.Unlock()
}

func (b *barProgress) observe(execution string, ev asl.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running.observe(execution, ev)
}

func (b *barProgress) done(o localrun.Outcome) {
	b.mu.Lock()
	b.tally.add(o)
	bar := b.bar
	b.mu.Unlock()
	// Not under b.mu: the bar's goroutine may be drawing, which takes it.
	if bar != nil {
		bar.Increment()
	}
}

func (b *barProgress) finish(*localrun.Report, string) {
	b.mu.Lock()
	bar, container := b.bar, b.container
	b.bar, b.container = nil, nil
	b.mu.Unlock()
	if bar != nil {
		bar.SetTotal(-1, true) // complete at the count reached: an interrupted run has fewer
		container.Wait()
	}
	if b.stopTicker != nil {
		b.stopTicker()
	}
}

func (b *barProgress) logLine(line string) { b.notice(line) }

// notice prints msg above the bar while it is drawn (at its next redraw),
// on its own line otherwise.
func (b *barProgress) notice(msg string) {
	b.mu.Lock()
	container := b.container
	b.mu.Unlock()
	if container != nil {
		if _, err := container.Write([]byte(msg + "\n")); err == nil {
			return
		}
	}
	fmt.Fprintln(b.out, msg)
}

// tickEvery sends the time on the returned channel every d until stop.
func tickEvery(d time.Duration) (ticks <-chan any, stop func()) {
	ch, done := make(chan any), make(chan struct{})
	ticker := time.NewTicker(d)
	go func() {
		defer ticker.Stop()
		for {
			select {
			case t := <-ticker.C:
				select {
				case ch <- t:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return ch, func() { close(done) }
}

// elapsed and rates are read under b.mu.
func (b *barProgress) elapsed() time.Duration { return b.clock().Sub(b.started) }

func (b *barProgress) rates() runRates { return b.tally.rates(b.elapsed(), b.total) }

func (b *barProgress) countDecor(decor.Statistics) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d/%d", b.tally.totals.Files, b.total)
}

func (b *barProgress) timeDecor(s decor.Statistics) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	eta := "ETA --"
	if r := b.rates(); s.Completed {
		eta = "done"
	} else if r.eta >= 0 {
		eta = "ETA " + shortDuration(r.eta)
	}
	return eta + "  " + shortDuration(b.elapsed())
}

func (b *barProgress) ratesLine(w io.Writer, s decor.Statistics) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, t := b.rates(), b.tally.totals
	line := fmt.Sprintf("%.2f files/s  %.1f MB/s  completed %d", r.filesPerSecond, r.mbPerSecond, t.Completed)
	for _, c := range []struct {
		name string
		n    int
	}{{"skipped", t.Skipped}, {"ignored", t.Ignored}, {"remediation", t.Remediation}, {"dlq", t.DeadLetter}, {"failed", t.Failed}, {"warned", t.Warned}, {"not started", t.NotStarted}} {
		if c.n > 0 {
			line += fmt.Sprintf("  %s %d", c.name, c.n)
		}
	}
	return writeLine(w, line, s.AvailableWidth)
}

// runningNow is the running files, longest running first.
func (b *barProgress) runningNow() []*runningFile {
	files := make([]*runningFile, 0, len(b.running))
	for _, f := range b.running {
		files = append(files, f)
	}
	slices.SortFunc(files, func(x, y *runningFile) int {
		return cmp.Or(x.since.Compare(y.since), strings.Compare(x.key, y.key), strings.Compare(x.execution, y.execution))
	})
	return files
}

// runningLine writes the i-th running file, or nothing (no line) when
// fewer run.
func (b *barProgress) runningLine(w io.Writer, s decor.Statistics, i int) error {
	if s.Completed {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	files := b.runningNow()
	if i >= len(files) {
		return nil
	}
	f := files[i]
	head := fmt.Sprintf("  %-9s %6s  ", f.state, shortDuration(b.clock().Sub(f.since)))
	if f.attempt > 1 {
		head = fmt.Sprintf("  %-9s %6s  attempt %d  ", f.state, shortDuration(b.clock().Sub(f.since)), f.attempt)
	}
	// The end of a long key (the file name) says more than its start.
	name := f.bucket + "/" + objectstore.QuoteKey(f.key)
	if room := s.AvailableWidth - runewidth.StringWidth(head); runewidth.StringWidth(name) > room && room > 1 {
		name = "…" + tailWidth(name, room-1)
	}
	return writeLine(w, head+name, s.AvailableWidth)
}

func (b *barProgress) moreLine(w io.Writer, s decor.Statistics) error {
	if s.Completed {
		return nil
	}
	b.mu.Lock()
	n := len(b.running) - maxRunningShown
	b.mu.Unlock()
	if n <= 0 {
		return nil
	}
	return writeLine(w, fmt.Sprintf("  … and %d more", n), s.AvailableWidth)
}

// writeLine writes line cut to width columns, and a newline.
func writeLine(w io.Writer, line string, width int) error {
	if runewidth.StringWidth(line) > width {
		line = runewidth.Truncate(line, width, "…")
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}

// tailWidth is the end of s that fits in width columns.
func tailWidth(s string, width int) string {
	r := []rune(s)
	w := 0
	for i := len(r) - 1; i >= 0; i-- {
		if w += runewidth.RuneWidth(r[i]); w > width {
			return string(r[i+1:])
		}
	}
	return s
}

// shortDuration is d to the second: 9s, 4:05, 1:02:03.
func shortDuration(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	case m > 0:
		return fmt.Sprintf("%d:%02d", m, s)
	default:
		return fmt.Sprintf("%ds", s)
	}
}

// jsonProgress writes one JSON object per line (progressEvent): the run's
// start, each execution's start and end, every state transition (entered,
// exited, retry, caught, failed), each finished file, and a final summary.
type jsonProgress struct {
	mu      sync.Mutex
	enc     *json.Encoder
	clock   func() time.Time
	total   int
	started time.Time
	tally   runTally
	running runningFiles
}

// Progress event types (progressEvent.Type).
const (
	eventRunStarted       = "run_started"
	eventExecutionStarted = "execution_started"
	eventEntered          = "entered"
	eventExited           = "exited"
	eventRetry            = "retry"
	eventCaught           = "caught"
	eventFailed           = "failed"
	eventExecutionEnded   = "execution_ended"
	eventFile             = "file"
	eventSummary          = "summary"
	eventNotice           = "notice"
	eventLog              = "log"
)

// transitionTypes maps the history events that move an execution between
// states to progress event types; other events (task scheduled, ...) are
// not streamed.
var transitionTypes = map[string]string{
	asl.EventStateEntered:   eventEntered,
	asl.EventStateExited:    eventExited,
	asl.EventRetryScheduled: eventRetry,
	asl.EventCatchTaken:     eventCaught,
	asl.EventStateFailed:    eventFailed,
}

// progressEvent is one line of --progress json.
type progressEvent struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	// Execution names the state machine execution (one per source file).
	Execution string `json:"execution,omitempty"`
	Bucket    string `json:"bucket,omitempty"`
	Key       string `json:"key,omitempty"`
	State     string `json:"state,omitempty"`
	// Attempt is the 1-based attempt of State (retry: the attempt about to start).
	Attempt int    `json:"attempt,omitempty"`
	Error   string `json:"error,omitempty"`
	Cause   string `json:"cause,omitempty"`
	// WaitMS is the back-off before the retry.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Status is the execution's (SUCCEEDED, FAILED, TIMED_OUT, ABORTED)
	// for execution_ended, the file's outcome (completed, skipped, ...) for file.
	Status string `json:"status,omitempty"`

	// JobID is the job the execution works on, once HashCheck named it.
	JobID string `json:"job_id,omitempty"`

	// file events: the outcome, and how far the run is.
	Reason  string   `json:"reason,omitempty"`
	Code    string   `json:"code,omitempty"`
	Outputs []string `json:"outputs,omitempty"`
	// Warnings are the conversion's non-fatal messages and Hint what to do
	// about a routed file, as the run report's files[] has them.
	Warnings   []string `json:"warnings,omitempty"`
	Hint       string   `json:"hint,omitempty"`
	BytesIn    int64    `json:"bytes_in,omitempty"`
	BytesOut   int64    `json:"bytes_out,omitempty"`
	DurationMS int64    `json:"duration_ms,omitempty"`
	Done       int      `json:"done,omitempty"`
	Total      int      `json:"total,omitempty"`
	// BytesDone and BytesTotal are the listed source bytes of the inputs
	// finished and of all that run (run_started, file, summary), absent
	// when the listing gave no sizes. ETAMS is the time left (file
	// events; absent until the pace is known), measured in ETABy: "bytes"
	// with sizes, else "files".
	BytesDone  *int64 `json:"bytes_done,omitempty"`
	BytesTotal int64  `json:"bytes_total,omitempty"`
	ETAMS      *int64 `json:"eta_ms,omitempty"`
	ETABy      string `json:"eta_by,omitempty"`

	// notice: a line about the run itself (leftovers swept, a signal);
	// log: a line of the handlers' log (--log-level, --log-format).
	Message string `json:"message,omitempty"`
	// run_started.
	Run *runHeader `json:"run,omitempty"`
	// summary.
	Totals         *localrun.Totals `json:"totals,omitempty"`
	Seconds        float64          `json:"seconds,omitempty"`
	FilesPerSecond float64          `json:"files_per_second,omitempty"`
	MBPerSecond    float64          `json:"mb_per_second,omitempty"`
	Report         string           `json:"report,omitempty"`
}

func newJSONProgress(w io.Writer, total int, sizes listedSizes, clock func() time.Time) *jsonProgress {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonProgress{enc: enc, clock: clock, total: total, tally: newRunTally(sizes), running: runningFiles{}}
}

// bytesDone is the tally's bytes done for an event (nil: no sizes).
func (j *jsonProgress) bytesDone() *int64 {
	if j.tally.bytesTotal == 0 {
		return nil
	}
	n := j.tally.bytesDone
	return &n
}

// emit writes ev; called under j.mu. A write error (a closed pipe) is not
// the run's: the report still has everything.
func (j *jsonProgress) emit(ev progressEvent) {
	if ev.Time.IsZero() {
		ev.Time = j.clock()
	}
	ev.Time = ev.Time.UTC()
	_ = j.enc.Encode(ev)
}

func (j *jsonProgress) start(h runHeader) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.started = j.clock()
	j.emit(progressEvent{Time: j.started, Type: eventRunStarted, Run: &h, Total: j.total, BytesDone: j.bytesDone(), BytesTotal: j.tally.bytesTotal})
}

func (j *jsonProgress) observe(execution string, ev asl.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, ended := j.running.observe(execution, ev)
	out := progressEvent{Time: ev.Timestamp, Execution: execution, JobID: f.jobID, Bucket: f.bucket, Key: f.key}
	switch typ, ok := transitionTypes[ev.Type]; {
	case ok:
		out.Type, out.State, out.Attempt = typ, ev.State, f.attempt
		out.Error, out.Cause = ev.Error, localrun.OneLine(ev.Cause, 500)
		if ev.Type == asl.EventRetryScheduled {
			out.WaitMS = ev.Wait.Milliseconds()
		}
	case ev.Type == asl.EventExecutionStarted:
		out.Type = eventExecutionStarted
	case ended:
		out.Type, out.Error, out.Cause = eventExecutionEnded, ev.Error, localrun.OneLine(ev.Cause, 500)
		out.Status = strings.ToUpper(strings.TrimPrefix(ev.Type, "Execution"))
		if ev.Type == asl.EventExecutionTimedOut {
			out.Status = asl.StatusTimedOut
		}
	default:
		return
	}
	j.emit(out)
}

func (j *jsonProgress) done(o localrun.Outcome) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.tally.add(o)
	now := j.clock()
	rates := j.tally.rates(now.Sub(j.started), j.total)
	var eta *int64
	if rates.eta >= 0 {
		ms := rates.eta.Milliseconds()
		eta = &ms
	}
	j.emit(progressEvent{
		Time: now, Type: eventFile, Execution: o.Execution, Bucket: o.Bucket, Key: o.Key, Status: o.Status,
		JobID: o.JobID, Reason: o.Reason, Code: o.Code, Error: o.Error, Cause: localrun.OneLine(o.Message, 500),
		Outputs: o.Outputs, Warnings: o.Warnings, Hint: localrun.WithHint(o).Hint, BytesIn: o.BytesIn, BytesOut: o.BytesOut, DurationMS: o.Duration.Milliseconds(),
		Done: j.tally.totals.Files, Total: j.total,
		BytesDone: j.bytesDone(), BytesTotal: j.tally.bytesTotal, ETAMS: eta, ETABy: rates.etaBy,
	})
}

func (j *jsonProgress) notice(msg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emit(progressEvent{Type: eventNotice, Message: msg})
}

func (j *jsonProgress) logLine(line string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emit(progressEvent{Type: eventLog, Message: line})
}

func (j *jsonProgress) finish(r *localrun.Report, reportPath string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	elapsed := j.clock().Sub(j.started)
	rates := ratesOf(elapsed, j.tally.ran, j.tally.ranIn, 0)
	totals := j.tally.totals
	if r != nil {
		totals = r.Totals // the report's: also inputs a stopped run never started
	}
	j.emit(progressEvent{Type: eventSummary, Totals: &totals, Seconds: elapsed.Seconds(), FilesPerSecond: rates.filesPerSecond, MBPerSecond: rates.mbPerSecond, Report: reportPath, Total: j.total, BytesDone: j.bytesDone(), BytesTotal: j.tally.bytesTotal})
}
