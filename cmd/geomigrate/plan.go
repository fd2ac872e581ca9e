package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
)

// planCmd is `geomigrate plan`: what migrate would do, writing nothing,
// and what running it on AWS would cost. The recipe settings are migrate's
// own (config.Handlers, --recipe and --co, resolved per key as migrate
// does: recipeFlags.commandBook, runConfig); the cost model's are its
// flags, with cost.DefaultSettings as defaults (kong variables set in
// newParser).
type planCmd struct {
	Sources  []string        `arg:"" name:"SRC" help:"Source files and directories (a directory is one dataset), or s3://BUCKET[/PREFIX] with --backend aws."`
	Dest     string          `name:"dest" placeholder:"DIR" help:"Destination of earlier runs, consulted read-only (a directory, or s3://BUCKET[/PREFIX] with --backend aws); none: every file is new."`
	StateDir string          `name:"state-dir" placeholder:"DIR" help:"State directory (default DEST/.geomigrate-state)."`
	JSON     bool            `name:"json" help:"Print the plan as one JSON document."`
	Workers  int             `name:"workers" default:"${workers}" help:"Files hashed and preflighted at once."`
	Prices   string          `name:"prices" placeholder:"FILE" help:"JSON file overriding fields of the price table (internal/cost/prices.json)."`
	Handlers config.Handlers `embed:""`
	Recipes  recipeFlags     `embed:""`

	Architecture string  `name:"architecture" enum:"arm64,x86_64" default:"${plan_architecture}" help:"Lambda architecture: arm64 or x86_64."`
	ConvertMB    int     `name:"convert-memory" default:"${plan_convert_memory}" help:"Convert function memory in MB (infra convertMemoryMB)."`
	SmallMB      int     `name:"small-memory" default:"${plan_small_memory}" help:"HashCheck, Promote and Classify memory in MB (infra smallFunctionMemoryMB)."`
	Concurrency  int     `name:"concurrency" default:"${plan_concurrency}" help:"Lambda concurrency available to the run (the account quota)."`
	HashReadMBps float64 `name:"hash-read-mbps" default:"${plan_hash_read_mbps}" help:"Assumed MB/s of HashCheck's read of a source from S3."`
	StepMS       float64 `name:"step-ms" default:"${plan_step_ms}" help:"Assumed duration in ms of a HashCheck, Promote or Classify invocation besides reading."`
	CPUFactor    float64 `name:"cpu-factor" default:"${plan_cpu_factor}" help:"Lambda vCPU speed relative to a core of the machine that measured the throughput."`
	UsefulVCPUs  float64 `name:"useful-vcpus" default:"${plan_useful_vcpus}" help:"Most vCPUs a conversion is assumed to use (the throughput was measured on one)."`
	MaxConc      int     `name:"max-concurrency" default:"${plan_max_concurrency}" help:"The backfill's MaxConcurrency (the policy's backfill.max_concurrency): migrate executions at once."`
	QuotaRegion  string  `name:"quota-region" enum:"large,other" default:"large" help:"Quota preset: large (us-east-1, us-west-2, eu-west-1) or other (AWS's lower Step Functions figures elsewhere)."`
	Quotas       string  `name:"quotas" placeholder:"FILE" help:"JSON file overriding fields of the quota table (cost.DefaultQuotas: an account's raised or a new account's lower quotas)."`

	Backend     string     `name:"backend" type:"fold" enum:"local,aws" default:"local" help:"local (directories) or aws (S3 sources, DynamoDB state table, read only)."`
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
	p := planFlags{dest: c.Dest, stateDir: c.StateDir, backend: c.Backend, handlers: c.Handlers, book: book, workers: c.Workers,
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
	if err := checkCreationOptions(p.book); err != nil {
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
	report.print(stdout)
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

// planSource is what a plan reads: the inputs, what the listing already
// decided, and a HashCheck over stores that refuse every write.
type planSource struct {
	dest   string // the destination as the user named it, for messages
	inputs []migration.Source
	pre    []planFile
	store  objectstore.Store
	hash   func(migration.Config) *migration.HashCheck
	cfg    migration.Config
	local  bool
	close  func()
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
	src := planSource{dest: cmp.Or(p.dest, "DEST"), inputs: inputs, store: store, local: true, close: closeState}
	for _, o := range pre {
		src.pre = append(src.pre, planFile{Dataset: o.Bucket, Bucket: o.Bucket, Key: o.Key, Format: formatOf(o.Key), Action: actionIgnore, Reason: o.Reason,
			Bytes: fileSizeIn(roots, o.Bucket, o.Key)})
	}
	src.cfg = runConfig(p.handlers, p.book, destBucket, "", p.engineVersion)
	src.hash = func(cfg migration.Config) *migration.HashCheck {
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
	inputs, err := listS3Sources(ctx, store, srcs)
	if err != nil {
		return planSource{}, err
	}
	src := planSource{dest: cmp.Or(p.dest, "DEST"), store: store, cfg: mcfg, close: func() {}}
	for _, in := range inputs {
		if why := migration.NotGeospatial(in.Key); why != "" {
			src.pre = append(src.pre, planFile{Dataset: in.Bucket, Bucket: in.Bucket, Key: in.Key, Format: formatOf(in.Key), Action: actionIgnore, Reason: why})
			continue
		}
		src.inputs = append(src.inputs, in)
	}
	src.hash = func(cfg migration.Config) *migration.HashCheck {
		return migration.NewHashCheck(cfg, store, app.Tracker, migration.StoreFingerprinter{Store: store, Threshold: cfg.FastFingerprintAbove()}, slog.New(slog.DiscardHandler))
	}
	return src, nil
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

func (r *planReport) print(w io.Writer) {
	t := r.Totals
	perFile := r.recipesPerFile()
	recipes := "recipe " + r.RecipeHash
	if perFile {
		recipes = fmt.Sprintf("%d recipe(s) by file, see By recipe", len(r.ByRecipe))
	}
	fmt.Fprintf(w, "geomigrate plan: %d file(s), %s in %s (%s backend, GDAL %s, %s); written: %s\n",
		t.Files, humanBytes(t.Bytes), strings.Join(r.Sources, ", "), r.Backend, r.GDAL, recipes, r.Written)
	if len(r.Clashes) > 0 {
		fmt.Fprintf(w, "\n%d output key(s) claimed by more than one source: each of these sources would be routed to remediation (DestinationConflict), the rest migrates; rename all but one of each, or exclude them in the recipe file\n", len(r.Clashes))
		for _, c := range r.Clashes {
			fmt.Fprintf(w, "  %s <- %s\n", c.Dest, strings.Join(c.Sources, ", "))
		}
	}
	fmt.Fprintf(w, "\nWould convert %d (%s), skip %d (%s), refuse %d (%s); %d ignored\n",
		t.Convert, humanBytes(t.ConvertBytes), t.Skip, humanBytes(t.SkipBytes), t.Refuse, humanBytes(t.RefuseBytes), t.Ignore)
	reasons := map[string]int{}
	for _, f := range r.Files {
		if f.Action == actionSkip {
			reasons[f.Reason]++
		}
	}
	if len(reasons) > 0 {
		var parts []string
		for reason, n := range reasons {
			parts = append(parts, fmt.Sprintf("%s %d", reason, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "Skipped because: %s\n", strings.Join(parts, ", "))
	}
	printCounts(w, "format", r.ByFormat)
	printCounts(w, "dataset", r.ByDataset)
	if perFile {
		r.printRecipes(w)
	}
	// Refusals are what a user acts on; long lists of skipped and ignored
	// files are cut (--json lists every file).
	sections := []struct {
		title, action string
		limit         int
	}{
		{"Would skip", actionSkip, 20}, {"Would refuse", actionRefuse, 200}, {"Ignored", actionIgnore, 20},
	}
	for _, s := range sections {
		var lines []string
		more := 0
		for _, f := range r.Files {
			if f.Action != s.action {
				continue
			}
			if len(lines) == s.limit {
				more++
				continue
			}
			why := f.Reason
			if f.Code != "" {
				why = fmt.Sprintf("%s at %s: %s", f.Error, f.Stage, f.Reason) // Reason starts with the code
			}
			if perFile && f.RecipeHash != "" {
				why += "  (recipe " + f.RecipeHash + ")"
			}
			lines = append(lines, fmt.Sprintf("  %s/%s  %s", f.Bucket, localrun.QuoteKey(f.Key), why))
		}
		if more > 0 {
			lines = append(lines, fmt.Sprintf("  … and %d more (--json lists every file)", more))
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s:\n%s\n", s.title, strings.Join(lines, "\n"))
		}
	}
	e, m := r.Estimate, r.Model
	fmt.Fprintf(w, "\nEstimated cost on AWS (%s list prices of %s; %s, convert %d MB, others %d MB, concurrency %d):\n",
		m.Prices.Region, m.Prices.AsOf, m.Settings.Architecture, m.Settings.ConvertMemoryMB, m.Settings.SmallMemoryMB, m.Settings.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  Step Functions Standard\t%d transitions (%d per converted file, %d per skipped, %d per refused)\t%s\n",
		e.Transitions, m.Walks[cost.Converted].Transitions, m.Walks[cost.Skipped].Transitions, m.Walks[cost.Remediation].Transitions, dollars(e.Cost.StepFunctionsStandard))
	if n := r.countStage("hashcheck"); n > 0 {
		fmt.Fprintf(tw, "  \t(%d refused by HashCheck: %d transitions each)\t\n", n, m.Walks[cost.Rejected].Transitions)
	}
	fmt.Fprintf(tw, "  Step Functions Express\t%d requests, %.1f GB-s\t%s\n", e.Executions, e.ExpressGBSeconds, dollars(e.Cost.StepFunctionsExpress))
	fmt.Fprintf(tw, "  Lambda\t%d requests, %.1f GB-s (%.2f s converting)\t%s\n", e.LambdaInvocations, e.LambdaGBSeconds, e.ConvertSeconds, dollars(e.Cost.Lambda))
	fmt.Fprintf(tw, "  S3\t%d GET/HEAD, %d PUT/COPY/LIST\t%s\n", e.S3GetHead, e.S3PutCopyList, dollars(e.Cost.S3))
	fmt.Fprintf(tw, "  DynamoDB\t%d read units, %d write units\t%s\n", e.DynamoDBReadUnits, e.DynamoDBWriteUnits, dollars(e.Cost.DynamoDB))
	fmt.Fprintf(tw, "  SQS\t%d messages\t%s\n", e.SQSRequests, dollars(e.Cost.SQS))
	fmt.Fprintf(tw, "  Quarantine, one month\t%s of refused sources\t%s\n", humanBytes(e.QuarantineBytes), dollars(e.Cost.Quarantine))
	fmt.Fprintf(tw, "  Execution logs\t%s\t%s\n", humanBytes(e.LogBytes), dollars(e.Cost.Logs))
	fmt.Fprintf(tw, "  Total, Standard workflow\t\t%s\n", dollars(e.Cost.TotalStandard))
	fmt.Fprintf(tw, "  Total, Express workflow\t\t%s\n", dollars(e.Cost.TotalExpress))
	tw.Flush()
	fmt.Fprintf(w, "Cost per 1,000 files: %s (Standard), %s (Express)\n", dollars(e.PerThousandStandard), dollars(e.PerThousandExpress))
	printBounds(w, e, m)
	if e.OverExpressLimit > 0 {
		fmt.Fprintf(w, "%d execution(s) would exceed Express's %d s limit: use Standard\n", e.OverExpressLimit, cost.ExpressLimitSeconds)
	}
	if s := e.StandInList(); len(s) > 0 {
		fmt.Fprintf(w, "Not measured, estimated with another format's rate: %s\n", strings.Join(s, ", "))
	}
	tp := m.Throughput
	var rates []string
	for _, ext := range tp.Measured() {
		rates = append(rates, fmt.Sprintf("%s %.1f MB/s", ext, tp.Formats[ext].MBPerSecond))
	}
	fmt.Fprintf(w, "Conversion throughput measured %s on %s (1 thread; %s): %s\n", tp.MeasuredAt, tp.Machine, tp.Command, strings.Join(rates, ", "))
}

// printBounds is the duration and what binds it: every quota's bound,
// longest first, with what to raise.
func printBounds(w io.Writer, e cost.Estimate, m planModel) {
	if len(e.Bounds) == 0 {
		return
	}
	b := e.Bounds[0]
	fmt.Fprintf(w, "Duration: %s, bound by %s (raise: %s); Lambda concurrency %d, backfill MaxConcurrency %d, quotas of %s\n",
		humanSeconds(e.WallClockSeconds), b.Name, b.Raise, m.Settings.Concurrency, m.Settings.MaxConcurrency, m.Quotas.Region)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, x := range e.Bounds {
		how := fmt.Sprintf("%.0f at %g/s", x.Demand, x.Rate)
		if x.Name == cost.BoundLongestExecution {
			how = "one file's tasks in turn"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", x.Name, humanSeconds(x.Seconds), how)
	}
	tw.Flush()
}

// recipesPerFile tells whether the files' recipes differ from the run-wide
// one (a recipe file, --co): the text then shows each file's.
func (r *planReport) recipesPerFile() bool {
	for h := range r.ByRecipe {
		if h != r.RecipeHash {
			return true
		}
	}
	return false
}

// printRecipes is the table of recipe hashes: what each would do, and the
// first file of each (`geomigrate recipe show` prints a key's settings).
func (r *planReport) printRecipes(w io.Writer) {
	first := map[string]string{}
	for _, f := range r.Files {
		if _, ok := first[f.RecipeHash]; !ok && f.RecipeHash != "" {
			first[f.RecipeHash] = f.Bucket + "/" + localrun.QuoteKey(f.Key)
		}
	}
	var hashes []string
	for h := range r.ByRecipe {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	fmt.Fprintf(w, "\nBy recipe:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  recipe\tfiles\tbytes\tconvert\tskip\trefuse\tfirst file\n")
	for _, h := range hashes {
		c := r.ByRecipe[h]
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d\t%d\t%s\n", h, c.Files, humanBytes(c.Bytes), c.Convert, c.Skip, c.Refuse, first[h])
	}
	tw.Flush()
}

// countStage counts the files refused at stage.
func (r *planReport) countStage(stage string) int {
	n := 0
	for _, f := range r.Files {
		if f.Action == actionRefuse && f.Stage == stage {
			n++
		}
	}
	return n
}

func printCounts(w io.Writer, what string, m map[string]*planCounts) {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\nBy %s:\n", what)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %s\tfiles\tbytes\tconvert\tskip\trefuse\tignore\t\n", what)
	for _, k := range keys {
		c := m[k]
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d\t%d\t%d\t\n", k, c.Files, humanBytes(c.Bytes), c.Convert, c.Skip, c.Refuse, c.Ignore)
	}
	tw.Flush()
}

// dollars shows an amount with the precision its size needs.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.6f", v)
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTP"[i-1])
}

func humanSeconds(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.1f s", s)
	case s < 2*3600:
		return fmt.Sprintf("%.1f min", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.1f h", s/3600)
	}
	return fmt.Sprintf("%.1f days", s/86400)
}
