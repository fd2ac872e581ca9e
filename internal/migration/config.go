package migration

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/buildinfo"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Config is what every handler needs to know about the deployment. It is
// read once, at cold start.
type Config struct {
	DestBucket    string
	DestPrefix    string // prepended to every final key
	StagingPrefix string // where Convert writes before Promote; never a final key
	Recipe        recipe.Recipe
	// Recipes resolves the recipe of each source key from a recipe file
	// and flags over Recipe (nil: Recipe for every key).
	Recipes *recipe.Book
	// FingerprintThreshold: sources larger than this are fingerprinted by
	// size + first and last 8 MiB (seed 000); the full hash is checked after
	// promotion.
	FingerprintThreshold int64
	Lease                time.Duration
	WorkDir              string // local scratch space (Lambda: /tmp)
}

// Defaults.
const (
	DefaultStagingPrefix        = "_staging/"
	DefaultFingerprintThreshold = 1 << 30
	DefaultLease                = 20 * time.Minute
)

// ConfigFromEnv reads the GEOMIGRATE_* variables (see infra/ for where they
// are set). getenv is os.Getenv in production.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		DestBucket:           getenv("GEOMIGRATE_DEST_BUCKET"),
		DestPrefix:           getenv("GEOMIGRATE_DEST_PREFIX"),
		StagingPrefix:        getenv("GEOMIGRATE_STAGING_PREFIX"),
		FingerprintThreshold: DefaultFingerprintThreshold,
		Lease:                DefaultLease,
		WorkDir:              getenv("GEOMIGRATE_WORK_DIR"),
	}
	c.Recipe.VectorFormat = getenv("GEOMIGRATE_VECTOR_FORMAT")
	// HashCheck has no GDAL, yet the recipe hash it computes must name the
	// GDAL that Convert will run: the deployment states it (the layer's
	// version), and Convert refuses to work under a different one.
	c.Recipe.EngineVersion = getenv("GEOMIGRATE_ENGINE_VERSION")
	c.Recipe.ToolVersion = buildinfo.Version
	var err error
	num := func(name string, set func(int64)) {
		v := getenv(name)
		if v == "" || err != nil {
			return
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 {
			err = fmt.Errorf("migration.ConfigFromEnv: %s=%q is not a non-negative integer", name, v)
			return
		}
		set(n)
	}
	num("GEOMIGRATE_FINGERPRINT_THRESHOLD_BYTES", func(n int64) { c.FingerprintThreshold = n })
	num("GEOMIGRATE_LEASE_SECONDS", func(n int64) { c.Lease = time.Duration(n) * time.Second })
	num("GEOMIGRATE_ZSTD_LEVEL", func(n int64) { c.Recipe.ZSTDLevel = int(n) })
	if err != nil {
		return Config{}, err
	}
	c = c.withDefaults()
	return c, c.Validate()
}

func (c Config) withDefaults() Config {
	if c.StagingPrefix == "" {
		c.StagingPrefix = DefaultStagingPrefix
	}
	if c.FingerprintThreshold == 0 {
		c.FingerprintThreshold = DefaultFingerprintThreshold
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.WorkDir == "" {
		c.WorkDir = "/tmp"
	}
	c.Recipe = c.Recipe.WithDefaults()
	return c
}

// Validate reports a configuration the handlers cannot work with (after
// defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.DestBucket == "":
		return fmt.Errorf("migration.Config: destination bucket is required (GEOMIGRATE_DEST_BUCKET)")
	case !strings.HasSuffix(c.StagingPrefix, "/"):
		return fmt.Errorf("migration.Config: staging prefix %q must end in /", c.StagingPrefix)
	case c.DestPrefix != "" && strings.HasPrefix(c.DestPrefix, c.StagingPrefix):
		return fmt.Errorf("migration.Config: destination prefix %q lies inside the staging prefix %q", c.DestPrefix, c.StagingPrefix)
	}
	return c.Recipe.Validate()
}
