// Package plan is `geomigrate plan`'s domain: what a migrate would do with
// every input (convert, skip, refuse, ignore) and what running it on AWS
// would cost, decided through HashCheck.Preview and GDAL's preflight over
// stores that refuse every write, and printed as text. The sources (a
// local directory store, or S3 and DynamoDB) and the GDAL engine are the
// caller's: Source and Preflighter.
package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Actions: what a migrate would do with a file.
const (
	ActionConvert = "convert"
	ActionSkip    = "skip"
	ActionRefuse  = "refuse"
	ActionIgnore  = "ignore"
)

// File is one file of the plan.
type File struct {
	Dataset string `json:"dataset"`
	Bucket  string `json:"bucket"`
	Key     string `json:"key"`
	Format  string `json:"format"`
	Bytes   int64  `json:"bytes"`
	Action  string `json:"action"`
	// Reason: the skip reason (already_migrated, in_progress,
	// awaiting_remediation …), the refusal, or why the file is ignored.
	Reason string `json:"reason,omitempty"`
	// Error and Code: the error type and code a refusal ends in
	// (DataError UnsafeSource …); Stage is where (hashcheck, preflight).
	Error  string `json:"error,omitempty"`
	Code   string `json:"code,omitempty"`
	Stage  string `json:"stage,omitempty"`
	Driver string `json:"driver,omitempty"`
	// Preflight is "passed", or why it was not run.
	Preflight string `json:"preflight,omitempty"`
	// RecipeHash is the recipe this file is converted (or was migrated)
	// with: the run-wide recipe refined by --recipe's rules for its key, as
	// in migrate's report (files[].recipe_hash). Empty when decided before
	// the recipe matters (ignored, excluded, refused by HashCheck).
	RecipeHash string `json:"recipe_hash,omitempty"`
	// rangeRead: on AWS, Convert would read it by ranged GETs (a format
	// that allows it, and no sidecar: migration.Convert.run), whatever the
	// backend of the plan.
	rangeRead bool
	// container: HashCheck routes it to the container task (its work is
	// over the Lambda's limits: migration.ContainerLimits).
	container bool
}

// Counts are files and bytes by action.
type Counts struct {
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
	Convert      int   `json:"convert"`
	ConvertBytes int64 `json:"convert_bytes"`
	Skip         int   `json:"skip"`
	SkipBytes    int64 `json:"skip_bytes"`
	Refuse       int   `json:"refuse"`
	RefuseBytes  int64 `json:"refuse_bytes"`
	Ignore       int   `json:"ignore"`
}

func (c *Counts) add(f File) {
	c.Files++
	c.Bytes += f.Bytes
	switch f.Action {
	case ActionConvert:
		c.Convert++
		c.ConvertBytes += f.Bytes
	case ActionSkip:
		c.Skip++
		c.SkipBytes += f.Bytes
	case ActionRefuse:
		c.Refuse++
		c.RefuseBytes += f.Bytes
	case ActionIgnore:
		c.Ignore++
	}
}

// Report is the plan (the --json document).
type Report struct {
	Geomigrate string   `json:"geomigrate"`
	Backend    string   `json:"backend"`
	Sources    []string `json:"sources"`
	Dest       string   `json:"dest,omitempty"`
	GDAL       string   `json:"gdal"`
	// RecipeHash is the run-wide recipe (the handler flags'); each file's
	// own, refined by the recipe book, is in Files and ByRecipe.
	RecipeHash string `json:"recipe_hash"`
	Written    string `json:"written"`
	// Clashes are the output keys more than one source would be written
	// to: each of those sources would be routed (DestinationConflict).
	Clashes   []Clash            `json:"clashes,omitempty"`
	Totals    Counts             `json:"totals"`
	ByFormat  map[string]*Counts `json:"by_format"`
	ByDataset map[string]*Counts `json:"by_dataset"`
	// ByRecipe counts the files by their recipe hash.
	ByRecipe map[string]*Counts `json:"by_recipe"`
	Files    []File             `json:"files"`
	Estimate cost.Estimate      `json:"estimate"`
	Model    Model              `json:"model"`
}

// Clash is one output key claimed by several sources.
type Clash struct {
	Dest    string   `json:"dest"`
	Sources []string `json:"sources"`
}

// Model is what the estimate assumed.
type Model struct {
	Prices     cost.Prices                 `json:"prices"`
	Settings   cost.Settings               `json:"settings"`
	Walks      map[cost.Path]cost.Walk     `json:"walks"`
	PerFile    map[cost.Path]cost.Requests `json:"requests_per_file"`
	Throughput cost.Throughput             `json:"throughput"`
	// Backfill is what running it as a backfill adds per run and per item.
	Backfill cost.BackfillWalk `json:"backfill"`
	Quotas   cost.Quotas       `json:"quotas"`
}

// Source is what a plan reads: the inputs, what the listing already
// decided, and a HashCheck over stores that refuse every write.
type Source struct {
	Inputs []migration.Source
	// Pre are the files the listing decided (ignored), reported after
	// the inputs.
	Pre   []File
	Store objectstore.Store
	// HashCheck builds the HashCheck that decides the inputs with Config.
	HashCheck func(migration.Config) *migration.HashCheck
	Config    migration.Config
	// Local: Store is a local directory store, whose files preflight
	// reads in place (objectstore.LocalPather).
	Local bool
	// DestWhere shows an output key under the destination as the user
	// named it (in the clashes).
	DestWhere func(key string) string
}

// Preflighter is GDAL's preflight of a source (gdal.Engine): the driver
// that opens it, or why it is refused, without converting.
type Preflighter interface {
	Version() string
	Preflight(ctx context.Context, src string, r recipe.Recipe) (driver string, err error)
	PreflightReader(ctx context.Context, ra io.ReaderAt, size int64, name string, r recipe.Recipe) (driver string, err error)
}

// FormatOf is a key's format in the plan's counts: the registry's
// extension, else the key's own, else "(none)".
func FormatOf(key string) string {
	if ext := formats.Lookup(key).Ext; ext != "" {
		return ext
	}
	if ext := strings.ToLower(path.Ext(key)); ext != "" {
		return ext
	}
	return "(none)"
}

// Run decides every input with HashCheck.Preview and GDAL's preflight, and
// estimates the cost. Each file's recipe is the one HashCheck resolves for
// its key (src.Config: the run-wide recipe refined by the recipe book), as
// in the run.
func Run(ctx context.Context, src Source, engine Preflighter, model cost.Model, workers int) (*Report, error) {
	cfg := src.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := src.HashCheck(cfg)
	r := &Report{Geomigrate: buildinfo.Version, GDAL: engine.Version(), RecipeHash: hc.Recipe().ShortHash(),
		Written:  "nothing: no state record, output, staging object or queue message",
		ByFormat: map[string]*Counts{}, ByDataset: map[string]*Counts{}, ByRecipe: map[string]*Counts{}}
	// Every clash at once: migrate routes each of their sources (the
	// files' own entries say so) and converts the rest.
	clashes := hc.FindClashes(src.Inputs)
	hc.WithClashes(clashes, src.DestWhere)
	for _, c := range clashes {
		pc := Clash{Dest: src.DestWhere(c.DestKey)}
		for _, s := range c.Sources {
			pc.Sources = append(pc.Sources, s.Bucket+"/"+s.Key)
		}
		r.Clashes = append(r.Clashes, pc)
	}
	sizes := sidecarSizes{store: src.Store, dirs: map[string][]objectstore.Object{}}
	// Hashing dominates: inputs are decided workers at a time, reported in
	// input order.
	files := make([]File, len(src.Inputs))
	errs := make([]error, len(src.Inputs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files[i], errs[i] = decide(ctx, hc, engine, src, src.Inputs[i], &sizes)
			}
		}()
	}
	for i := range src.Inputs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.Files = append(files, src.Pre...)
	var groups []cost.Group
	type gk struct {
		format string
		path   cost.Path
		name   bool
		rng    bool
		ctr    bool
	}
	byGroup := map[gk]*cost.Group{}
	for _, f := range r.Files {
		r.Totals.add(f)
		for _, m := range []struct {
			into map[string]*Counts
			key  string
		}{{r.ByFormat, f.Format}, {r.ByDataset, f.Dataset}, {r.ByRecipe, f.RecipeHash}} {
			if m.key == "" {
				continue // ByRecipe: a file decided before its recipe mattered
			}
			if m.into[m.key] == nil {
				m.into[m.key] = &Counts{}
			}
			m.into[m.key].add(f)
		}
		k := gk{format: f.Format}
		switch {
		case f.Action == ActionConvert:
			k.path, k.rng, k.ctr = cost.Converted, f.rangeRead, f.container
		case f.Action == ActionSkip:
			k.path = cost.Skipped
			k.name = f.Reason == migration.ReasonNotGeospatial || f.Reason == migration.ReasonFolderMarker
		case f.Action == ActionRefuse && f.Stage == "preflight":
			k.path = cost.Remediation
		case f.Action == ActionRefuse:
			k.path = cost.Rejected
		case f.Action == ActionIgnore && (migration.NotGeospatial(f.Key) != "" || f.Reason == migration.ReasonExcluded):
			// On AWS an event or a backfill item starts an execution that
			// HashCheck skips on the name (an excluded key after one HEAD,
			// not charged: nothing is read or claimed).
			k.path, k.name = cost.Skipped, true
		default:
			continue // not an object on S3 (a link not followed, a sidecar alone)
		}
		g := byGroup[k]
		if g == nil {
			g = &cost.Group{Format: k.format, Path: k.path, NameOnly: k.name, RangeRead: k.rng, Container: k.ctr}
			byGroup[k] = g
		}
		g.Files++
		g.Bytes += f.Bytes
	}
	for _, g := range byGroup {
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Format != groups[j].Format {
			return groups[i].Format < groups[j].Format
		}
		return groups[i].Path < groups[j].Path
	})
	est, err := cost.Calculate(model, groups)
	if err != nil {
		return nil, err
	}
	r.Estimate = est
	r.Model = Model{Prices: model.Prices, Settings: model.Settings, Walks: model.Walks, PerFile: model.PerFile, Throughput: model.Throughput, Backfill: model.Backfill, Quotas: model.Quotas}
	return r, nil
}

// decide decides one input.
func decide(ctx context.Context, hc *migration.HashCheck, engine Preflighter, src Source, in migration.Source, sizes *sidecarSizes) (File, error) {
	f := File{Dataset: in.DatasetID, Bucket: in.Bucket, Key: in.Key, Format: FormatOf(in.Key)}
	if f.Dataset == "" {
		f.Dataset = in.Bucket
	}
	out, err := hc.Preview(ctx, in)
	if err != nil {
		if fault.TierOf(err) != fault.TierDataSpecific {
			return f, fmt.Errorf("plan %s/%s: %w", in.Bucket, in.Key, err)
		}
		f.Action, f.Stage = ActionRefuse, "hashcheck"
		f.fillError(err)
		return f, nil
	}
	f.Key, f.RecipeHash = out.Source.Key, out.Job.RecipeHash
	if out.Decision == migration.DecisionSkip && ignoredByRun(out.Reason) {
		f.Action, f.Reason = ActionIgnore, out.Reason
		return f, nil
	}
	if out.Decision == migration.DecisionSkip {
		f.Action, f.Reason = ActionSkip, out.Reason
		if out.Job.ID != "" {
			f.Bytes, _ = sizes.total(ctx, in.Bucket, out.Job.SourceKey, out.Job.SourceSize)
		}
		return f, nil
	}
	f.Action = ActionConvert
	var sidecars int
	f.Bytes, sidecars = sizes.total(ctx, in.Bucket, out.Job.SourceKey, out.Job.SourceSize)
	f.rangeRead = formats.ReadableByRange(out.Job.SourceKey) && sidecars == 0
	f.container = out.Route != nil && out.Route.Engine == migration.EngineContainer
	f.Driver, f.Preflight, err = preflight(ctx, engine, src, out.Job)
	if err != nil {
		if fault.TierOf(err) != fault.TierDataSpecific {
			return f, fmt.Errorf("plan %s/%s: preflight: %w", in.Bucket, in.Key, err)
		}
		f.Action, f.Stage, f.Preflight = ActionRefuse, "preflight", ""
		f.fillError(err)
	}
	return f, nil
}

// ignoredByRun: HashCheck skips of these reasons are reported as ignored
// by a run (localrun.Summarize), not skipped: the files are not the
// pipeline's to convert.
func ignoredByRun(reason string) bool {
	return reason == migration.ReasonNotGeospatial || reason == migration.ReasonExcluded
}

func (f *File) fillError(err error) {
	f.Reason = err.Error()
	f.Code = string(fault.CodeOf(err))
	f.Error = errorTypeName(err)
}

// errorTypeName is the taxonomy type an error would reach Step Functions
// as (the errorType Catch and Classify see).
func errorTypeName(err error) string {
	var (
		d *fault.DataError
		s *fault.SystemicError
		t *fault.TransientError
	)
	switch {
	case errors.As(err, &d):
		return "DataError"
	case errors.As(err, &s):
		return "SystemicError"
	case errors.As(err, &t):
		return "TransientError"
	}
	return "error"
}

// preflight runs GDAL's preflight on the job's source: in place on a
// local store, by ranged reads of an S3 object that is read that way by
// Convert too; other S3 sources (several files, or formats whose library
// opens the file itself) would have to be downloaded, and are not. The
// recipe is the job's, which Convert converts with (budgets, formats).
func preflight(ctx context.Context, engine Preflighter, src Source, job migration.Job) (driver, note string, err error) {
	if lp, ok := src.Store.(objectstore.LocalPather); ok && src.Local {
		p, perr := lp.LocalPath(job.SourceBucket, job.SourceKey)
		if perr == nil {
			driver, err = engine.Preflight(ctx, p, job.Recipe)
			return driver, "passed", err
		}
	}
	if !formats.ReadableByRange(job.SourceKey) {
		return "", "not run: the source would have to be downloaded (several files, or a library that opens the file itself)", nil
	}
	ra := objectstore.NewReaderAt(ctx, src.Store, job.SourceBucket, job.SourceKey, job.SourceSize)
	driver, err = engine.PreflightReader(ctx, ra, job.SourceSize, path.Base(job.SourceKey), job.Recipe)
	return driver, "passed", err
}

// sidecarSizes adds the sizes of a main file's sidecars (listed once per
// directory).
type sidecarSizes struct {
	store objectstore.Store
	mu    sync.Mutex
	dirs  map[string][]objectstore.Object
}

// total is size plus the sizes of key's sidecars, and their number.
func (s *sidecarSizes) total(ctx context.Context, bucket, key string, size int64) (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := path.Dir(key)
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	id := bucket + "\x00" + prefix
	objs, ok := s.dirs[id]
	if !ok {
		_ = s.store.List(ctx, bucket, prefix, func(o objectstore.Object) error {
			if !strings.Contains(strings.TrimPrefix(o.Key, prefix), "/") {
				objs = append(objs, o)
			}
			return nil
		})
		s.dirs[id] = objs
	}
	n := 0
	for _, o := range objs {
		if o.Key != key && formats.SidecarOf(path.Base(key), path.Base(o.Key)) {
			size += o.Size
			n++
		}
	}
	return size, n
}
