package gdal

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/recipe"
)

// smallRasterCandidates are the COG settings BenchmarkSmallRasterCOG
// compares on small rasters: ZSTD levels and DEFLATE (libdeflate, through
// libtiff), with and without the horizontal predictor, in 512 and 256
// blocks. "default" is recipe.DefaultRecipe as it stands.
var smallRasterCandidates = []struct {
	name        string
	compression string
	level       int // ZSTD or DEFLATE level
	predictor   string
	block       int
}{
	{"default", "", 0, "", 0},
	{"zstd1-pred2-512", "ZSTD", 1, "auto", 512},
	{"zstd2-pred2-512", "ZSTD", 2, "auto", 512},
	{"zstd3-pred2-512", "ZSTD", 3, "auto", 512},
	{"zstd6-pred2-512", "ZSTD", 6, "auto", 512},
	{"zstd9-pred2-512", "ZSTD", 9, "auto", 512},
	{"zstd1-none-512", "ZSTD", 1, "none", 512},
	{"zstd3-none-512", "ZSTD", 3, "none", 512},
	{"zstd6-none-512", "ZSTD", 6, "none", 512},
	{"zstd9-none-512", "ZSTD", 9, "none", 512},
	{"deflate6-pred2-512", "DEFLATE", 6, "auto", 512},
	{"deflate6-none-512", "DEFLATE", 6, "none", 512},
	{"zstd1-pred2-256", "ZSTD", 1, "auto", 256},
	{"zstd3-pred2-256", "ZSTD", 3, "auto", 256},
	{"zstd9-pred2-256", "ZSTD", 9, "auto", 256},
	{"deflate6-pred2-256", "DEFLATE", 6, "auto", 256},
}

// BenchmarkSmallRasterCOG converts every GeoTIFF of the directory
// $GEOMIGRATE_BENCH_SMALL_RASTERS (the end-to-end benchmark's small files:
// scripts/bench-e2e/bench_e2e.py generate) with each candidate's settings
// through Engine.Convert, pixel check included, one GDAL thread per
// conversion as `geomigrate migrate` runs them on a machine its workers
// fill. It reports the process's CPU time (user + system) and output bytes
// per file, to be set beside the seed's conversion of the same files
// (bench_e2e.py convert; make bench-cog-defaults alternates the two, and
// docs/decisions/0110 holds what it measured).
func BenchmarkSmallRasterCOG(b *testing.B) {
	dir := os.Getenv("GEOMIGRATE_BENCH_SMALL_RASTERS")
	if dir == "" {
		b.Skip("GEOMIGRATE_BENCH_SMALL_RASTERS is not set (make bench-cog-defaults)")
	}
	srcs, err := filepath.Glob(filepath.Join(dir, "*.tif"))
	if err != nil || len(srcs) == 0 {
		b.Fatalf("no GeoTIFF in %s (%v)", dir, err)
	}
	sort.Strings(srcs)
	// One GDAL thread, as each of a migrate's workers gets when they fill
	// the CPUs; GDAL_NUM_THREADS also drives the overviews' computation.
	one := *engine
	one.cfg.NumThreads = 1
	one.conversions = new(atomic.Int64)
	threads := getConfig("GDAL_NUM_THREADS")
	setConfig("GDAL_NUM_THREADS", "1")
	b.Cleanup(func() { setConfig("GDAL_NUM_THREADS", threads) })

	for _, c := range smallRasterCandidates {
		r := recipe.DefaultRecipe()
		r.EngineVersion = engine.Version()
		if c.compression != "" {
			r.Compression, r.Predictor, r.BlockSize = c.compression, c.predictor, c.block
			if c.compression == "DEFLATE" {
				r.DeflateLevel = c.level
			} else {
				r.ZSTDLevel = c.level
			}
		}
		if err := r.Validate(); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			work := b.TempDir()
			var cpu, wall time.Duration
			var bytes int64
			for i := 0; i < b.N; i++ {
				for _, src := range srcs {
					cpu0, start := processCPU(), time.Now()
					outs, err := one.Convert(context.Background(), src, work, r)
					wall, cpu = wall+time.Since(start), cpu+processCPU()-cpu0
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range outs {
						if o.Fidelity == nil {
							b.Fatalf("%s: no pixel check recorded", o.Path)
						}
						bytes += fileSize(o.Path)
						os.Remove(o.Path)
					}
				}
			}
			files := float64(b.N * len(srcs))
			b.ReportMetric(float64(cpu.Microseconds())/1e3/files, "cpu-ms/file")
			b.ReportMetric(float64(wall.Microseconds())/1e3/files, "wall-ms/file")
			b.ReportMetric(float64(bytes)/files, "bytes/file")
		})
	}
}
