package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/plan"
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
	report, err := plan.Run(ctx, src.Source, engine, model, p.workers)
	if err != nil {
		return err
	}
	report.Backend, report.Sources, report.Dest = p.backend, srcs, p.dest
	if p.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	report.Print(stdout, termtable.Width(stdout))
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
