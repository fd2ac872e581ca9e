package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
)

// runReplay runs the jobs a queue holds again: dead-letter jobs once the
// system is healthy, remediation jobs once their files are fixed (a fixed
// file has new content, so it is a new job; an unchanged one is reported
// skipped as awaiting remediation).
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", stderr)
	f := addRunFlags(fs)
	which := fs.String("queue", "dlq", "dlq or remediation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.dest == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "Usage: geomigrate replay --dest DIR [--queue dlq|remediation] [run flags]")
		return errUsage
	}
	paths := pathsFor(f.dest, f.stateDir)
	path := paths.deadLetter
	switch *which {
	case "dlq":
	case "remediation":
		path = paths.remediation
	default:
		return fmt.Errorf("--queue %q: want dlq or remediation", *which)
	}
	buckets, err := loadBuckets(paths)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var inputs []migration.Source
	rootsBy := map[string]*sourceRoot{}
	_, err = jsonlqueue.Scan(ctx, path, func(m queue.Message) error {
		var msg migration.RouteMessage
		if err := json.Unmarshal([]byte(m.Body), &msg); err != nil {
			fmt.Fprintf(stderr, "skipping message %s: not a geomigrate message: %v\n", m.ID, err)
			return nil
		}
		src := msg.Replay
		id := src.Bucket + "/" + src.Key
		if src.Key == "" || seen[id] {
			return nil
		}
		dir, ok := buckets[src.Bucket]
		if !ok {
			fmt.Fprintf(stderr, "skipping %s: bucket %q is not known in %s\n", id, src.Bucket, paths.buckets)
			return nil
		}
		seen[id] = true
		if rootsBy[src.Bucket] == nil {
			rootsBy[src.Bucket] = &sourceRoot{bucket: src.Bucket, dir: dir}
		}
		inputs = append(inputs, src)
		return nil
	})
	if err != nil {
		return err
	}
	if len(inputs) == 0 {
		fmt.Fprintf(stdout, "nothing to replay in %s\n", path)
		return nil
	}
	var roots []sourceRoot
	for _, r := range rootsBy {
		roots = append(roots, *r)
	}
	return f.run(ctx, roots, inputs, stdout, stderr)
}
