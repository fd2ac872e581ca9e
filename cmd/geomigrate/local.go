package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/jsonlqueue"
	"github.com/geomigrate/geomigrate/internal/signals"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// destBucket is the local name of the destination bucket (the --dest dir).
const destBucket = "dest"

// stateDirName holds the state store, the queues and the run reports inside
// the destination directory. The reserved ".geomigrate-" prefix keeps it out
// of object listings.
const stateDirName = ".geomigrate-state"

// localPaths are the files of the embedded backends.
type localPaths struct{ dir, db, remediation, deadLetter, reports, buckets string }

// quarantineBucket is the local bucket of the quarantine bundles: the
// directory STATE-DIR/quarantine (quarantineDirName), outside the output
// tree: a destination holds only outputs, their STAC metadata and the
// state directory.
const (
	quarantineBucket  = "quarantine"
	quarantineDirName = "quarantine"
)

// newQuarantine is the writer of the local quarantine bundles; book holds
// the records of every handler (all run in this process).
func newQuarantine(b *localBackend, engine *gdal.Engine, book *quarantine.LogBook, stagingPrefix string, h config.Handlers) (*quarantine.Writer, error) {
	v := quarantine.Versions{Geomigrate: buildinfo.Version, GDAL: engine.Version()}
	// VersionDetail is "GDAL x; PROJ y".
	if _, proj, ok := strings.Cut(engine.VersionDetail(), "PROJ "); ok {
		v.PROJ = proj
	}
	return quarantine.NewWriter(quarantine.Config{Store: b.store, Bucket: quarantineBucket, StagingPrefix: stagingPrefix,
		CopyInput: h.QuarantineCopyInput, CopyLimit: h.QuarantineCopyLimit, Versions: v, Logs: book,
		LogScope: "every handler's records of the execution at info level and above (the local executor runs them all in this process)"})
}

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
	store *dirstore.Store
	// dirs are the directories store serves, by bucket: a container task
	// (a child process) opens the same.
	dirs    map[string]string
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

// commitState commits the records the state store holds back
// (docs/decisions/0115: each job's COMPLETED rides in the next job's
// claim) once a run's executions have ended, before the run reports them.
func (b *backend) commitState() error {
	if b.local == nil {
		return nil
	}
	return b.local.db.Commit()
}

// stateNotCommitted is a run's error when commitState failed.
func stateNotCommitted(err error) error {
	return fmt.Errorf("the outputs are published, but the state store could not commit their records (the next run takes those files over and finds them promoted): %w", err)
}

func openLocal(dest string, paths localPaths, roots []sourceRoot, cfg migration.Config) (*localBackend, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("create destination: %w", err)
	}
	if err := os.MkdirAll(paths.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	qdir := filepath.Join(paths.dir, quarantineDirName)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return nil, fmt.Errorf("create quarantine dir: %w", err)
	}
	dirs := map[string]string{destBucket: dest, quarantineBucket: qdir}
	opts := []dirstore.Option{dirstore.WithBucketDir(destBucket, dest), dirstore.WithBucketDir(quarantineBucket, qdir)}
	for _, r := range roots {
		opts = append(opts, dirstore.WithBucketDir(r.bucket, r.dir))
		dirs[r.bucket] = r.dir
	}
	store, err := dirstore.New("", opts...)
	if err != nil {
		return nil, err
	}
	b := &localBackend{store: store, dirs: dirs}
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

// openLocalStateView opens the state store and the queues of a local
// destination for status.
func openLocalStateView(dest, stateDir string) (*stateView, error) {
	if dest == "" && stateDir == "" {
		return nil, usagef("status needs --dest (or --state-dir), or --backend aws")
	}
	paths := pathsFor(dest, stateDir)
	if _, err := os.Stat(paths.db); err != nil {
		return nil, fmt.Errorf("no state store at %s: has a migration run there?", paths.db)
	}
	bolt, err := boltstore.Open(paths.db)
	if err != nil {
		return nil, err
	}
	v := &stateView{db: bolt, where: paths.db, close: bolt.Close, deadLetterAge: func(ctx context.Context) (*signals.QueueAge, error) {
		return localrun.DeadLetterAge(ctx, paths.deadLetter, time.Now(), supersededBy(ctx, bolt.Get))
	}}
	for _, q := range []struct{ name, path string }{{"remediation", paths.remediation}, {"dead-letter", paths.deadLetter}} {
		d := queueDepth{name: q.name, where: q.path, depth: func(ctx context.Context) (queue.Depth, error) {
			n, err := countMessages(ctx, q.path)
			return queue.Depth{Visible: n}, err
		}}
		if q.path == paths.deadLetter {
			d.superseded = func(ctx context.Context) (int, error) {
				return countSuperseded(ctx, q.path, supersededBy(ctx, bolt.Get))
			}
		}
		v.queues = append(v.queues, d)
	}
	return v, nil
}

// wrapObjects lets a test put a fault-injecting store between the handlers
// and the directories (a full disk cannot be had without root).
var wrapObjects = func(s objectstore.Store) objectstore.Store { return s }

var unsafeBucketChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// collectSources turns command-line paths into bucket roots and inputs.
// A directory is one bucket (its base name, also the dataset); a file is a
// key in the bucket of its directory (a file named through a symbolic link
// is read where the link points).
//
// Inside a directory, symbolic links to files and directories are followed
// when their target lies inside the same source root (keys keep the link's
// path, as cp -L would), with loops cut; a link pointing outside the root, a
// broken link, a loop, or anything that is not a regular file is listed in
// pre as skipped with the reason. Files that are no geospatial candidate
// (migration.NotGeospatial: README.txt, Thumbs.db, .DS_Store …) and hidden
// directories are listed in pre as ignored. Sidecars (.dbf, .prj, .tfw …)
// travel with their main file and are not inputs of their own.
func collectSources(args []string, dest string) (roots []sourceRoot, inputs []migration.Source, pre []localrun.Outcome, err error) {
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
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, nil, nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("source %s: %w", arg, err)
		}
		if !fi.IsDir() {
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			r := rootFor(filepath.Dir(abs))
			key := filepath.Base(abs)
			r.keys = append(r.keys, key)
			inputs = append(inputs, migration.Source{Bucket: r.bucket, Key: key, KeyEncoding: "plain", DatasetID: r.bucket, Size: fi.Size()})
			continue
		}
		if abs == destAbs || strings.HasPrefix(destAbs, abs+string(filepath.Separator)) {
			return nil, nil, nil, fmt.Errorf("source %s contains the destination %s; choose a destination outside the sources", arg, dest)
		}
		r := rootFor(abs)
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("source %s: %w", arg, err)
		}
		w := &sourceWalk{bucket: r.bucket, realRoot: real}
		if err := w.walk(abs, "", []string{real}); err != nil {
			return nil, nil, nil, fmt.Errorf("walk %s: %w", arg, err)
		}
		sort.Strings(w.keys)
		for _, k := range w.keys {
			inputs = append(inputs, migration.Source{Bucket: r.bucket, Key: k, KeyEncoding: "plain", DatasetID: r.bucket, Size: w.sizes[k]})
		}
		pre = append(pre, w.pre...)
	}
	roots = make([]sourceRoot, len(order))
	for i, r := range order {
		roots[i] = *r
	}
	return roots, inputs, pre, nil
}

// sourceWalk collects the keys of one source root.
type sourceWalk struct {
	bucket   string
	realRoot string
	keys     []string
	// sizes are the keys' bytes as stat found them (the run's ETA).
	sizes map[string]int64
	pre   []localrun.Outcome
}

func (w *sourceWalk) add(key string, size int64) {
	if w.sizes == nil {
		w.sizes = map[string]int64{}
	}
	w.keys = append(w.keys, key)
	w.sizes[key] = size
}

func (w *sourceWalk) note(key, status, reason string) {
	w.pre = append(w.pre, localrun.Outcome{Bucket: w.bucket, Key: key, Status: status, Reason: reason})
}

// hasMain reports whether a directory listing holds the main file of the
// sidecar named name.
func hasMain(entries []fs.DirEntry, name string) bool {
	for _, e := range entries {
		if formats.SidecarOf(e.Name(), name) {
			return true
		}
	}
	return false
}

// walk lists dir (key prefix rel); ancestors are the real paths of the
// directories being walked, to cut loops through directory links.
func (w *sourceWalk) walk(dir, rel string, ancestors []string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		p, key := filepath.Join(dir, name), path.Join(rel, name)
		if strings.HasPrefix(name, ".geomigrate-") {
			continue // the directory store's own files (an earlier --dest given as a source)
		}
		mode := e.Type()
		var size int64
		if mode&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				w.note(key, localrun.StatusSkipped, "symbolic link to a missing target: not followed")
				continue
			}
			if real != w.realRoot && !strings.HasPrefix(real, w.realRoot+string(filepath.Separator)) {
				w.note(key, localrun.StatusSkipped, "symbolic link to "+real+", outside the source root: not followed")
				continue
			}
			fi, err := os.Stat(real)
			if err != nil {
				w.note(key, localrun.StatusSkipped, "symbolic link target cannot be read: "+err.Error())
				continue
			}
			if fi.IsDir() {
				if slices.Contains(ancestors, real) {
					w.note(key, localrun.StatusSkipped, "symbolic link loop (points to an enclosing directory): not followed")
					continue
				}
				if err := w.walk(p, key, append(ancestors, real)); err != nil {
					return err
				}
				continue
			}
			mode, size = fi.Mode().Type(), fi.Size()
		} else if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		switch {
		case mode.IsDir():
			if strings.HasPrefix(name, ".") {
				w.note(key, localrun.StatusIgnored, "hidden directory: not descended")
				continue
			}
			if formats.Lookup(name).Directory {
				// A File Geodatabase is one source, its files the parts
				// GDAL reads together: never walked into.
				w.add(key, directorySize(p))
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			if err := w.walk(p, key, append(ancestors, real)); err != nil {
				return err
			}
		case !mode.IsRegular():
			w.note(key, localrun.StatusSkipped, "not a regular file ("+mode.String()+")")
		case formats.IsSidecar(name), formats.Conditional(name) && hasMain(entries, name):
			// Read with its main file (image.XML beside image.tif too); one
			// without a main file is listed rather than dropped without a
			// word.
			if !hasMain(entries, name) {
				w.note(key, localrun.StatusIgnored, "sidecar file without its main file (nothing to read it with)")
			}
		default:
			if why := migration.NotGeospatial(key); why != "" {
				w.note(key, localrun.StatusIgnored, why)
				continue
			}
			w.add(key, size)
		}
	}
	return nil
}

// directorySize is the bytes of the regular files under dir (a File
// Geodatabase read as one source); what cannot be read counts nothing.
func directorySize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
