package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	dest := fs.String("dest", "", "destination directory of earlier runs")
	stateDir := fs.String("state-dir", "", "state directory (default DEST/"+stateDirName+")")
	only := fs.String("status", "", "list only jobs in this status (PROCESSING, REMEDIAL, …)")
	asJSON := fs.Bool("json", false, "print the jobs as JSON lines")
	all := fs.Bool("all", false, "every job record, also those superseded by a newer job of the same source (a fixed file is a new job)")
	backend := fs.String("backend", "local", "local, or aws (the DynamoDB state table)")
	var a awsFlags
	a.add(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var (
		db     statestore.Backend
		paths  localPaths
		where  string
		queues []queueDepth
	)
	switch {
	case *backend == "aws":
		if a.stateTable == "" {
			return errors.New("status --backend aws needs --state-table")
		}
		cfg, o, err := a.awsConfig(ctx)
		if err != nil {
			return err
		}
		db, where = dynamostore.New(awsconfig.NewDynamoDB(cfg, o), dynamostore.Options{Table: a.stateTable}), "dynamodb table "+a.stateTable
		for _, q := range []struct{ name, url string }{{"remediation", a.remediationURL}, {"dead-letter", a.deadLetterURL}} {
			if q.url != "" {
				queues = append(queues, queueDepth{name: q.name, where: q.url,
					depth: sqsqueue.New(awsconfig.NewSQS(cfg, o), sqsqueue.Options{QueueURL: q.url}).Depth})
			}
		}
	case *dest == "" && *stateDir == "":
		fmt.Fprintln(stderr, "Usage: geomigrate status --dest DIR [--status S] [--json]\n       geomigrate status --backend aws --state-table T [--remediation-queue-url URL] [--dlq-url URL] [--status S] [--json]")
		return errUsage
	default:
		paths = pathsFor(*dest, *stateDir)
		if _, err := os.Stat(paths.db); err != nil {
			return fmt.Errorf("no state store at %s: has a migration run there?", paths.db)
		}
		bolt, err := boltstore.Open(paths.db)
		if err != nil {
			return err
		}
		defer bolt.Close()
		db, where = bolt, paths.db
		for _, q := range []struct{ name, path string }{{"remediation", paths.remediation}, {"dead-letter", paths.deadLetter}} {
			queues = append(queues, queueDepth{name: q.name, where: q.path, depth: func(ctx context.Context) (queue.Depth, error) {
				n, err := countMessages(ctx, q.path)
				return queue.Depth{Visible: n}, err
			}})
		}
	}

	// One row per source location, its latest job: a file routed to
	// remediation, fixed and replayed is a new job (the ID holds the content
	// hash) and its old REMEDIAL record is history, not a current problem.
	counts := map[statestore.Status]int{}
	var listed []statestore.Job
	superseded := 0
	keep := func(j statestore.Job) {
		if *only != "" && j.Status != statestore.Status(*only) {
			return
		}
		counts[j.Status]++
		if *only != "" || j.Status != statestore.Completed {
			listed = append(listed, j)
		}
	}
	if *all {
		if err := db.List(ctx, "", func(j statestore.Job) error { keep(j); return nil }); err != nil {
			return err
		}
	} else {
		latest, err := statestore.LatestPerSource(ctx, db)
		if err != nil {
			return err
		}
		for _, l := range latest {
			superseded += l.Superseded
			keep(l.Job)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, j := range listed {
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "state store: %s\n", where)
	for _, s := range statestore.Statuses {
		if counts[s] > 0 {
			fmt.Fprintf(stdout, "  %-12s %d\n", s, counts[s])
		}
	}
	if superseded > 0 {
		fmt.Fprintf(stdout, "  (one row per source, its latest job; %d older job record(s) superseded: --all lists them)\n", superseded)
	}
	for _, q := range queues {
		d, err := q.depth(ctx)
		if err != nil {
			return err
		}
		inFlight := ""
		if d.InFlight > 0 {
			inFlight = fmt.Sprintf(" (+%d in flight)", d.InFlight)
		}
		fmt.Fprintf(stdout, "queue %-12s %d message(s)%s  %s\n", q.name, d.Visible, inFlight, q.where)
	}
	if len(listed) > 0 {
		fmt.Fprintln(stdout)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tSOURCE\tATTEMPTS\tERROR\tUPDATED")
		for _, j := range listed {
			fmt.Fprintf(tw, "%s\t%s/%s\t%d\t%s\t%s\n", j.Status, j.SourceBucket, j.SourceKey, j.Attempts,
				oneLineErr(j.ErrorName, j.ErrorCause), j.UpdatedAt.Format("2006-01-02 15:04:05"))
		}
		tw.Flush()
	}
	return nil
}

// queueDepth counts one queue: the SQS attributes
// ApproximateNumberOfMessages(NotVisible), or the JSONL file's messages not
// deleted.
type queueDepth struct {
	name, where string
	depth       func(context.Context) (queue.Depth, error)
}

func oneLineErr(name, cause string) string {
	if name == "" {
		return "-"
	}
	s := name + ": " + cause
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func countMessages(ctx context.Context, path string) (int, error) {
	st, err := jsonlqueue.Scan(ctx, path, func(queue.Message) error { return nil })
	return st.Messages, err
}
