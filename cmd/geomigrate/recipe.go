package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// recipeFlags are --recipe FILE and --co KEY=VALUE, shared by the commands
// that convert (migrate, backfill, replay) and by plan, which predicts them.
type recipeFlags struct {
	File string   `name:"recipe" group:"conversion" placeholder:"FILE" help:"Recipe file (YAML): per-glob conversion settings (see examples/recipe.yaml); flags override it."`
	CO   []string `name:"co" group:"conversion" sep:"none" placeholder:"KEY=VALUE" help:"Raster creation option passed to GDAL's COG driver (repeatable; overrides the recipe file)."`
	// reuse: without --recipe, take the recipe the destination remembers
	// (replay: queued jobs run again under the recipe they were made with).
	reuse bool
	data  []byte // the file as read by book
}

// Validate checks the form of each --co.
func (rf *recipeFlags) Validate() error {
	for i, kv := range rf.CO {
		norm, err := recipe.CreationOption(kv)
		if err != nil {
			return fmt.Errorf("--co %s: %w", kv, err)
		}
		rf.CO[i] = norm
	}
	return nil
}

// flagGiven tells whether the command line or the environment set a flag
// (kong applies defaults as values too): a recipe file's setting yields
// only to a flag the user gave.
func flagGiven(k *kong.Context, name, env string) bool {
	for _, p := range k.Path {
		if p.Flag != nil && p.Flag.Name == name {
			return true
		}
	}
	_, ok := os.LookupEnv(env)
	return ok
}

// recipeBook is the run's recipe book: the recipe file (for a local replay
// without --recipe, the one the destination remembers) with the flags the
// user gave over it.
func (f *runFlags) recipeBook(k *kong.Context, stderr io.Writer) (*recipe.Book, error) {
	if !f.Where.aws() {
		f.Recipes.fromState(pathsFor(f.Dest, f.StateDir).dir, stderr)
	}
	return f.Recipes.commandBook(k, f.Handlers)
}

// commandBook is the recipe book of a parsed command line: the recipe file
// with the handler flags the user gave (--vector-format, --zstd-level) and
// --co over it. migrate, backfill, replay and plan build theirs here, so a
// plan resolves each key's recipe as the run it predicts.
func (rf *recipeFlags) commandBook(k *kong.Context, h config.Handlers) (*recipe.Book, error) {
	vectorFormat, zstdLevel := "", 0
	if flagGiven(k, "vector-format", "GEOMIGRATE_VECTOR_FORMAT") {
		vectorFormat = h.VectorFormat
	}
	if flagGiven(k, "zstd-level", "GEOMIGRATE_ZSTD_LEVEL") {
		zstdLevel = h.ZSTDLevel
	}
	return rf.book(vectorFormat, zstdLevel)
}

// book is the recipe file (if any) with the flags over it: the command
// line's --vector-format and --zstd-level (0 and "" mean not given) and
// --co. It needs no GDAL; checkRecipes does.
func (rf *recipeFlags) book(vectorFormat string, zstdLevel int) (*recipe.Book, error) {
	b := &recipe.Book{}
	if rf != nil && rf.File != "" {
		data, err := os.ReadFile(rf.File)
		if err != nil {
			return nil, usagef("--recipe: %v", err)
		}
		rf.data = data
		f, err := recipe.Parse(data)
		if err != nil {
			return nil, usagef("--recipe %s: %s", rf.File, recipeMessage(err))
		}
		b.File = f
	}
	if vectorFormat != "" {
		b.Flags.Vector.Format = &vectorFormat
	}
	if zstdLevel != 0 {
		b.Flags.Raster.ZSTDLevel = &zstdLevel
	}
	if rf != nil && len(rf.CO) > 0 {
		b.Flags.Raster.CreationOptions = map[string]string{}
		for _, kv := range rf.CO {
			k, v, _ := strings.Cut(kv, "=")
			b.Flags.Raster.CreationOptions[k] = v
		}
	}
	return b, nil
}

// checkRecipes checks the whole book (--co, the file's every rule, each
// combination a key can resolve to) against this GDAL — its COG driver's
// creation option list, its overview resamplings, PROJ's database —
// before any file is claimed: a recipe it cannot apply is a command line
// to fix (exit status 2), never a failure of every file it matches.
// file is --recipe, named in the message of a refusal of its lines.
func checkRecipes(b *recipe.Book, file string, engine *gdal.Engine) error {
	if err := b.Check(engine.Capabilities()); err != nil {
		msg := recipeMessage(err)
		if file != "" && !strings.HasPrefix(msg, "the command line") {
			msg = "--recipe " + file + ": " + msg
		}
		return usagef("%s", msg)
	}
	return nil
}

// recipeMessage drops the Go location of a recipe error: the user reads
// "--recipe FILE: line N: …".
func recipeMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"recipe.Check: ", "recipe.Parse: "} {
		msg = strings.Replace(msg, p, "", 1)
	}
	return msg
}

// rememberedRecipe is where a local destination keeps a copy of the recipe
// file of its last migrate, backfill or replay.
func rememberedRecipe(stateDir string) string { return filepath.Join(stateDir, "recipe.yaml") }

// fromState points a replay without --recipe at the remembered recipe.
func (rf *recipeFlags) fromState(stateDir string, stderr io.Writer) {
	if rf == nil || !rf.reuse || rf.File != "" {
		return
	}
	if p := rememberedRecipe(stateDir); fileExists(p) {
		rf.File = p
		fmt.Fprintf(stderr, "geomigrate: running under the recipe of the last run (%s); --recipe FILE to use another\n", p)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// remember keeps a copy of the recipe file the run uses in the state
// directory, or forgets the last one when the run has none.
func (rf *recipeFlags) remember(stateDir string) error {
	p := rememberedRecipe(stateDir)
	if rf == nil || rf.File == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("forget the recipe: %w", err)
		}
		return nil
	}
	if rf.File == p {
		return nil
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, rf.data, 0o644); err != nil {
		return fmt.Errorf("remember the recipe: %w", err)
	}
	return os.Rename(tmp, p)
}

// recipeCmd is `geomigrate recipe`.
type recipeCmd struct {
	Show recipeShowCmd `cmd:"" help:"Print the recipe each path resolves to: the rules, the settings and the recipe hash."`
}

type recipeShowCmd struct {
	File         string   `arg:"" name:"RECIPE.yaml" help:"The recipe file."`
	Paths        []string `arg:"" optional:"" name:"PATH" help:"Keys as a run sees them (dem/alps/t1.tif); a directory stands for every file under it."`
	JSON         bool     `name:"json" help:"Print JSON, one object per path."`
	VectorFormat string   `name:"vector-format" type:"fold" enum:",GeoParquet,FlatGeobuf" default:"" help:"As for migrate: overrides the file."`
	ZSTDLevel    int      `name:"zstd-level" help:"As for migrate: overrides the file (1 to 22)."`
	CO           []string `name:"co" sep:"none" placeholder:"KEY=VALUE" help:"As for migrate: overrides the file (repeatable)."`
}

// Help is the text under the usage line.
func (*recipeShowCmd) Help() string { return recipeUsage }

func (c *recipeShowCmd) Run(e *cmdEnv) error {
	if c.ZSTDLevel != 0 && (c.ZSTDLevel < 1 || c.ZSTDLevel > 22) {
		return usagef("--zstd-level %d: want 1 to 22", c.ZSTDLevel)
	}
	rf := &recipeFlags{File: c.File, CO: c.CO}
	if err := rf.Validate(); err != nil {
		return usagef("%v", err)
	}
	return showRecipe(rf, c.Paths, c.JSON, c.VectorFormat, c.ZSTDLevel, e.stdout)
}

func showRecipe(rf *recipeFlags, paths []string, asJSON bool, vectorFormat string, zstdLevel int, stdout io.Writer) error {
	// GDAL first: the creation options are checked against its COG driver.
	engine, err := gdal.New()
	if err != nil {
		return fmt.Errorf("GDAL: %w", err)
	}
	book, err := rf.book(vectorFormat, zstdLevel)
	if err != nil {
		return err
	}
	if err := checkRecipes(book, rf.File, engine); err != nil {
		return err
	}
	base := recipe.Recipe{EngineVersion: engine.Version(), ToolVersion: buildinfo.Version}
	keys, err := sampleKeys(paths)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		fmt.Fprintf(stdout, "%s: version %d, %d rule(s); give sample paths to see what each one resolves to\n", rf.File, book.File.Version, len(book.File.Rules))
		return nil
	}
	enc := json.NewEncoder(stdout)
	for _, key := range keys {
		v := resolveForShow(book, base, key)
		if asJSON {
			if err := enc.Encode(v); err != nil {
				return err
			}
			continue
		}
		printResolved(stdout, book, v)
	}
	return nil
}

const recipeUsage = `Prints the recipe each PATH resolves to: the rules that match it, the
settings, the recipe hash (a changed hash converts the file again), or why
the file would be ignored. A PATH is a key as a run sees it (the path under
the source directory given to migrate, e.g. dem/alps/t1.tif); an existing
directory stands for every file under it, keyed relative to it.`

// shown is what recipe show prints for one key.
type shown struct {
	Key     string         `json:"key"`
	Ignored string         `json:"ignored,omitempty"`
	Rules   []int          `json:"rules,omitempty"` // 1-based, as in the file
	Hash    string         `json:"recipe_hash,omitempty"`
	Recipe  *recipe.Recipe `json:"recipe,omitempty"`
	Error   string         `json:"error,omitempty"`
}

func resolveForShow(book *recipe.Book, base recipe.Recipe, key string) shown {
	s := shown{Key: key}
	if why := migration.NotGeospatial(key); why != "" && !formats.IsSidecar(key) {
		s.Ignored = why
		return s
	}
	if formats.IsSidecar(key) {
		s.Ignored = "sidecar: converted with its main file, under the main file's recipe"
		return s
	}
	r, m, err := book.Resolve(base, key)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if m.Excluded != "" {
		s.Ignored = m.Excluded
		return s
	}
	for _, i := range m.Rules {
		s.Rules = append(s.Rules, i+1)
	}
	s.Hash, s.Recipe = r.ShortHash(), &r
	return s
}

func printResolved(w io.Writer, book *recipe.Book, s shown) {
	fmt.Fprintln(w, s.Key)
	switch {
	case s.Error != "":
		fmt.Fprintf(w, "  error: %s\n", s.Error)
		return
	case s.Ignored != "":
		fmt.Fprintf(w, "  ignored: %s\n", s.Ignored)
		return
	}
	rules := "none (defaults)"
	if len(s.Rules) > 0 {
		var parts []string
		for _, i := range s.Rules {
			parts = append(parts, fmt.Sprintf("#%d %s", i, strings.Join(book.File.Rules[i-1].Match, ", ")))
		}
		rules = strings.Join(parts, "; ")
	}
	r := s.Recipe
	level := ""
	switch r.Compression {
	case "ZSTD", "LERC_ZSTD":
		level = " level=" + strconv.Itoa(r.ZSTDLevel)
	case "DEFLATE", "LERC_DEFLATE":
		level = " level=" + strconv.Itoa(r.DeflateLevel)
	case "JPEG", "WEBP":
		level = fmt.Sprintf(" (lossy) quality=%d min_psnr_db=%g", r.Quality, r.MinPSNR)
	}
	overviews := "auto"
	switch {
	case r.OverviewLevels == recipe.OverviewsNone:
		overviews = "none"
	case r.OverviewLevels > 0:
		overviews = strconv.Itoa(r.OverviewLevels)
	}
	keep := func(v string) string {
		if v == "" {
			return "keep"
		}
		return v
	}
	fmt.Fprintf(w, "  rules:  %s\n", rules)
	fmt.Fprintf(w, "  recipe: %s\n", s.Hash)
	switch formats.PredictKind(s.Key) {
	case formats.Vector:
		d := r.WithDefaults()
		curves := d.Curves
		if curves == recipe.CurvesLinearize {
			curves += fmt.Sprintf(" curve_step_degrees=%g", d.CurveStepDegrees)
		}
		fmt.Fprintf(w, "  vector: format=%s geometry_policy=%s curves=%s row_group_size=%d compression=%s\n",
			r.VectorFormat, r.GeometryPolicy, curves, r.RowGroupRows, r.ParquetCompression)
	default:
		fmt.Fprintf(w, "  raster: compression=%s%s predictor=%s blocksize=%d overview_levels=%s overview_resampling=%s nodata=%s target_crs=%s\n",
			r.Compression, level, r.Predictor, r.BlockSize, overviews, r.OverviewResampling, keep(r.NoData), keep(r.TargetCRS))
		if len(r.CreationOptions) > 0 {
			fmt.Fprintf(w, "  co:     %s\n", strings.Join(r.CreationOptions, " "))
		}
	}
}

// sampleKeys turns PATH arguments into keys: an existing directory gives
// every regular file under it (hidden directories skipped, as a run does),
// keyed relative to it; anything else is taken as a key.
func sampleKeys(paths []string) ([]string, error) {
	var keys []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			keys = append(keys, filepath.ToSlash(filepath.Clean(p)))
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(p, path)
			if err != nil {
				return err
			}
			keys = append(keys, filepath.ToSlash(rel))
			return nil
		})
		if err != nil && !errors.Is(err, fs.SkipDir) {
			return nil, fmt.Errorf("recipe show: %w", err)
		}
	}
	return keys, nil
}
