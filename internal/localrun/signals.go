package localrun

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// Ends are the jobs of outcomes that ended: completed, or routed to a
// queue (under their tier; a file closed after its execution ended
// unfinished has none and counts as unknown).
func Ends(outcomes []Outcome) []signals.End {
	var out []signals.End
	for _, o := range outcomes {
		out = appendEnd(out, o)
	}
	return out
}

// appendEnd appends o's end to ends when o is a job that ended.
func appendEnd(ends []signals.End, o Outcome) []signals.End {
	switch o.Status {
	case StatusCompleted:
		return append(ends, signals.End{Key: o.Key})
	case StatusRemediation, StatusDeadLetter:
		return append(ends, signals.End{Key: o.Key, Tier: signals.TierOf(o.Tier)})
	}
	return ends
}

// JobReader reads job records (a statestore.Tracker).
type JobReader interface {
	Get(ctx context.Context, id string) (statestore.Job, error)
	List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error
}

// Recovered returns the recovery latencies of the files outcomes completed:
// routed before, completed now. With everySource it reads every job record
// once and merges the jobs of each source, so that a file fixed after a
// routing (new content, a new job) counts too (the embedded store: a cheap
// read); without, it reads each completed job's own record (a table on
// AWS: no scan), which sees the recoveries of replays of unchanged content.
func Recovered(ctx context.Context, jobs JobReader, outcomes []Outcome, everySource bool) ([]signals.Latency, error) {
	return (&Report{Files: outcomes}).Recovered(ctx, jobs, everySource)
}

// Recovered is Recovered of the report's files.
func (r *Report) Recovered(ctx context.Context, jobs JobReader, everySource bool) ([]signals.Latency, error) {
	completed := map[string]bool{}
	var ids []string
	r.each(func(o Outcome) {
		if o.Status == StatusCompleted && o.JobID != "" {
			completed[o.Bucket+"/"+o.Key] = true
			ids = append(ids, o.JobID)
		}
	})
	if len(ids) == 0 {
		return nil, nil
	}
	var records []statestore.Job
	if everySource {
		err := jobs.List(ctx, "", func(j statestore.Job) error {
			if completed[j.SourceBucket+"/"+j.SourceKey] {
				records = append(records, j)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("localrun.Recovered: %w", err)
		}
		return signals.Recoveries(records), nil
	}
	// One read per completed job, recoveryReaders at a time: a backfill of
	// thousands of files must not wait for thousands of sequential reads.
	found := make([]*signals.Latency, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(recoveryReaders, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j, err := jobs.Get(ctx, ids[i])
				if err != nil {
					errs[i] = fmt.Errorf("localrun.Recovered: %s: %w", ids[i], err)
					continue
				}
				if l, ok := signals.RecoveryOf(j.History); ok {
					found[i] = &l
				}
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first; the others are most likely the same
		}
	}
	var out []signals.Latency
	for _, l := range found {
		if l != nil {
			out = append(out, *l)
		}
	}
	return out, nil
}

// recoveryReaders bounds the concurrent reads of Recovered.
const recoveryReaders = 16

// DeadLetterAge reads the local dead-letter queue file at path: the
// number of messages not deleted and the age of the oldest, leaving out
// those settled reports as superseded (their job has completed;
// nil: none is).
func DeadLetterAge(ctx context.Context, path string, now time.Time, settled func(queue.Message) bool) (*signals.QueueAge, error) {
	var q signals.QueueAge
	_, err := jsonlqueue.Scan(ctx, path, func(m queue.Message) error {
		if settled != nil && settled(m) {
			return nil
		}
		q.Depth++
		if q.OldestSentAt.IsZero() || m.SentAt.Before(q.OldestSentAt) {
			q.OldestSentAt = m.SentAt
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("localrun.DeadLetterAge: %w", err)
	}
	if q.Depth > 0 {
		q.OldestSentAt = q.OldestSentAt.UTC()
		q.OldestAgeSeconds = max(now.Sub(q.OldestSentAt), 0).Seconds()
	}
	return &q, nil
}

// PrintSignals writes the fallback rates, recovery latencies and the
// dead-letter queue of s for a person (the run summary, `status`), fitted
// to width display columns (0: no limit).
func PrintSignals(w io.Writer, s signals.Signals, width int) {
	fmt.Fprintf(w, "\nFallback rate (routed / jobs that ended): %d of %d (%s)\n", s.Routed, s.Jobs, pct(s.Rate))
	if s.Jobs > 0 {
		tiers := termtable.New("  ",
			termtable.Column{Header: "TIER", Key: true},
			termtable.Column{Header: "ROUTED"},
			termtable.Column{Header: "RATE"},
			termtable.Column{Header: "ALARM ABOVE"},
			termtable.Column{Fit: termtable.Wrap})
		for _, t := range s.Tiers {
			limit, note := "-", ""
			if t.Threshold > 0 {
				limit = pct(t.Threshold)
			}
			if t.Breach {
				note = "ABOVE THRESHOLD: " + breachAdvice(t.Tier)
			}
			tiers.Add(t.Tier, strconv.Itoa(t.Routed), pct(t.Rate), limit, note)
		}
		_ = tiers.Write(w, width)
		termtable.WriteText(w, "  by dataset type: "+groupLine(s.DatasetTypes), strings.Repeat(" ", 19), width)
		termtable.WriteText(w, "  by format:       "+groupLine(s.Formats), strings.Repeat(" ", 19), width)
	}
	if r := s.Recovery; r != nil {
		var tiers []string
		for _, t := range r.Tiers {
			tiers = append(tiers, fmt.Sprintf("%s %d (median %s, max %s)", t.Tier, t.Count, secs(t.MedianSeconds), secs(t.MaxSeconds)))
		}
		termtable.WriteText(w, fmt.Sprintf("Recovery latency (routed → completed after replay): %d job(s), median %s, max %s; %s",
			r.Count, secs(r.MedianSeconds), secs(r.MaxSeconds), strings.Join(tiers, "; ")), "  ", width)
	}
	if q := s.DeadLetter; q != nil {
		if q.Depth == 0 {
			fmt.Fprintln(w, "Dead-letter queue: empty")
		} else {
			fmt.Fprintf(w, "Dead-letter queue: %d message(s), oldest %s old (sent %s)\n", q.Depth, secs(q.OldestAgeSeconds), q.OldestSentAt.Format(time.RFC3339))
		}
	}
}

// breachAdvice is what a tier's high rate calls for (docs/operations.md).
func breachAdvice(tier string) string {
	switch tier {
	case "data_specific":
		return "investigate the source data (corruption, schema drift) before changing thresholds"
	case "transient":
		return "add capacity or raise back-off ceilings rather than lowering the retry ceiling"
	}
	return ""
}

func groupLine(gs []signals.GroupRate) string {
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%s %d/%d (%s)", g.Name, g.Routed, g.Jobs, pct(g.Rate)))
	}
	return strings.Join(parts, ", ")
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
