package migration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Engines a claimed job is converted on. The state machine's ChooseEngine
// Choice decides from Route.Work and Route.Limits; Route.Engine is the same
// rule in Go (Limits.Engine), for logs, plans and tests.
const (
	EngineLambda    = "lambda"
	EngineContainer = "container"
)

// ContainerLimits are the thresholds over which a job leaves the Convert
// Lambda (15 minutes, 10,240 MB of memory and of /tmp) for the container
// task (ECS Fargate: up to 120 GiB of memory and 200 GiB of ephemeral
// storage, no time limit but the job deadline). A job goes to the
// container when any measure exceeds its limit; a measure HashCheck could
// not read is 0 and never does. docs/large-objects.md explains the
// defaults.
type ContainerLimits struct {
	// Bytes of the source and its sidecars: Convert downloads what it
	// cannot read by range and writes its outputs beside it in /tmp.
	Bytes int64 `json:"bytes"`
	// PixelsBands is width x height x bands of the full-resolution image,
	// from the TIFF header: the pixels Convert reads, writes and compares.
	PixelsBands int64 `json:"pixels_bands"`
	// Features is the declared feature count (a Shapefile's .dbf header).
	Features int64 `json:"features"`
}

// DefaultContainerLimits: 4 GiB leaves room in Lambda's 10 GiB of /tmp for
// a downloaded source and its outputs; 1.5 G pixel-bands and 10 M features
// are what Convert gets through well inside 15 minutes (docs/large-objects.md).
// They lie below the recipe's default budgets (recipe.DefaultMaxBytes,
// DefaultMaxPixels, DefaultMaxFeatures), so that the container path is
// used without raising them.
var DefaultContainerLimits = ContainerLimits{Bytes: 4 << 30, PixelsBands: 1_500_000_000, Features: 10_000_000}

// Validate refuses a limit that is not positive: the Choice compares with
// NumericGreaterThanPath, and a limit of 0 would send every job to the
// container.
func (l ContainerLimits) Validate() error {
	if l.Bytes <= 0 || l.PixelsBands <= 0 || l.Features <= 0 {
		return fmt.Errorf("migration.ContainerLimits: every limit must be positive, got %+v", l)
	}
	return nil
}

// Engine is where work goes under these limits: the container when any
// measure exceeds its limit, unless the work is over the recipe's own
// budgets (withinBudget false): preflight refuses that on either engine,
// and the Lambda refuses it soonest and cheapest.
func (l ContainerLimits) Engine(w Work, withinBudget bool) string {
	if !withinBudget {
		return EngineLambda
	}
	if w.Bytes > l.Bytes || w.PixelsBands > l.PixelsBands || w.Features > l.Features {
		return EngineContainer
	}
	return EngineLambda
}

// Work is what HashCheck measured of a claimed source before anyone
// converts it; 0 is unknown.
type Work struct {
	Bytes       int64 `json:"bytes"`
	PixelsBands int64 `json:"pixels_bands"`
	Features    int64 `json:"features"`
}

// Route is HashCheck's measure of a job and the limits it is judged
// against, both in its output so that the state machine's Choice compares
// them (NumericGreaterThanPath) and a run-time policy can change the limits
// without a new definition: HashCheck is where such a policy's thresholds
// would replace Config.Container.
type Route struct {
	Work   Work            `json:"work"`
	Limits ContainerLimits `json:"limits"`
	// WithinBudget is false when the work is over the job recipe's own
	// budgets (max_bytes, max_pixels, max_features): preflight refuses it
	// with a DataError (BudgetExceeded) on either engine, so the Choice
	// leaves it to the Lambda. A large object meant for the container
	// needs a recipe whose budgets admit it.
	WithinBudget bool `json:"within_budget"`
	// EphemeralGiB is the container task's ephemeral storage for this job
	// (Fargate: 21 to 200 GiB), from its bytes.
	EphemeralGiB int    `json:"ephemeral_gib"`
	Engine       string `json:"engine"`
}

// withinBudget reports whether w is within the recipe's budgets (a budget
// of 0 or less is none).
func withinBudget(w Work, r recipe.Recipe) bool {
	over := func(n, limit int64) bool { return limit > 0 && n > limit }
	return !over(w.Bytes, r.MaxBytes) && !over(w.PixelsBands, r.MaxPixels) && !over(w.Features, r.MaxFeatures)
}

// Fargate's ephemeral storage bounds (RunTask overrides, ephemeralStorage
// sizeInGiB).
const (
	MinEphemeralGiB = 21
	MaxEphemeralGiB = 200
)

// EphemeralGiB sizes a container task's disk for a source of n bytes: the
// source downloaded, its outputs (at most about its size again) and GDAL's
// temporary files (overviews: a third more), plus 1 GiB, within Fargate's
// 21 to 200 GiB. A source that needs more than 200 GiB still gets 200: its
// conversion fails with disk full (SystemicError) rather than not starting.
func EphemeralGiB(n int64) int {
	const gib = 1 << 30
	need := (3*n+gib-1)/gib + 1
	return int(min(max(need, MinEphemeralGiB), MaxEphemeralGiB))
}

// route measures a claimed job from what HashCheck already has (its size,
// its sidecars' listing) and at most one header read: the pixels a TIFF
// declares, or the features a Shapefile's .dbf declares. A header that
// cannot be read leaves its measure at 0 (unknown): the Lambda path's own
// budgets (preflight) still judge the file.
func (h *HashCheck) route(ctx context.Context, job Job, sidecars []objectstore.Object) *Route {
	w := Work{Bytes: job.SourceSize}
	for _, sc := range sidecars {
		w.Bytes += sc.Size
		if strings.EqualFold(extOf(sc.Key), ".dbf") {
			w.Features = dbfRecords(objectstore.NewReaderAt(ctx, h.store, job.SourceBucket, sc.Key, sc.Size))
		}
	}
	switch strings.ToLower(extOf(job.SourceKey)) {
	case ".tif", ".tiff":
		hc := newHeadCache(objectstore.NewReaderAt(ctx, h.store, job.SourceBucket, job.SourceKey, job.SourceSize).IfMatch(job.SourceETag), job.SourceSize)
		var ra io.ReaderAt = hc
		if sf, ok := h.finger.(StoreFingerprinter); ok {
			if b, ok := sf.Keep.Peek(job.SourceBucket, job.SourceKey, job.SourceSHA256); ok {
				ra = bytes.NewReader(b) // read whole for the hash: no request
			} else if b, ok := sf.Heads.Take(job.SourceBucket, job.SourceKey, job.SourceSHA256); ok {
				hc.head, hc.done = b, true // its head passed through the hash
			}
		}
		if p, ok := budget.DeclaredTIFF(ra, job.SourceSize); ok {
			w.PixelsBands = p
		}
	}
	limits := h.cfg.Container
	if h.limits != nil {
		limits = h.limits.ContainerLimits(ctx, limits)
	}
	ok := withinBudget(w, job.Recipe.WithDefaults())
	return &Route{Work: w, Limits: limits, WithinBudget: ok, EphemeralGiB: EphemeralGiB(w.Bytes), Engine: limits.Engine(w, ok)}
}

func extOf(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 && !strings.Contains(key[i:], "/") {
		return key[i:]
	}
	return ""
}

// dbfRecords is the record count a dBASE header declares (bytes 4-7,
// little-endian); 0 when it cannot be read.
func dbfRecords(ra io.ReaderAt) int64 {
	head := make([]byte, 8)
	if n, _ := ra.ReadAt(head, 0); n < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint32(head[4:8]))
}

// headCache serves reads inside the first headCacheSize bytes of an object
// from one ranged read: a TIFF header's tags are many small reads, each a
// request to the store otherwise.
type headCache struct {
	ra   io.ReaderAt
	size int64
	head []byte
	err  error
	done bool
}

const headCacheSize = 64 << 10

func newHeadCache(ra io.ReaderAt, size int64) *headCache { return &headCache{ra: ra, size: size} }

func (c *headCache) ReadAt(p []byte, off int64) (int, error) {
	if !c.done {
		c.done = true
		c.head = make([]byte, min(c.size, headCacheSize))
		var n int
		n, c.err = c.ra.ReadAt(c.head, 0)
		c.head = c.head[:n]
		if c.err == io.EOF {
			c.err = nil
		}
	}
	if off >= 0 && off+int64(len(p)) <= int64(len(c.head)) {
		return copy(p, c.head[off:]), nil
	}
	if int64(len(c.head)) == c.size && off >= 0 {
		// The head is the whole object: a read past its end is io.EOF.
		if off >= c.size {
			return 0, io.EOF
		}
		return copy(p, c.head[off:]), io.EOF
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.ra.ReadAt(p, off)
}
