// Package gdal is the only cgo package of geomigrate: it implements
// recipe.Engine with GDAL through github.com/airbusgeo/godal. What needs
// no GDAL call lives elsewhere: the checks of a source before GDAL opens
// it in internal/preflight (which asks GDAL through a probe defined here),
// the memory model in internal/budget.
//
// GDAL configuration is process-wide; New sets it explicitly (data files,
// temp dir, cache, threads, no network) rather than inheriting whatever the
// environment happens to hold, and godal's "every warning is an error"
// default is replaced by a recorder that keeps warnings for Output.Warnings
// and fails only on CE_Failure / CE_Fatal.
package gdal

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Config is the GDAL runtime configuration.
type Config struct {
	GDALData   string // GDAL_DATA directory ("" = found: env, /opt/share/gdal, system)
	ProjData   string // PROJ data directory holding proj.db ("" = found likewise)
	TmpDir     string // CPL_TMPDIR ("" = os.TempDir())
	CacheMaxMB int    // GDAL_CACHEMAX in MB (0 = the environment's, else from MemoryLimit: see cacheMaxMB)
	NumThreads int    // GDAL_NUM_THREADS and the COG driver's NUM_THREADS (0 = the CPUs ÷ Conversions)
	// Conversions is how many conversions the process runs at once (a
	// migrate's --workers, lowered by Engine.SetConversions to the run's
	// files when there are fewer; 0 = 1). The CPUs are shared among them: with
	// every CPU already busy with a conversion, GDAL's own threads add
	// work and no speed. The COG driver compresses each block in a worker
	// thread through a fresh in-memory TIFF and codec (ZSTD level 9 sets
	// up and clears some 24 MB of tables per block), so for a 1100² Byte
	// raster two threads cost 27 % more CPU than one for 5 % less wall
	// time alone (docs/decisions/0085).
	Conversions int
	// MemoryLimit caps every recipe's MaxMemory (0 = found: Lambda's
	// memory setting, the cgroup limit, physical memory).
	MemoryLimit int64
	// OutputMD5: a raster output's MD5 is taken with its SHA-256 while it
	// is checked (Output.MD5), for a store whose ETag is the MD5 of a
	// file it takes over (the directory store).
	OutputMD5 bool
}

// Option changes the Config of New.
type Option func(*Config)

// WithGDALData sets Config.GDALData: the GDAL_DATA directory to use
// instead of the one found. New fails (SystemicError) when it lacks GDAL's
// data files.
func WithGDALData(dir string) Option { return func(c *Config) { c.GDALData = dir } }

// WithTmpDir sets Config.TmpDir, GDAL's CPL_TMPDIR: where GDAL writes its
// temporary files (a Lambda's or a task's work directory, with the space
// the conversion needs).
func WithTmpDir(dir string) Option { return func(c *Config) { c.TmpDir = dir } }

// WithNumThreads sets Config.NumThreads: GDAL's threads per conversion,
// fixed instead of the CPUs shared among the conversions
// (docs/decisions/0085).
func WithNumThreads(n int) Option { return func(c *Config) { c.NumThreads = n } }

// WithConversions sets Config.Conversions.
func WithConversions(n int) Option { return func(c *Config) { c.Conversions = n } }

// WithOutputMD5 sets Config.OutputMD5.
func WithOutputMD5(on bool) Option { return func(c *Config) { c.OutputMD5 = on } }

// WithMemoryLimit sets Config.MemoryLimit (bytes).
func WithMemoryLimit(n int64) Option { return func(c *Config) { c.MemoryLimit = n } }

// Engine converts with GDAL. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	version string
	// conversions is Config.Conversions, lowered by SetConversions once a
	// run knows it has fewer files than workers; 0 when NumThreads was
	// set explicitly (then every conversion gets it). A pointer, so that
	// copies of an Engine (tests) share it.
	conversions *atomic.Int64
	// beforeCheck, set only by tests, sees each output file between its
	// conversion and its fidelity check (to alter it, and prove the check
	// catches that).
	beforeCheck func(path string)
}

var _ recipe.Engine = (*Engine)(nil)

var registerOnce sync.Once

// lambda layer layout, then Debian/Ubuntu and /usr/local builds.
var (
	gdalDataCandidates = []string{"/opt/share/gdal", "/usr/share/gdal", "/usr/local/share/gdal"}
	projDataCandidates = []string{"/opt/share/proj", "/usr/share/proj", "/usr/local/share/proj"}
)

// New registers GDAL's drivers (once per process) and applies the
// configuration. A missing GDAL_DATA or proj.db is a *fault.SystemicError:
// without them CRS handling silently degrades.
func New(opts ...Option) (*Engine, error) {
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	if cfg.GDALData, err = findDir(cfg.GDALData, []string{"GDAL_DATA"}, gdalDataCandidates, "gdalvrt.xsd"); err != nil {
		return nil, fault.Systemic("gdal.New: GDAL_DATA", err)
	}
	if cfg.ProjData, err = findDir(cfg.ProjData, []string{"PROJ_DATA", "PROJ_LIB"}, projDataCandidates, "proj.db"); err != nil {
		return nil, fault.Systemic("gdal.New: PROJ data", err)
	}
	if cfg.TmpDir == "" {
		cfg.TmpDir = os.TempDir()
	}
	autoThreads := cfg.NumThreads <= 0
	if autoThreads {
		cfg.NumThreads = threadsPerConversion(runtime.NumCPU(), cfg.Conversions)
	}
	if cfg.MemoryLimit <= 0 {
		cfg.MemoryLimit = budget.MachineMemory()
	}
	if cfg.CacheMaxMB <= 0 {
		cfg.CacheMaxMB = cacheMaxMB(os.Getenv("GDAL_CACHEMAX"), cfg.MemoryLimit)
	}

	registerOnce.Do(godal.RegisterAll)
	reserveArena(cfg.MemoryLimit)
	applyProcessSettings(cfg)
	// GeoParquet pages go through libzstd: smaller at the same speed
	// (decision 0086). Process-wide, like the settings above.
	if z := newGDALZSTD(); z != nil {
		geoparquet.UseZSTD(z)
	}
	e := &Engine{cfg: cfg, version: releaseName(), conversions: new(atomic.Int64)}
	if autoThreads {
		e.conversions.Store(int64(max(1, cfg.Conversions)))
	}
	return e, nil
}

// SetConversions lowers the number of conversions the CPUs are shared
// among, for a run that found fewer files than workers (a single large
// raster gets every CPU). Conversions started after it use the new share.
// It does nothing when NumThreads was set explicitly.
func (e *Engine) SetConversions(n int) {
	if e.conversions.Load() > 0 {
		e.conversions.Store(int64(max(1, n)))
	}
}

// threads is the GDAL thread count of a conversion starting now.
func (e *Engine) threads() int {
	if n := e.conversions.Load(); n > 0 {
		return threadsPerConversion(runtime.NumCPU(), int(n))
	}
	return e.cfg.NumThreads
}

// threadsPerConversion shares cpus among conversions running at once:
// at least one thread each.
func threadsPerConversion(cpus, conversions int) int {
	return max(1, cpus/max(1, conversions))
}

// cacheMaxMB is GDAL's block cache in MB: GDAL_CACHEMAX from the
// environment when it is a number of MB (the Lambda's, set by infra) but
// never over a quarter of the memory limit, else 1/budget.BlockShare of
// the memory limit, between 16 and 256 MB. It is set as a configuration
// option, which GDAL prefers to the environment, so it is decided here.
func cacheMaxMB(env string, memoryLimit int64) int {
	limitMB := memoryLimit >> 20
	if mb, err := strconv.Atoi(strings.TrimSpace(env)); err == nil && mb > 0 && mb < 100_000 {
		if limitMB > 0 {
			return int(max(16, min(int64(mb), limitMB/4)))
		}
		return mb
	}
	if limitMB <= 0 {
		return 256
	}
	return int(min(256, max(16, limitMB/budget.BlockShare)))
}

// settings are the process-wide GDAL configuration options.
func (c Config) settings() map[string]string {
	return map[string]string{
		"GDAL_DATA":        c.GDALData,
		"PROJ_DATA":        c.ProjData,
		"PROJ_LIB":         c.ProjData,
		"CPL_TMPDIR":       c.TmpDir,
		"GDAL_CACHEMAX":    strconv.Itoa(c.CacheMaxMB),
		"GDAL_NUM_THREADS": strconv.Itoa(c.NumThreads),
		// No network, whatever a source file says or the environment
		// holds: CPLHTTPFetch is replaced (disableHTTP), /vsicurl/ is
		// refused for every name (no extension matches), and any other
		// HTTP goes to a closed local port and gives up at once (unless
		// no_proxy matches, hence the first two).
		"CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".geomigrate-no-network",
		"GDAL_HTTP_PROXY":                  "127.0.0.1:9",
		"GDAL_HTTP_TIMEOUT":                "1",
		"GDAL_HTTP_CONNECTTIMEOUT":         "1",
		"GDAL_HTTP_MAX_RETRY":              "0",
		"PROJ_NETWORK":                     "OFF",
		// GML: xlinks stay unresolved (resolving reads the documents they
		// name) and no application schema is downloaded.
		"GML_SKIP_RESOLVE_ELEMS":  "ALL",
		"GML_DOWNLOAD_WFS_SCHEMA": "NO",
		// GDAL sees only the sibling files we name; it never lists or
		// probes the directory of a source.
		"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
		"CPL_DEBUG":                    "OFF",
		// Refuse rather than fill when disk space is short.
		"CHECK_DISK_FREE_SPACE": "YES",
	}
}

// perConversion are the settings that may differ from one Engine to the
// next: each conversion sets its own on its thread (Convert), and the
// process-wide value stays the first Engine's.
var perConversion = map[string]bool{"CPL_TMPDIR": true, "GDAL_NUM_THREADS": true}

// process is what New last set of GDAL's process-wide state. An option is
// set again only when its value changes: CPLSetConfigOption frees the value
// it replaces, and a GDAL call on another thread may be reading that very
// string (CPLGetConfigOption hands out GDAL's own copy), so a second New in
// a process with conversions running (the CLI's in-process tests, a plan
// beside a run) must not rewrite what did not change. Moving the PROJ
// search paths also makes every thread reopen proj.db.
var process struct {
	sync.Mutex
	options   map[string]string
	cacheMax  int64
	projPaths string
	http      bool
	sets      int // options set, for tests
}

// applyProcessSettings sets cfg's GDAL options, block cache and PROJ search
// path where they differ from what is set, and GDAL's HTTP refusal once.
func applyProcessSettings(cfg Config) {
	process.Lock()
	defer process.Unlock()
	if !process.http {
		disableHTTP()
		process.http = true
	}
	if process.options == nil {
		process.options = map[string]string{}
	}
	for k, v := range cfg.settings() {
		old, set := process.options[k]
		if set && (old == v || perConversion[k]) {
			continue
		}
		setConfig(k, v)
		process.options[k] = v
		process.sets++
	}
	if b := int64(cfg.CacheMaxMB) << 20; b != process.cacheMax {
		setCacheMax(b)
		process.cacheMax = b
	}
	if cfg.ProjData != process.projPaths {
		setProjPaths([]string{cfg.ProjData})
		process.projPaths = cfg.ProjData
	}
}

// Config reports the configuration in effect.
func (e *Engine) Config() Config { return e.cfg }

// Settings are the GDAL configuration options New sets for c, so that a
// GDAL command line can run under exactly the same ones (the benchmarks'
// gdal_translate anchor).
func (c Config) Settings() map[string]string { return c.settings() }

// Version is GDAL's release name, e.g. "3.6.2" (for Recipe.EngineVersion).
func (e *Engine) Version() string { return e.version }

// VersionDetail names the libraries whose version can change output bytes.
func (e *Engine) VersionDetail() string {
	return fmt.Sprintf("GDAL %s; PROJ %s", e.version, projVersion())
}

func findDir(explicit string, envs, candidates []string, marker string) (string, error) {
	has := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, marker))
		return dir != "" && err == nil
	}
	if explicit != "" {
		if !has(explicit) {
			return "", fmt.Errorf("%s has no %s", explicit, marker)
		}
		return explicit, nil
	}
	var tried []string
	for _, env := range envs {
		if v := os.Getenv(env); v != "" {
			// PROJ_LIB may be a list.
			for _, d := range filepath.SplitList(v) {
				if has(d) {
					return d, nil
				}
				tried = append(tried, d)
			}
		}
	}
	for _, d := range candidates {
		if has(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("no %s in %s", marker, strings.Join(tried, ", "))
}
