package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
)

// s3URI splits s3://bucket/prefix.
func s3URI(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("%q is not an s3://bucket[/prefix] URI", s)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// listS3Sources expands s3:// URIs: an exact object key, or every object
// under a prefix except sidecars and folder markers. Each source carries
// the size the request already answered (ListObjectsV2's Contents.Size,
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html;
// HeadObject's Content-Length for an exact key): the run's ETA.
func listS3Sources(ctx context.Context, store objectstore.Store, srcs []string, listing *migration.Listing) ([]migration.Source, error) {
	var inputs []migration.Source
	for _, s := range srcs {
		bucket, prefix, err := s3URI(s)
		if err != nil {
			return nil, err
		}
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			// A key no store accepts ("../x", "a//b") is still named as a
			// source: HashCheck refuses it as a DataError InvalidKey, so the
			// report and the remediation queue say what is wrong with it.
			if o, err := store.Head(ctx, bucket, prefix); err == nil || fault.CodeOf(err) == fault.InvalidKey {
				inputs = append(inputs, migration.Source{Bucket: bucket, Key: prefix, KeyEncoding: "plain", Size: o.Size})
				continue
			} else if !errors.Is(err, objectstore.ErrNotFound) {
				return nil, err
			}
		}
		// dirs: a directory source's index in inputs.
		dirs := map[string]int{}
		err = store.List(ctx, bucket, prefix, func(o objectstore.Object) error {
			listing.Add(bucket, o)
			switch d := migration.DirectorySourceOf(o.Key); {
			case d != "":
				// A File Geodatabase's files are one source, the directory.
				i, ok := dirs[d]
				if !ok {
					i = len(inputs)
					dirs[d] = i
					inputs = append(inputs, migration.Source{Bucket: bucket, Key: d, KeyEncoding: "plain"})
				}
				inputs[i].Size += o.Size
			case !strings.HasSuffix(o.Key, "/") && !formats.IsSidecar(o.Key):
				inputs = append(inputs, migration.Source{Bucket: bucket, Key: o.Key, KeyEncoding: "plain", Size: o.Size})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s, err)
		}
		listing.Listed(bucket, prefix)
	}
	return withoutConditionalSidecars(inputs), nil
}

// withoutConditionalSidecars drops the inputs that are sidecars only
// because their main file is listed beside them (image.XML beside
// image.tif): HashCheck would migrate the main file for them a second time.
func withoutConditionalSidecars(inputs []migration.Source) []migration.Source {
	byDir := map[string][]string{}
	for _, in := range inputs {
		d, b := path.Split(in.Key)
		byDir[in.Bucket+"\x00"+d] = append(byDir[in.Bucket+"\x00"+d], b)
	}
	out := inputs[:0:0]
	for _, in := range inputs {
		d, b := path.Split(in.Key)
		if formats.Conditional(b) && slices.ContainsFunc(byDir[in.Bucket+"\x00"+d], func(m string) bool { return formats.SidecarOf(m, b) }) {
			continue
		}
		out = append(out, in)
	}
	return out
}

// sqsQueue is the SQS queue at url.
func sqsQueue(cfg aws.Config, o awsconfig.Options, url string) *sqsqueue.Queue {
	return sqsqueue.New(awsconfig.NewSQS(cfg, o), sqsqueue.Options{QueueURL: url})
}

// startBackfill starts the deployed backfill state machine (the Distributed
// Map then runs on AWS; follow it in the console).
func (b *backendFlags) startBackfill(ctx context.Context, arn string, input map[string]any, stdout io.Writer) error {
	if arn == "" {
		return usagef("backfill --backend aws needs --state-machine-arn or " + envBackfillStateMachine + " (the stack output BackfillStateMachineArn)")
	}
	body, err := json.Marshal(input)
	if err != nil {
		return err
	}
	d, err := b.deployed(ctx, arn)
	if err != nil {
		return err
	}
	execution, err := d.start(ctx, executionName("backfill"), body)
	if err != nil {
		return fmt.Errorf("start backfill: %w", err)
	}
	fmt.Fprintf(stdout, "started %s\ninput: %s\n", execution, body)
	return nil
}
