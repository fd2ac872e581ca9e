package main

// Size: the plan's model and its per-file computation; the sources it reads are in plansource.go, its printing in planprint.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/termtable"
)

// planCmd is `geomigrate plan`: what migrate would do, writing nothing,
// and what running it on AWS would cost. The recipe settings are migrate's
// own (config.Handlers, --recipe and --co, resolved per key as migrate
// does: recipeFlags.commandBook, runConfig); the cost model's are its
// flags, with cost.DefaultSettings as defaults (kong variables set in
// newParser).
type planCmd struct {
	Sources  []string        `arg:"" name:"SRC" help:"Source files and directories (a directory is one dataset), or s3://BUCKET[/PREFIX] with --backend aws."`
	Dest     string          `name:"dest" group:"io" placeholder:"DIR" help:"Destination of earlier runs, consulted read-only (a directory, or s3://BUCKET[/PREFIX] with --backend aws); none: every file is new."`
	StateDir string          `name:"state-dir" group:"state" placeholder:"DIR" help:"State directory (default DEST/.geomigrate-state)."`
	JSON     bool            `name:"json" group:"output" help:"Print the plan as one JSON document."`
	Workers  int             `name:"workers" group:"limits" default:"${workers}" help:"Files hashed and preflighted at once."`
	Prices   string          `name:"prices" group:"cost" placeholder:"FILE" help:"JSON file overriding fields of the price table (internal/cost/prices.json)."`
	Handlers config.Handlers `embed:""`
	Recipes  recipeFlags     `embed:""`

	Architecture string  `name:"architecture" group:"cost" enum:"arm64,x86_64" default:"${plan_architecture}" help:"Lambda architecture: arm64 or x86_64."`
	ConvertMB    int     `name:"convert-memory" group:"cost" default:"${plan_convert_memory}" help:"Convert function memory in MB (infra convertMemoryMB)."`
	SmallMB      int     `name:"small-memory" group:"cost" default:"${plan_small_memory}" help:"HashCheck, Promote and Classify memory in MB (infra smallFunctionMemoryMB)."`
	Concurrency  int     `name:"concurrency" group:"cost" default:"${plan_concurrency}" help:"Lambda concurrency available to the run (the account quota)."`
	HashReadMBps float64 `name:"hash-read-mbps" group:"cost" default:"${plan_hash_read_mbps}" help:"Assumed MB/s of HashCheck's read of a source from S3."`
	StepMS       float64 `name:"step-ms" group:"cost" default:"${plan_step_ms}" help:"Assumed duration in ms of a HashCheck, Promote or Classify invocation besides reading."`
	CPUFactor    float64 `name:"cpu-factor" group:"cost" default:"${plan_cpu_factor}" help:"Lambda vCPU speed relative to a core of the machine that measured the throughput."`
	UsefulVCPUs  float64 `name:"useful-vcpus" group:"cost" default:"${plan_useful_vcpus}" help:"Most vCPUs a conversion is assumed to use (the throughput was measured on one)."`
	MaxConc      int     `name:"max-concurrency" group:"cost" default:"${plan_max_concurrency}" help:"The backfill's MaxConcurrency (the policy's backfill.max_concurrency): migrate executions at once."`
	QuotaRegion  string  `name:"quota-region" group:"cost" enum:"large,other" default:"large" help:"Quota preset: large (us-east-1, us-west-2, eu-west-1) or other (AWS's lower Step Functions figures elsewhere)."`
	Quotas       string  `name:"quotas" group:"cost" placeholder:"FILE" help:"JSON file overriding fields of the quota table (cost.DefaultQuotas: an account's raised or a new account's lower quotas)."`

	Backend     string     `name:"backend" group:"io" type:"fold" enum:"local,aws" default:"local" help:"local (directories) or aws (S3 sources, DynamoDB state table, read only)."`
	AWS         config.AWS `embed:"" group:"aws"`
	EndpointURL string     `name:"endpoint-url" group:"aws" placeholder:"URL" help:"One endpoint for S3 and DynamoDB; wins over AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>."`
}

// planVars are the kong variables holding the cost model's defaults.
func planVars() map[string]string {
	d := cost.DefaultSettings()
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return map[string]string{
		"plan_architecture": d.Architecture, "plan_convert_memory": strconv.Itoa(d.ConvertMemoryMB),
		"plan_small_memory": strconv.Itoa(d.SmallMemoryMB), "plan_concurrency": strconv.Itoa(d.Concurrency),
		"plan_hash_read_mbps": f(d.HashReadMBPerSecond), "plan_step_ms": f(d.StepMS),
		"plan_cpu_factor": f(d.CPUFactor), "plan_useful_vcpus": f(d.UsefulVCPUs),
		"plan_max_concurrency": strconv.Itoa(d.MaxConcurrency),
	}
}

// Help is the text under the usage line.
func (*planCmd) Help() string {
	return `What migrate would do, without writing anything: the files it would convert,
skip (already migrated with this recipe, in progress, awaiting remediation),
refuse (HashCheck or GDAL preflight, with the reason) and ignore, by format,
dataset and recipe, and what running it on AWS would cost. Sources are read (hashed,
as HashCheck does); the state store and the destination are only read.
Give the recipe flags migrate will get (--recipe, --co, --zstd-level,
--vector-format): each file's recipe is resolved as migrate resolves it.
  geomigrate plan samples/ --dest out/
  geomigrate plan samples/ --dest out/ --recipe recipe.yaml
  geomigrate plan s3://archive/rasters/ --backend aws --state-table T --dest s3://cloud-native/out`
}

func (c *planCmd) Run(e *cmdEnv, k *kong.Context) error {
	if c.Workers < 1 {
		return usagef("--workers %d: want at least 1", c.Workers)
	}
	book, err := c.Recipes.commandBook(k, c.Handlers)
	if err != nil {
		return err
	}
	p := planFlags{dest: c.Dest, stateDir: c.StateDir, backend: c.Backend, handlers: c.Handlers, book: book, recipeFile: c.Recipes.File, workers: c.Workers,
		asJSON: c.JSON, pricesFile: c.Prices, aws: c.AWS, endpointURL: c.EndpointURL, settings: cost.DefaultSettings()}
	p.settings.Architecture, p.settings.ConvertMemoryMB, p.settings.SmallMemoryMB = c.Architecture, c.ConvertMB, c.SmallMB
	p.settings.Concurrency, p.settings.HashReadMBPerSecond, p.settings.StepMS = c.Concurrency, c.HashReadMBps, c.StepMS
	p.settings.CPUFactor, p.settings.UsefulVCPUs, p.settings.MaxConcurrency = c.CPUFactor, c.UsefulVCPUs, c.MaxConc
	p.quotaRegion, p.quotasFile = c.QuotaRegion, c.Quotas
	return runPlan(e.ctx, &p, c.Sources, e.stdout)
}

// planFlags are the plan's settings once parsed.
type planFlags struct {
	dest, stateDir, backend string
	handlers                config.Handlers
	// book is the recipe book (--recipe, --co and the handler flags
	// given), as migrate builds it.
	book          *recipe.Book
	recipeFile    string // --recipe, for messages
	engineVersion string // GDAL's, named by every recipe
	workers       int
	asJSON        bool
	pricesFile    string
	quotaRegion   string // a cost.QuotaPresets key; "" is the default table
	quotasFile    string
	settings      cost.Settings
	aws           config.AWS
	endpointURL   string
}

// Plan actions: what a migrate would do with a file.
const (
	actionConvert = "convert"
	actionSkip    = "skip"
	actionRefuse  = "refuse"
	actionIgnore  = "ignore"
)

// planFile is one file of the plan.
type planFile struct {
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

// planCounts are files and bytes by action.
type planCounts struct {
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

func (c *planCounts) add(f planFile) {
	c.Files++
	c.Bytes += f.Bytes
	switch f.Action {
	case actionConvert:
		c.Convert++
		c.ConvertBytes += f.Bytes
	case actionSkip:
		c.Skip++
		c.SkipBytes += f.Bytes
	case actionRefuse:
		c.Refuse++
		c.RefuseBytes += f.Bytes
	case actionIgnore:
		c.Ignore++
	}
}

// planReport is the plan (the --json document).
type planReport struct {
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
	Clashes   []planClash            `json:"clashes,omitempty"`
	Totals    planCounts             `json:"totals"`
	ByFormat  map[string]*planCounts `json:"by_format"`
	ByDataset map[string]*planCounts `json:"by_dataset"`
	// ByRecipe counts the files by their recipe hash.
	ByRecipe map[string]*planCounts `json:"by_recipe"`
	Files    []planFile             `json:"files"`
	Estimate cost.Estimate          `json:"estimate"`
	Model    planModel              `json:"model"`
}

// planClash is one output key claimed by several sources.
type planClash struct {
	Dest    string   `json:"dest"`
	Sources []string `json:"sources"`
}

// planModel is what the estimate assumed.
type planModel struct {
	Prices     cost.Prices                 `json:"prices"`
	Settings   cost.Settings               `json:"settings"`
	Walks      map[cost.Path]cost.Walk     `json:"walks"`
	PerFile    map[cost.Path]cost.Requests `json:"requests_per_file"`
	Throughput cost.Throughput             `json:"throughput"`
	// Backfill is what running it as a backfill adds per run and per item.
	Backfill cost.BackfillWalk `json:"backfill"`
	Quotas   cost.Quotas       `json:"quotas"`
}

func runPlan(ctx context.Context, p *planFlags, srcs []string, stdout io.Writer) error {
	model, err := p.model(ctx)
	if err != nil {
		return err
	}
	engine, err := gdal.New()
	if err != nil {
		return fmt.Errorf("GDAL: %w", err)
	}
	if err := checkRecipes(p.book, p.recipeFile, engine); err != nil {
		return err
	}
	p.engineVersion = engine.Version()
	var src planSource
	switch p.backend {
	case "local":
		for _, s := range srcs {
			if strings.HasPrefix(s, "s3://") {
				return usagef("%s: s3:// sources need --backend aws (and --state-table)", s)
			}
		}
		src, err = p.localSource(srcs)
	case "aws":
		src, err = p.awsSource(ctx, srcs)
	default:
		return fmt.Errorf("--backend %q: want local or aws", p.backend)
	}
	if err != nil {
		return err
	}
	defer src.close()
	report, err := plan(ctx, src, engine, model, p.workers)
	if err != nil {
		return err
	}
	report.Backend, report.Sources, report.Dest = p.backend, srcs, p.dest
	if p.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	report.print(stdout, termtable.Width(stdout))
	return nil
}

// model is the cost model with the flags and the --prices file applied.
func (p *planFlags) model(ctx context.Context) (cost.Model, error) {
	m, err := cost.DefaultModel(ctx)
	if err != nil {
		return cost.Model{}, err
	}
	if p.pricesFile != "" {
		f, err := os.Open(p.pricesFile)
		if err != nil {
			return cost.Model{}, fmt.Errorf("--prices: %w", err)
		}
		defer f.Close()
		if m.Prices, err = cost.OverridePrices(f, m.Prices); err != nil {
			return cost.Model{}, fmt.Errorf("--prices %s: %w", p.pricesFile, err)
		}
	}
	if p.quotaRegion != "" {
		q, ok := cost.QuotaPresets()[p.quotaRegion]
		if !ok {
			return cost.Model{}, usagef("--quota-region %q: want large or other", p.quotaRegion)
		}
		m.Quotas = q
	}
	if p.quotasFile != "" {
		f, err := os.Open(p.quotasFile)
		if err != nil {
			return cost.Model{}, fmt.Errorf("--quotas: %w", err)
		}
		defer f.Close()
		if m.Quotas, err = cost.OverrideQuotas(f, m.Quotas); err != nil {
			return cost.Model{}, fmt.Errorf("--quotas %s: %w", p.quotasFile, err)
		}
	}
	m.Settings = p.settings
	if err := m.Settings.Validate(); err != nil {
		return cost.Model{}, err
	}
	return m, nil
}

func formatOf(key string) string {
	if ext := formats.Lookup(key).Ext; ext != "" {
		return ext
	}
	if ext := strings.ToLower(path.Ext(key)); ext != "" {
		return ext
	}
	return "(none)"
}

// plan decides every input with HashCheck.Preview and GDAL's preflight, and
// estimates the cost. Each file's recipe is the one HashCheck resolves for
// its key (src.cfg: the run-wide recipe refined by the recipe book), as in
// the run.
func plan(ctx context.Context, src planSource, engine *gdal.Engine, model cost.Model, workers int) (*planReport, error) {
	cfg := src.cfg
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := src.hash(cfg)
	r := &planReport{Geomigrate: buildinfo.Version, GDAL: engine.Version(), RecipeHash: hc.Recipe().ShortHash(),
		Written:  "nothing: no state record, output, staging object or queue message",
		ByFormat: map[string]*planCounts{}, ByDataset: map[string]*planCounts{}, ByRecipe: map[string]*planCounts{}}
	// Every clash at once: migrate routes each of their sources (the
	// files' own entries say so) and converts the rest.
	clashes := hc.FindClashes(src.inputs)
	hc.WithClashes(clashes, destWhere(src.dest))
	for _, c := range clashes {
		pc := planClash{Dest: destWhere(src.dest)(c.DestKey)}
		for _, s := range c.Sources {
			pc.Sources = append(pc.Sources, s.Bucket+"/"+s.Key)
		}
		r.Clashes = append(r.Clashes, pc)
	}
	sizes := sidecarSizes{store: src.store, dirs: map[string][]objectstore.Object{}}
	// Hashing dominates: inputs are decided workers at a time, reported in
	// input order.
	files := make([]planFile, len(src.inputs))
	errs := make([]error, len(src.inputs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files[i], errs[i] = planOne(ctx, hc, engine, src, src.inputs[i], &sizes)
			}
		}()
	}
	for i := range src.inputs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.Files = append(files, src.pre...)
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
			into map[string]*planCounts
			key  string
		}{{r.ByFormat, f.Format}, {r.ByDataset, f.Dataset}, {r.ByRecipe, f.RecipeHash}} {
			if m.key == "" {
				continue // ByRecipe: a file decided before its recipe mattered
			}
			if m.into[m.key] == nil {
				m.into[m.key] = &planCounts{}
			}
			m.into[m.key].add(f)
		}
		k := gk{format: f.Format}
		switch {
		case f.Action == actionConvert:
			k.path, k.rng, k.ctr = cost.Converted, f.rangeRead, f.container
		case f.Action == actionSkip:
			k.path = cost.Skipped
			k.name = f.Reason == migration.ReasonNotGeospatial || f.Reason == migration.ReasonFolderMarker
		case f.Action == actionRefuse && f.Stage == "preflight":
			k.path = cost.Remediation
		case f.Action == actionRefuse:
			k.path = cost.Rejected
		case f.Action == actionIgnore && (migration.NotGeospatial(f.Key) != "" || f.Reason == migration.ReasonExcluded):
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
	r.Model = planModel{Prices: model.Prices, Settings: model.Settings, Walks: model.Walks, PerFile: model.PerFile, Throughput: model.Throughput, Backfill: model.Backfill, Quotas: model.Quotas}
	return r, nil
}

// planOne decides one input.
func planOne(ctx context.Context, hc *migration.HashCheck, engine *gdal.Engine, src planSource, in migration.Source, sizes *sidecarSizes) (planFile, error) {
	f := planFile{Dataset: in.DatasetID, Bucket: in.Bucket, Key: in.Key, Format: formatOf(in.Key)}
	if f.Dataset == "" {
		f.Dataset = in.Bucket
	}
	out, err := hc.Preview(ctx, in)
	if err != nil {
		if fault.TierOf(err) != fault.TierDataSpecific {
			return f, fmt.Errorf("plan %s/%s: %w", in.Bucket, in.Key, err)
		}
		f.Action, f.Stage = actionRefuse, "hashcheck"
		f.fillError(err)
		return f, nil
	}
	f.Key, f.RecipeHash = out.Source.Key, out.Job.RecipeHash
	if out.Decision == migration.DecisionSkip && ignoredByRun(out.Reason) {
		f.Action, f.Reason = actionIgnore, out.Reason
		return f, nil
	}
	if out.Decision == migration.DecisionSkip {
		f.Action, f.Reason = actionSkip, out.Reason
		if out.Job.ID != "" {
			f.Bytes, _ = sizes.total(ctx, in.Bucket, out.Job.SourceKey, out.Job.SourceSize)
		}
		return f, nil
	}
	f.Action = actionConvert
	var sidecars int
	f.Bytes, sidecars = sizes.total(ctx, in.Bucket, out.Job.SourceKey, out.Job.SourceSize)
	f.rangeRead = formats.ReadableByRange(out.Job.SourceKey) && sidecars == 0
	f.container = out.Route != nil && out.Route.Engine == migration.EngineContainer
	f.Driver, f.Preflight, err = preflightOne(ctx, engine, src, out.Job)
	if err != nil {
		if fault.TierOf(err) != fault.TierDataSpecific {
			return f, fmt.Errorf("plan %s/%s: preflight: %w", in.Bucket, in.Key, err)
		}
		f.Action, f.Stage, f.Preflight = actionRefuse, "preflight", ""
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

func (f *planFile) fillError(err error) {
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

// preflightOne runs GDAL's preflight on the job's source: in place on a
// local store, by ranged reads of an S3 object that is read that way by
// Convert too; other S3 sources (several files, or formats whose library
// opens the file itself) would have to be downloaded, and are not. The
// recipe is the job's, which Convert converts with (budgets, formats).
func preflightOne(ctx context.Context, engine *gdal.Engine, src planSource, job migration.Job) (driver, note string, err error) {
	if lp, ok := src.store.(objectstore.LocalPather); ok && src.local {
		p, perr := lp.LocalPath(job.SourceBucket, job.SourceKey)
		if perr == nil {
			driver, err = engine.Preflight(ctx, p, job.Recipe)
			return driver, "passed", err
		}
	}
	if !formats.ReadableByRange(job.SourceKey) {
		return "", "not run: the source would have to be downloaded (several files, or a library that opens the file itself)", nil
	}
	ra := objectstore.NewReaderAt(ctx, src.store, job.SourceBucket, job.SourceKey, job.SourceSize)
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
