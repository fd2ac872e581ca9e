package migration

import (
	"fmt"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/statestore"
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
	// size + first and last 8 MiB (docs/decisions/0004); the full hash is
	// checked after promotion.
	FingerprintThreshold int64
	Lease                time.Duration
	WorkDir              string // local scratch space (Lambda: /tmp)
	// SourceReadAhead sizes the GETs of sources converted by range.
	SourceReadAhead objectstore.ReadAhead
	// Breaker is the circuit breaker policy on each bucket; the zero
	// policy has no breaker.
	Breaker breaker.Policy
	// Container are the limits over which a job is converted by the
	// container task instead of the Convert Lambda (zero: the defaults).
	Container ContainerLimits
	// CatalogByRun: the run links its items into the STAC tree once at
	// its end (Tree.Include), so Promote does not rewrite the collection
	// per job. Lambda's Promote, with no end of run, links each job's.
	CatalogByRun bool
}

// Defaults.
const (
	DefaultStagingPrefix        = "_staging/"
	DefaultFingerprintThreshold = 1 << 30
	// DefaultLease is the Tracker's (internal/config declares the same
	// default for the settings, checked by its tests).
	DefaultLease = statestore.DefaultLease
)

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
	if c.Container == (ContainerLimits{}) {
		c.Container = DefaultContainerLimits
	}
	c.Recipe = c.Recipe.WithDefaults()
	return c
}

// FastFingerprintAbove is the size above which HashCheck uses the fast
// fingerprint: FingerprintThreshold, or its default when unset. (A
// StoreFingerprinter given 0 hashes everything in full.)
func (c Config) FastFingerprintAbove() int64 { return c.withDefaults().FingerprintThreshold }

// Validate reports a configuration the handlers cannot work with (after
// defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.DestBucket == "":
		return fmt.Errorf("migration.Config: destination bucket is required")
	case !strings.HasSuffix(c.StagingPrefix, "/"):
		return fmt.Errorf("migration.Config: staging prefix %q must end in /", c.StagingPrefix)
	case c.DestPrefix != "" && strings.HasPrefix(c.DestPrefix, c.StagingPrefix):
		return fmt.Errorf("migration.Config: destination prefix %q lies inside the staging prefix %q", c.DestPrefix, c.StagingPrefix)
	}
	if err := c.Container.Validate(); err != nil {
		return err
	}
	return c.Recipe.Validate()
}
