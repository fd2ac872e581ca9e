package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// takeOverDeadLeases finds the jobs whose live lease belongs to a process
// on this host that no longer runs (a run killed with kill -9 or by the
// OOM killer: it could release nothing) and says so in one line. With a
// closer each job is closed as an aborted execution is (QUARANTINED, lease
// released, dead-letter message), so none stays PROCESSING; without one
// only the lease is released. Either way this run takes the files over
// instead of skipping them as in progress until the leases expire.
func takeOverDeadLeases(ctx context.Context, tracker *statestore.Tracker, closer *migration.ExecutionFailed, stderr io.Writer) error {
	type held struct {
		job statestore.Job
		pid int
	}
	var found []held
	now := time.Now()
	for _, s := range []statestore.Status{statestore.Processing, statestore.Retrying} {
		err := tracker.List(ctx, s, func(j statestore.Job) error {
			if j.Status != s || !now.Before(j.LeaseUntil) {
				return nil // an expired lease is taken over by the claim anyway
			}
			if pid, dead := localrun.HeldByDeadProcess(j.LeaseOwner); dead {
				found = append(found, held{j, pid})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("look for leases of dead processes: %w", err)
		}
	}
	if len(found) == 0 {
		return nil
	}
	pids := map[int]bool{}
	for _, h := range found {
		pids[h.pid] = true
		note := fmt.Sprintf("process %d on this host is gone; taken over by process %d", h.pid, os.Getpid())
		var err error
		if closer != nil {
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
	for p := range pids {
		list = append(list, strconv.Itoa(p))
	}
	sort.Strings(list)
	what := "their leases released"
	if closer != nil {
		what = "closed (quarantined, dead-letter message) and taken over"
	}
	fmt.Fprintf(stderr, "geomigrate: %d file(s) were held by process(es) no longer running on this host (PID %s); %s\n",
		len(found), strings.Join(list, ", "), what)
	return nil
}
