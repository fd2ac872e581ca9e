package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// destBucket is the local name of the destination bucket (the --dest dir).
const destBucket = "dest"

// stateDirName holds the state store, the queues and the run reports inside
// the destination directory. The reserved ".geomigrate-" prefix keeps it out
// of object listings.
const stateDirName = ".geomigrate-state"

// localPaths are the files of the embedded backends.
type localPaths struct{ dir, db, remediation, deadLetter, reports, buckets string }

func pathsFor(dest, stateDir string) localPaths {
	if stateDir == "" {
		stateDir = filepath.Join(dest, stateDirName)
	}
	return localPaths{
		dir:         stateDir,
		db:          filepath.Join(stateDir, "state.db"),
		remediation: filepath.Join(stateDir, "remediation.jsonl"),
		deadLetter:  filepath.Join(stateDir, "dead-letter.jsonl"),
		reports:     filepath.Join(stateDir, "reports"),
		buckets:     filepath.Join(stateDir, "buckets.json"),
	}
}

// sourceRoot is a directory given on the command line, served as a bucket.
type sourceRoot struct {
	bucket string
	dir    string
	keys   []string // only these keys (a file argument); nil: every file
}

// localBackend is the embedded stand-in for S3, DynamoDB and SQS.
type localBackend struct {
	store   *dirstore.Store
	db      *boltstore.Store
	tracker *statestore.Tracker
	queues  localrun.Queues
	closers []func() error
	// sweptTemps counts the hidden temporary files of killed writers
	// removed from the destination when this process attached to it.
	sweptTemps int
}

func (b *localBackend) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	return errors.Join(errs...)
}

func openLocal(dest string, paths localPaths, roots []sourceRoot, cfg migration.Config) (*localBackend, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("create destination: %w", err)
	}
	if err := os.MkdirAll(paths.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	opts := []dirstore.Option{dirstore.WithBucketDir(destBucket, dest)}
	for _, r := range roots {
		opts = append(opts, dirstore.WithBucketDir(r.bucket, r.dir))
	}
	store, err := dirstore.New("", opts...)
	if err != nil {
		return nil, err
	}
	b := &localBackend{store: store}
	db, err := boltstore.Open(paths.db)
	if err != nil {
		return nil, fmt.Errorf("open state store: %w", err)
	}
	b.db = db
	b.closers = append(b.closers, db.Close)
	// Temporaries a killed run left in the destination (output root,
	// _staging, sidecars) are swept when no other process writes there.
	attachCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	swept, _, detach, err := store.Attach(attachCtx, destBucket)
	cancel()
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("attach to the destination: %w", err)
	}
	b.sweptTemps = swept
	b.closers = append(b.closers, func() error { detach(); return nil })
	b.tracker = statestore.NewTracker(db, statestore.WithLease(cfg.Lease))
	rq, err := jsonlqueue.Open(paths.remediation)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.closers = append(b.closers, rq.Close)
	dq, err := jsonlqueue.Open(paths.deadLetter)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.closers = append(b.closers, dq.Close)
	b.queues = localrun.Queues{Remediation: rq, DeadLetter: dq}
	return b, nil
}

// newHandlers wires the four steps over a store and a tracker.
func newHandlers(cfg migration.Config, b *localBackend, engine *gdal.Engine, log *slog.Logger) localrun.Handlers {
	finger := migration.StoreFingerprinter{Store: b.store, Threshold: cfg.FingerprintThreshold}
	return localrun.Handlers{
		HashCheck: migration.NewHashCheck(cfg, b.store, b.tracker, finger, log),
		Convert:   migration.NewConvert(cfg, b.store, b.tracker, engine, validate.Output, log),
		Promote:   migration.NewPromote(cfg, b.store, b.tracker, log),
		Classify:  migration.NewClassify(b.tracker, nil, log).WithStagingCleanup(b.store, cfg),
	}
}

var unsafeBucketChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// collectSources turns command-line paths into bucket roots and inputs.
// A directory is one bucket (its base name, also the dataset); a file is a
// key in the bucket of its directory.
func collectSources(args []string, dest string) ([]sourceRoot, []migration.Source, error) {
	destAbs, _ := filepath.Abs(dest)
	byDir := map[string]*sourceRoot{}
	used := map[string]bool{destBucket: true}
	var order []*sourceRoot
	rootFor := func(dir string) *sourceRoot {
		if r, ok := byDir[dir]; ok {
			return r
		}
		name := strings.Trim(unsafeBucketChars.ReplaceAllString(filepath.Base(dir), "-"), "-.")
		if name == "" {
			name = "source"
		}
		base := name
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		used[name] = true
		r := &sourceRoot{bucket: name, dir: dir}
		byDir[dir] = r
		order = append(order, r)
		return r
	}
	var inputs []migration.Source
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("source %s: %w", arg, err)
		}
		if !fi.IsDir() {
			r := rootFor(filepath.Dir(abs))
			key := filepath.Base(abs)
			r.keys = append(r.keys, key)
			inputs = append(inputs, migration.Source{Bucket: r.bucket, Key: key, KeyEncoding: "plain", DatasetID: r.bucket})
			continue
		}
		if abs == destAbs || strings.HasPrefix(destAbs, abs+string(filepath.Separator)) {
			return nil, nil, fmt.Errorf("source %s contains the destination %s; choose a destination outside the sources", arg, dest)
		}
		r := rootFor(abs)
		var keys []string
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") && p != abs {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && !migration.IsSidecar(name) {
				rel, _ := filepath.Rel(abs, p)
				keys = append(keys, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("walk %s: %w", arg, err)
		}
		sort.Strings(keys)
		for _, k := range keys {
			inputs = append(inputs, migration.Source{Bucket: r.bucket, Key: k, KeyEncoding: "plain", DatasetID: r.bucket})
		}
	}
	roots := make([]sourceRoot, len(order))
	for i, r := range order {
		roots[i] = *r
	}
	return roots, inputs, nil
}
