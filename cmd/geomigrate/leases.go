package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// heartbeatsPerVouch is how many heartbeat intervals one heartbeat vouches
// for its run: a run is dead once this many beats in a row are missing
// (docs/decisions/0102), so one slow write to the store is not a death.
const heartbeatsPerVouch = 4

// startHeartbeat names every lease the run's tracker takes with this run
// (localrun.ThisRun) and renews their heartbeats every interval until the
// returned stop is called. A failed beat is noticed once; the next may
// succeed, and a run that cannot beat for the whole vouch has its leases
// taken over, which its later writes then find (statestore.ErrLeaseLost).
func startHeartbeat(ctx context.Context, tracker *statestore.Tracker, every time.Duration, notice func(string)) (stop func()) {
	if tracker.Holder() == "" {
		tracker.SetHolder(localrun.ThisRun.String(), heartbeatsPerVouch*every)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		warned := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := tracker.Beat(ctx); err != nil && ctx.Err() == nil && !warned {
				warned = true
				notice(fmt.Sprintf("geomigrate: heartbeat: %v (retrying every %s)", err, every))
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// deadHolder says why a live lease's holder is known to have stopped, or
// "" if it may still run: the state store admits one process at a time
// (exclusive: the embedded store, which this run holds open, so every
// other run has ended), its heartbeat ended, its process on this host is
// gone, or (a lease without a holder, written by an earlier version) its
// PID on this host is gone.
func deadHolder(j statestore.Job, now time.Time, exclusive bool) string {
	switch {
	case j.Holder == localrun.ThisRun.String():
		return ""
	case exclusive:
		return "its run has ended: it no longer holds the state store open"
	case !j.HeartbeatUntil.IsZero() && !now.Before(j.HeartbeatUntil):
		return "its heartbeat lapsed at " + j.HeartbeatUntil.UTC().Format(time.RFC3339)
	case j.Holder != "":
		why, _ := localrun.HolderGone(j.Holder)
		return why
	}
	if pid, dead := localrun.HeldByDeadProcess(j.LeaseOwner); dead {
		return fmt.Sprintf("process %d on this host is gone", pid)
	}
	return ""
}

// takeOverDeadLeases finds the jobs whose unexpired lease belongs to a run
// that no longer runs (killed with kill -9, by the OOM killer, with its
// container or its host: it could release nothing) and says so in one
// line. A job among this run's inputs only has its lease released: this
// run converts the file, and its outcome is the job's (no dead-letter
// message, no quarantine bundle for a file that then completes). Any other
// such job is closed as an aborted execution is (QUARANTINED, dead-letter
// message) when there is a closer, so none stays PROCESSING; without one
// only the lease is released.
func takeOverDeadLeases(ctx context.Context, tracker *statestore.Tracker, closer *migration.ExecutionFailed, inputs []migration.Source, exclusive bool, stderr io.Writer) error {
	type held struct {
		job statestore.Job
		why string
	}
	var found []held
	now := time.Now()
	for _, s := range []statestore.Status{statestore.Processing, statestore.Retrying} {
		err := tracker.List(ctx, s, func(j statestore.Job) error {
			if j.Status != s || !now.Before(j.LeaseUntil) {
				return nil // an expired lease is taken over by the claim anyway
			}
			if why := deadHolder(j, now, exclusive); why != "" {
				found = append(found, held{j, why})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("look for leases of dead runs: %w", err)
		}
	}
	if len(found) == 0 {
		return nil
	}
	mine := map[[2]string]bool{}
	for _, in := range inputs {
		mine[[2]string{in.Bucket, in.Key}] = true
	}
	whys := map[string]bool{}
	closed := 0
	for _, h := range found {
		whys[h.why] = true
		note := h.why + "; taken over by " + localrun.ThisRun.String()
		var err error
		if closer != nil && !mine[[2]string{h.job.SourceBucket, h.job.SourceKey}] {
			closed++
			_, err = closer.Close(ctx, migration.EndedExecution{
				Execution: h.job.LeaseOwner, Status: migration.ExecutionAbortedStatus, Error: "Process.Gone", Cause: note,
				Source: migration.Source{Bucket: h.job.SourceBucket, Key: h.job.SourceKey, KeyEncoding: "plain", DatasetID: h.job.DatasetID},
				JobID:  h.job.ID,
			})
		} else {
			err = tracker.Release(ctx, h.job.ID, h.job.LeaseOwner, note)
		}
		if err != nil {
			return fmt.Errorf("take over %s: %w", h.job.ID, err)
		}
	}
	var list []string
	for w := range whys {
		list = append(list, w)
	}
	sort.Strings(list)
	what := "this run takes them over"
	if closed > 0 {
		what = fmt.Sprintf("this run takes %d over; %d not among its files closed (quarantined, dead-letter message)", len(found)-closed, closed)
	}
	fmt.Fprintf(stderr, "geomigrate: %d file(s) were held by runs no longer running (%s); %s\n", len(found), strings.Join(list, "; "), what)
	return nil
}

// heldElsewhere lists the files this run skipped as in progress that are
// still unfinished under another run's lease when it ends, each with when
// a run can take it: the lease is live, so converting it here could have
// raced its holder. The run then fails, so a run that left files behind
// is never green.
func heldElsewhere(ctx context.Context, tracker *statestore.Tracker, outcomes func(func(localrun.Outcome) error) error) ([]string, time.Time, error) {
	var lines []string
	var last time.Time
	now := time.Now()
	seen := map[string]bool{}
	err := outcomes(func(o localrun.Outcome) error {
		if o.Status != localrun.StatusSkipped || o.Reason != migration.ReasonInProgress || o.JobID == "" || seen[o.JobID] {
			return nil
		}
		seen[o.JobID] = true
		j, err := tracker.Get(ctx, o.JobID)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		if j.Status.Terminal() || (j.Holder != "" && j.Holder == tracker.Holder()) {
			return nil // finished since, or held by another execution of this run
		}
		at := statestore.RetryAt(j)
		when := "retry after " + at.UTC().Format(time.RFC3339)
		if !statestore.Live(j, now) {
			when, at = "its holder stopped: retry now", now
		}
		who := j.LeaseOwner
		if j.Holder != "" {
			who += " (" + j.Holder + ")"
		}
		lines = append(lines, fmt.Sprintf("%s: %s, held by %s; %s", o.Key, j.Status, who, when))
		if at.After(last) {
			last = at
		}
		return nil
	})
	if err != nil {
		return nil, last, fmt.Errorf("heldElsewhere: %w", err)
	}
	sort.Strings(lines)
	return lines, last, nil
}
