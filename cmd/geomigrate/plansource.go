package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/plan"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// planSource is what a plan reads (plan.Source), and what closes it.
type planSource struct {
	plan.Source
	close func()
}

// readOnlyStore refuses every write: the plan's proof, on top of only
// calling HashCheck.Preview, that nothing is written.
type readOnlyStore struct{ objectstore.Store }

var errPlanWrite = errors.New("geomigrate plan writes nothing")

func (readOnlyStore) Put(context.Context, objectstore.PutRequest) (objectstore.Object, error) {
	return objectstore.Object{}, errPlanWrite
}

func (readOnlyStore) Copy(context.Context, objectstore.CopyRequest) (objectstore.Object, error) {
	return objectstore.Object{}, errPlanWrite
}

func (readOnlyStore) Delete(context.Context, string, string) error { return errPlanWrite }

// LocalPath passes the directory store's in-place paths through (preflight
// reads the file where it is).
func (s readOnlyStore) LocalPath(bucket, key string) (string, error) {
	if lp, ok := s.Store.(objectstore.LocalPather); ok {
		return lp.LocalPath(bucket, key)
	}
	return "", errors.New("not a local store")
}

// emptyState is the state store of a destination no run has written to:
// no records.
type emptyState struct{}

func (emptyState) Get(_ context.Context, id string) (statestore.Job, error) {
	return statestore.Job{}, fmt.Errorf("%s: %w", id, statestore.ErrNotFound)
}

func (emptyState) Put(context.Context, statestore.Job, int64) error { return errPlanWrite }

func (emptyState) List(context.Context, statestore.Status, func(statestore.Job) error) error {
	return nil
}

// localSource lists directories as migrate does (collectSources) and opens
// the destination's state store read-only, if it has one.
func (p *planFlags) localSource(srcs []string) (planSource, error) {
	dest := p.dest
	if dest == "" {
		dest = filepath.Join(os.TempDir(), "geomigrate-plan-no-dest") // never created: only compared with the sources
	}
	roots, inputs, pre, err := collectSources(srcs, dest)
	if err != nil {
		return planSource{}, err
	}
	opts := []dirstore.Option{}
	for _, r := range roots {
		opts = append(opts, dirstore.WithBucketDir(r.bucket, r.dir))
	}
	destExists := false
	if p.dest != "" {
		if fi, err := os.Stat(p.dest); err == nil && fi.IsDir() {
			destExists = true
			opts = append(opts, dirstore.WithBucketDir(destBucket, p.dest))
		}
	}
	ds, err := dirstore.New("", opts...)
	if err != nil {
		return planSource{}, err
	}
	var store objectstore.Store = readOnlyStore{ds}
	if !destExists {
		store = noDestStore{readOnlyStore{ds}}
	}
	var state statestore.Backend = emptyState{}
	closeState := func() {}
	if p.dest != "" || p.stateDir != "" {
		db := pathsFor(p.dest, p.stateDir).db
		switch bs, err := boltstore.OpenReadOnly(db); {
		case err == nil:
			state, closeState = bs, func() { bs.Close() }
		case !errors.Is(err, os.ErrNotExist):
			return planSource{}, fmt.Errorf("state store %s: %w", db, err)
		}
	}
	src := planSource{Source: plan.Source{DestWhere: destWhere(cmp.Or(p.dest, "DEST")), Inputs: inputs, Store: store, Local: true}, close: closeState}
	for _, o := range pre {
		src.Pre = append(src.Pre, plan.File{Dataset: o.Bucket, Bucket: o.Bucket, Key: o.Key, Format: plan.FormatOf(o.Key), Action: plan.ActionIgnore, Reason: o.Reason,
			Bytes: fileSizeIn(roots, o.Bucket, o.Key)})
	}
	src.Config = runConfig(p.handlers, p.book, destBucket, "", p.engineVersion)
	src.HashCheck = func(cfg migration.Config) *migration.HashCheck {
		return migration.NewHashCheck(cfg, store, statestore.NewTracker(state), migration.StoreFingerprinter{Store: store, Threshold: cfg.FastFingerprintAbove()}, slog.New(slog.DiscardHandler))
	}
	return src, nil
}

// noDestStore answers "not found" for the destination bucket: there is no
// destination yet.
type noDestStore struct{ readOnlyStore }

func (s noDestStore) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	if bucket == destBucket {
		return objectstore.Object{}, fmt.Errorf("%s: %w", key, objectstore.ErrNotFound)
	}
	return s.readOnlyStore.Head(ctx, bucket, key)
}

func (s noDestStore) List(ctx context.Context, bucket, prefix string, fn func(objectstore.Object) error) error {
	if bucket == destBucket {
		return nil
	}
	return s.readOnlyStore.List(ctx, bucket, prefix, fn)
}

func fileSizeIn(roots []sourceRoot, bucket, key string) int64 {
	for _, r := range roots {
		if r.bucket == bucket {
			if fi, err := os.Stat(filepath.Join(r.dir, filepath.FromSlash(key))); err == nil && fi.Mode().IsRegular() {
				return fi.Size()
			}
		}
	}
	return 0
}

// awsSource lists the buckets as migrate --backend aws does
// (listS3Sources) and reads the state table. awsapp checks first, read
// only, that the buckets and the table exist (HeadBucket, DescribeTable:
// one line naming what is missing); the conditional-copy probe, which
// writes, is not run.
func (p *planFlags) awsSource(ctx context.Context, srcs []string) (planSource, error) {
	if p.aws.StateTable == "" {
		return planSource{}, usagef("plan --backend aws needs --state-table (read only: what is already migrated)")
	}
	var buckets []string
	for _, s := range srcs {
		b, _, err := s3URI(s)
		if err != nil {
			return planSource{}, err
		}
		buckets = append(buckets, b)
	}
	mcfg := runConfig(p.handlers, p.book, destBucket, "", p.engineVersion)
	if p.dest != "" {
		bucket, prefix, err := s3URI(p.dest)
		if err != nil {
			return planSource{}, fmt.Errorf("--dest: %w", err)
		}
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		mcfg.DestBucket, mcfg.DestPrefix = bucket, prefix
		buckets = append(buckets, bucket)
	}
	// Read only: the conditional-copy probe, which writes, is not run.
	a := p.aws
	a.ConditionalCopy = awsapp.CopyModeClient
	a.QuarantinePrefix = "off" // nothing is routed by a plan
	endpoint := func(o *awsconfig.Options) {
		if p.endpointURL != "" {
			o.EndpointURL = p.endpointURL
		}
	}
	app, err := awsapp.New(ctx, mcfg, a, awsapp.WithLogger(slog.New(slog.DiscardHandler)),
		awsapp.WithPreflight(awsapp.Resources{Buckets: buckets, Table: a.StateTable}), awsapp.WithAWSOptions(endpoint))
	if err != nil {
		return planSource{}, err
	}
	var store objectstore.Store = readOnlyStore{app.Store}
	if p.dest == "" {
		store = noDestStore{readOnlyStore{app.Store}}
	}
	inputs, err := listS3Sources(ctx, store, srcs, nil)
	if err != nil {
		return planSource{}, err
	}
	src := planSource{Source: plan.Source{DestWhere: destWhere(cmp.Or(p.dest, "DEST")), Store: store, Config: mcfg}, close: func() {}}
	for _, in := range inputs {
		if why := migration.NotGeospatial(in.Key); why != "" {
			src.Pre = append(src.Pre, plan.File{Dataset: in.Bucket, Bucket: in.Bucket, Key: in.Key, Format: plan.FormatOf(in.Key), Action: plan.ActionIgnore, Reason: why})
			continue
		}
		src.Inputs = append(src.Inputs, in)
	}
	src.HashCheck = func(cfg migration.Config) *migration.HashCheck {
		return migration.NewHashCheck(cfg, store, app.Tracker, migration.StoreFingerprinter{Store: store, Threshold: cfg.FastFingerprintAbove()}, slog.New(slog.DiscardHandler))
	}
	return src, nil
}
