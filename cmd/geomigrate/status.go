package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// statusCmd is `geomigrate status`: what the state store and the queues
// of earlier runs hold, locally or on AWS.
type statusCmd struct {
	Dest     string       `name:"dest" placeholder:"DIR" help:"Destination directory of earlier runs."`
	StateDir string       `name:"state-dir" placeholder:"DIR" help:"State directory (default DEST/.geomigrate-state)."`
	Only     string       `name:"status" placeholder:"STATUS" help:"List only jobs in this status: PENDING, PROCESSING, RETRYING, COMPLETED, REMEDIAL or QUARANTINED (any case)."`
	JSON     bool         `name:"json" help:"Print the jobs as JSON lines."`
	All      bool         `name:"all" help:"Every job record, also those superseded by a newer job of the same source (a fixed file is a new job)."`
	Where    backendFlags `embed:""`
}

// Validate refuses a status no job can have (a typo would list nothing).
func (c *statusCmd) Validate() error {
	if c.Only == "" {
		return nil
	}
	var names []string
	for _, s := range statestore.Statuses {
		if strings.EqualFold(string(s), c.Only) {
			c.Only = string(s)
			return nil
		}
		names = append(names, string(s))
	}
	return fmt.Errorf("--status %q: want one of %s", c.Only, strings.Join(names, ", "))
}

func (c *statusCmd) Run(e *cmdEnv) error {
	ctx, stdout := e.ctx, e.stdout
	v, err := c.Where.openStateView(ctx, c.Dest, c.StateDir)
	if err != nil {
		return err
	}
	defer v.close()
	db, where, queues := v.db, v.where, v.queues
	// One row per source location, its latest job: a file routed to
	// remediation, fixed and replayed is a new job (the ID holds the content
	// hash) and its old REMEDIAL record is history, not a current problem.
	counts := map[statestore.Status]int{}
	var listed []statestore.Job
	superseded := 0
	keep := func(j statestore.Job) {
		if c.Only != "" && j.Status != statestore.Status(c.Only) {
			return
		}
		counts[j.Status]++
		if c.Only != "" || j.Status != statestore.Completed {
			listed = append(listed, j)
		}
	}
	// One listing serves the rows, the counts and the signals (a scan of
	// the table on AWS).
	var all []statestore.Job
	if err := db.List(ctx, "", func(j statestore.Job) error { all = append(all, j); return nil }); err != nil {
		return err
	}
	latest := statestore.Latest(all)
	if c.All {
		for _, j := range all {
			keep(j)
		}
	} else {
		for _, l := range latest {
			superseded += l.Superseded
			keep(l.Job)
		}
	}
	if c.JSON {
		enc := json.NewEncoder(stdout)
		for _, j := range listed {
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		return nil
	}
	width := termtable.Width(stdout)
	fmt.Fprintf(stdout, "state store: %s\n", where)
	statuses := termtable.New("  ", termtable.Column{}, termtable.Column{Right: true})
	for _, s := range statestore.Statuses {
		if counts[s] > 0 {
			statuses.Add(string(s), strconv.Itoa(counts[s]))
		}
	}
	if err := statuses.Write(stdout, width); err != nil {
		return err
	}
	if superseded > 0 {
		termtable.WriteText(stdout, fmt.Sprintf("  (one row per source, its latest job; %d older job record(s) superseded: --all lists them)", superseded), "   ", width)
	}
	qs := termtable.New("", termtable.Column{Key: true}, termtable.Column{Fit: termtable.Wrap}, termtable.Column{Fit: termtable.Middle})
	for _, q := range queues {
		d, err := q.depth(ctx)
		if err != nil {
			return err
		}
		inFlight := ""
		if d.InFlight > 0 {
			inFlight = fmt.Sprintf(" (+%d in flight)", d.InFlight)
		}
		if q.superseded != nil {
			n, err := q.superseded(ctx)
			if err != nil {
				return err
			}
			if n > 0 {
				inFlight += fmt.Sprintf(", %d outstanding (%d superseded: their job has completed; replay deletes them)", d.Visible-n, n)
			}
		}
		qs.Add("queue "+q.name, fmt.Sprintf("%d message(s)%s", d.Visible, inFlight), q.where)
	}
	if err := qs.Write(stdout, width); err != nil {
		return err
	}
	if err := printStatusSignals(ctx, stdout, v, all, latest, width); err != nil {
		return err
	}
	if bs, ok := db.(breaker.Store); ok {
		if err := printBreakers(ctx, stdout, bs, time.Now(), width); err != nil {
			return err
		}
	}
	if len(listed) > 0 {
		fmt.Fprintln(stdout)
		jobs := termtable.New("",
			termtable.Column{Header: "STATUS", Key: true},
			termtable.Column{Header: "SOURCE", Fit: termtable.Middle, Key: true},
			termtable.Column{Header: "ATTEMPTS"},
			termtable.Column{Header: "ERROR", Fit: termtable.Wrap},
			termtable.Column{Header: "UPDATED", Fit: termtable.Wrap})
		for _, j := range listed {
			jobs.Add(string(j.Status), j.SourceBucket+"/"+objectstore.QuoteKey(j.SourceKey), strconv.Itoa(j.Attempts),
				oneLineErr(j.ErrorName, j.ErrorCause), j.UpdatedAt.Format("2006-01-02 15:04:05"))
		}
		return jobs.Write(stdout, width)
	}
	return nil
}

// queueDepth counts one queue: the SQS attributes
// ApproximateNumberOfMessages(NotVisible), or the JSONL file's messages not
// deleted.
type queueDepth struct {
	name, where string
	depth       func(context.Context) (queue.Depth, error)
	// superseded counts the messages that ask for nothing any more (nil:
	// the adapter cannot tell without receiving them).
	superseded func(context.Context) (int, error)
}

func oneLineErr(name, cause string) string {
	if name == "" {
		return "-"
	}
	return localrun.OneLine(name+": "+cause, 120)
}

// supersededBy reports whether a dead-letter message is superseded: its
// job (the same content and recipe) has completed, before or after the
// message was sent (a run took the file over after the one that sent it
// was killed or interrupted; a replay, a redrive or another execution
// converted it). Such a message asks for nothing; `status` does not count
// it as outstanding and `replay` finds the job completed and deletes it.
func supersededBy(ctx context.Context, get func(context.Context, string) (statestore.Job, error)) func(queue.Message) bool {
	return func(m queue.Message) bool {
		var body struct {
			JobID string `json:"job_id"`
		}
		if json.Unmarshal([]byte(m.Body), &body) != nil || body.JobID == "" {
			return false
		}
		j, err := get(ctx, body.JobID)
		return err == nil && j.Status == statestore.Completed
	}
}

// countSuperseded counts the messages of a local queue file that
// superseded reports as such.
func countSuperseded(ctx context.Context, path string, superseded func(queue.Message) bool) (int, error) {
	n := 0
	_, err := jsonlqueue.Scan(ctx, path, func(m queue.Message) error {
		if superseded(m) {
			n++
		}
		return nil
	})
	return n, err
}

func countMessages(ctx context.Context, path string) (int, error) {
	st, err := jsonlqueue.Scan(ctx, path, func(queue.Message) error { return nil })
	return st.Messages, err
}

// printBreakers writes one row per circuit breaker on record (a bucket
// that failed at least once): its state, and what it means for files now.
func printBreakers(ctx context.Context, w io.Writer, s breaker.Store, now time.Time, width int) error {
	t := termtable.New("", termtable.Column{Fit: termtable.Middle, Key: true}, termtable.Column{Key: true}, termtable.Column{Fit: termtable.Wrap})
	err := breaker.List(ctx, s, func(r breaker.Record) error {
		var line string
		switch r.State {
		case breaker.Open:
			line = fmt.Sprintf("files wait; probe in %s (opened %d time(s))", max(r.OpenUntil.Sub(now), 0).Round(time.Second), r.Opened)
		case breaker.HalfOpen:
			line = fmt.Sprintf("one probe in flight (opened %d time(s))", r.Opened)
		default:
			line = fmt.Sprintf("%d recent failure(s), opened %d time(s)", r.Failures, r.Opened)
		}
		if r.LastError != "" && (r.State != breaker.Closed || r.Failures > 0) {
			line += "; last error: " + localrun.OneLine(r.LastError, 120)
		}
		t.Add("breaker "+r.Dependency, string(r.State), line)
		return nil
	})
	if err != nil {
		return err
	}
	return t.Write(w, width)
}

// printStatusSignals writes the fallback rates of the sources on record
// (each source's latest job: a file fixed and migrated since is no longer
// routed), the recovery latencies of those completed after a routing, and
// the dead-letter queue's age. The thresholds are the defaults: status
// judges, it does not run with a policy.
func printStatusSignals(ctx context.Context, w io.Writer, v *stateView, all []statestore.Job, latest []statestore.SourceLatest, width int) error {
	var ends []signals.End
	for _, l := range latest {
		switch j := l.Job; j.Status {
		case statestore.Completed:
			ends = append(ends, signals.End{Key: j.SourceKey})
		case statestore.Remedial, statestore.Quarantined:
			ends = append(ends, signals.End{Key: j.SourceKey, Tier: signals.TierOf(j.Tier)})
		}
	}
	s := signals.Compute(ends, signals.Recoveries(all), signals.DefaultThresholds)
	if v.deadLetterAge != nil {
		var err error
		if s.DeadLetter, err = v.deadLetterAge(ctx); err != nil {
			return err
		}
	}
	localrun.PrintSignals(w, s, width)
	return nil
}
