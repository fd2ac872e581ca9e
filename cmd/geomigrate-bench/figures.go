package main

// The figures make bench prints: experiments() is the one table of them.
// To add one, append an experiment whose setup writes its inputs and
// returns its two sides (geomigrate's, A, and the anchor's, B, or nil) and
// how their measurements become rows; or have another benchmark write a
// JSON list of benchpair.Figure and pass it with -include (BENCH_INCLUDE in
// the Makefile).

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/geomigrate/geomigrate/internal/benchpair"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// Goals: the performance targets (1.05 × gdal_translate for a COG, 0.9 × openssl
// for hashing, 5 ms of orchestration per file, no fewer rows per CPU-second
// and no more bytes than gpq) and
// 1 GiB of peak memory whatever the input's size.
var (
	goalCOG = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1.05}
	// geomigrate's verified conversion against the anchor that does the
	// same work: gdal_translate, then an outside comparison of every pixel.
	goalCOGChecked    = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 0.8}
	goalSHA256        = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtLeast, Limit: 0.9}
	goalPeakRSS       = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 1024}
	goalOrchestration = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 5}
	// CPU outside GDAL per backfill item, at every size up to 10,000.
	goalOrchestrationCPU = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 5}
	goalGPQBytes         = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1}
	// A file with the bbox covering gpq does not write: at most 10 % more.
	goalGPQCoveredBytes = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1.1}
	// migrate of 10,000 tiny files within 400 MiB of peak memory, and at
	// most 3 ms of CPU per file over the conversion floor at every size.
	goalTinyFilesRSS = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 400}
	goalTinyOverhead = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 3}
	goalGPQRows      = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtLeast, Limit: 1}
	// FlatGeobuf, value-level check included, within 1.25 × ogr2ogr's CPU.
	goalFlatGeobufCPU = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1.25}
)

// sizes are the inputs of a run; quick mode shrinks the expensive ones.
type sizes struct {
	cogSide   int   // Float32 raster side of the COG time figure
	bigSide   int   // Float32 raster side of the peak-RSS figure (23170: 2 GiB)
	hashBytes int64 // bytes hashed
	vector    int   // points of the peak-RSS vector layer
	points    int   // GeoParquet points set, paired with gpq
	polygons  int   // GeoParquet polygons set, paired with gpq
	backfill  string
	tiny      []int // file counts of the tiny-files experiments
}

func (b *bench) sizes() sizes {
	if b.quick {
		return sizes{cogSide: 2000, bigSide: 8192, hashBytes: 256e6, vector: 1_000_000, points: 1_000_000, polygons: 100_000, backfill: "^items=100$", tiny: []int{100, 1000}}
	}
	return sizes{cogSide: 6000, bigSide: 23170, hashBytes: 2e9, vector: 10_000_000, points: 1_000_000, polygons: 100_000, backfill: "", tiny: []int{100, 1000, 10000}}
}

func experiments(s sizes) []experiment {
	exps := []experiment{
		{name: "cog", title: fmt.Sprintf("COG, %d² Float32", s.cogSide), runs: 5, quick: 3, goal: goalCOG, setup: cogTime(s.cogSide)},
		{name: "cog-checked", title: fmt.Sprintf("COG, %d² Float32, against gdal_translate and a full pixel comparison", s.cogSide), runs: 5, quick: 3, goal: goalCOGChecked, setup: cogChecked(s.cogSide)},
		{name: "orchestration", title: "orchestration per file, --workers 1", runs: 1, quick: 1, goal: goalOrchestration, setup: orchestration(s.backfill)},
		{name: "geoparquet-points", title: fmt.Sprintf("%s points GeoJSON → GeoParquet against gpq", count(s.points)), runs: 3, quick: 1, goal: goalGPQRows,
			setup: geoParquet("points.geojson", s.points, sampledata.WritePointsGeoJSON, goalGPQBytes)},
		{name: "geoparquet-polygons", title: fmt.Sprintf("%s polygons GeoJSON → GeoParquet against gpq", count(s.polygons)), runs: 3, quick: 1, goal: goalGPQRows,
			setup: geoParquet("polygons.geojson", s.polygons, sampledata.WritePolygonsGeoJSON, goalGPQCoveredBytes)},
		{name: "sha256", title: fmt.Sprintf("SHA-256 of %s", gb(float64(s.hashBytes))), runs: 5, quick: 3, goal: goalSHA256, setup: sha256Throughput(s.hashBytes)},
		{name: "cog-rss", title: fmt.Sprintf("%s GeoTIFF → COG", gib(rasterBytes(s.bigSide))), runs: 2, quick: 2, goal: goalPeakRSS, setup: cogPeakRSS(s.bigSide)},
		{name: "vector-rss", title: fmt.Sprintf("peak RSS, %s-point GeoPackage layer → GeoParquet", count(s.vector)), runs: 1, quick: 1, goal: goalPeakRSS, setup: vectorPeakRSS(s.vector)},
		{name: "geoparquet-writer", title: "GeoParquet writer alone, 1,000,000 points", runs: 3, quick: 1, setup: geoParquetWriter},
		{name: "flatgeobuf-points", title: fmt.Sprintf("%s points GeoJSON → FlatGeobuf, against ogr2ogr", count(s.points)), runs: 5, quick: 3, goal: goalFlatGeobufCPU,
			setup: flatGeobuf("points.geojson", s.points, sampledata.WritePointsGeoJSON)},
	}
	for _, n := range s.tiny {
		runs := 3
		if n >= 10000 {
			runs = 1
		}
		exps = append(exps, experiment{name: fmt.Sprintf("tiny-files-%d", n), title: fmt.Sprintf("migrate of %s tiny files against the conversion floor", count(n)),
			runs: runs, quick: 2, goal: goalTinyOverhead, settle: true, setup: tinyFiles(n)})
	}
	return exps
}

const migrateSubject = "`geomigrate migrate DIR --workers 1` into a fresh destination and state store each run (hash, checks, conversion, fidelity check, staging, promotion; process start included)"

// cogTime: geomigrate against gdal_translate -of COG with the same
// creation options and GDAL settings, on a generated Float32 field.
func cogTime(side int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src, err := raster(dir, side)
		if err != nil {
			return nil, err
		}
		title := fmt.Sprintf("COG, %d² Float32 (%s), same creation options and GDAL settings", side, mb(rasterBytes(side)))
		return &setup{a: b.migrate(filepath.Dir(src), dir), b: b.gdalTranslate(src, dir), figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			note := b.cogNote(as, bs)
			return []benchpair.Figure{
				{Key: "cog-time", Title: title + ", wall time", Unit: "s", Subject: migrateSubject + ", wall time.",
					Values: values(as, wall), Anchor: &benchpair.Anchor{Name: "gdal_translate -of COG", Values: values(bs, wall)}, Goal: goalCOG, Note: note},
				{Key: "cog-cpu", Title: title + ", CPU time", Unit: "s", Subject: "the same runs, user + system CPU time of the process (less sensitive than wall time to other work on the machine).",
					Values: values(as, cpu), Anchor: &benchpair.Anchor{Name: "gdal_translate -of COG", Values: values(bs, cpu)}},
			}
		}}, nil
	}
}

// cogChecked: geomigrate (whose conversion compares every pixel of the
// output with the source before it is staged) against gdal_translate
// followed by scripts/bench-cog/pixel_compare.py (rasterio and numpy, strip
// by strip), one shell per run so that both commands' CPU is the anchor's.
func cogChecked(side int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src, err := raster(dir, side)
		if err != nil {
			return nil, err
		}
		anchor := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			dst := filepath.Join(dir, fmt.Sprintf("checked-%d.tif", run))
			defer os.Remove(dst)
			script := `gdal_translate "$@" && exec /usr/bin/python3 "$PIXEL_COMPARE" "$SRC" "$DST"`
			return childMeasure(ctx, []string{"PIXEL_COMPARE=" + b.pixelCompare, "SRC=" + src, "DST=" + dst}, "sh", append([]string{"-c", script, "sh"}, b.cogArgs(src, dst)...)...)
		}
		title := fmt.Sprintf("COG, %d² Float32 (%s), verified: against gdal_translate and a full pixel comparison", side, mb(rasterBytes(side)))
		name := "gdal_translate -of COG, then pixel_compare.py"
		return &setup{a: b.migrate(filepath.Dir(src), dir), b: anchor, anchor: name + " (every pixel and mask of the output against the source, rasterio and numpy)",
			figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
				return []benchpair.Figure{
					{Key: "cog-checked-cpu", Title: title + ", CPU time", Unit: "s", Subject: migrateSubject + "; user + system CPU of the process tree of each side.",
						Values: values(as, cpu), Anchor: &benchpair.Anchor{Name: name, Values: values(bs, cpu)}, Goal: goalCOGChecked},
					{Key: "cog-checked-time", Title: title + ", wall time", Unit: "s", Subject: "the same runs, wall time.",
						Values: values(as, wall), Anchor: &benchpair.Anchor{Name: name, Values: values(bs, wall)}},
				}
			}}, nil
	}
}

// cogPeakRSS: the same pair on a raster of about 2 GiB; peak RSS is the
// figure, and the time ratio at that size comes with it.
func cogPeakRSS(side int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src, err := raster(dir, side)
		if err != nil {
			return nil, err
		}
		title := fmt.Sprintf("%s GeoTIFF (%d² Float32) → COG", gib(rasterBytes(side)), side)
		return &setup{a: b.migrate(filepath.Dir(src), dir), b: b.gdalTranslate(src, dir), figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			return []benchpair.Figure{
				{Key: "cog-peak-rss", Title: title + ", peak RSS", Unit: "MiB", Subject: migrateSubject + "; peak resident set of the process (GNU time %M).",
					Values: values(as, rss), Anchor: &benchpair.Anchor{Name: "gdal_translate", Values: values(bs, rss)}, Goal: goalPeakRSS},
				{Key: "cog-big-time", Title: title + ", wall time", Unit: "s", Subject: "the same runs, wall time.",
					Values: values(as, wall), Anchor: &benchpair.Anchor{Name: "gdal_translate -of COG", Values: values(bs, wall)}, Goal: goalCOG, Note: b.cogNote(as, bs)},
			}
		}}, nil
	}
}

// cogNote says what the anchor ran and compares the two outputs' sizes
// (the same options give the same tiles; geomigrate's output carries its
// lineage metadata besides).
func (b *bench) cogNote(as, bs []benchpair.Measurement) string {
	args := b.cogArgs("SRC", "DST")
	var co []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-co" {
			co = append(co, args[i+1])
		}
	}
	s := fmt.Sprintf("Anchor: `gdal_translate -of COG` with the engine's switches (gdal.COGOptions: %s) and every GDAL configuration option the engine sets (GDAL_CACHEMAX=%d, GDAL_NUM_THREADS=%d, …).",
		strings.Join(co, " "), b.gdalConfig.CacheMaxMB, b.gdalConfig.NumThreads)
	if len(as) > 0 && len(bs) > 0 {
		s += fmt.Sprintf(" Outputs: %d and %d bytes.", int64(as[0].Metrics["bytes_out"]), int64(bs[0].Metrics["bytes_out"]))
	}
	return s
}

// sha256Throughput: the project's hash of a file (internal/fingerprint
// through the directory store, as HashCheck does it) against openssl.
func sha256Throughput(n int64) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		p := filepath.Join(dir, "random.bin")
		if err := writeRandom(p, n); err != nil {
			return nil, err
		}
		var sums []string
		side := func(name string, args ...string) benchpair.Side {
			return func(ctx context.Context, run int) (benchpair.Measurement, error) {
				m, out, err := child(ctx, nil, name, args...)
				if err != nil {
					return m, err
				}
				f := strings.Fields(string(out))
				if len(f) == 0 {
					return m, fmt.Errorf("%s printed no digest", name)
				}
				if sums = append(sums, f[0]); f[0] != sums[0] {
					return m, fmt.Errorf("digests differ: %s and %s", sums[0], f[0])
				}
				m.Metrics = map[string]float64{"GB/s": float64(n) / m.Wall.Seconds() / 1e9}
				return m, nil
			}
		}
		return &setup{a: side(b.sha256File, p), b: side("openssl", "dgst", "-sha256", "-r", p), figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			return []benchpair.Figure{{Key: "sha256", Title: fmt.Sprintf("SHA-256 of %s (%s bytes)", gb(float64(n)), strconv.FormatInt(n, 10)), Unit: "GB/s",
				Subject: "`bin/bench/sha256file FILE` (cmd/geomigrate-bench/sha256file): internal/fingerprint.SHA256 through the directory store with HashCheck's default options; bytes ÷ wall time of the process, start included, as for openssl; both digests must agree.",
				Values:  values(as, metric("GB/s")), Anchor: &benchpair.Anchor{Name: "openssl dgst -sha256", Values: values(bs, metric("GB/s"))}, Goal: goalSHA256}}
		}}, nil
	}
}

// vectorPeakRSS: a layer of n points (GeoPackage) → GeoParquet, peak RSS
// against the 1 GiB goal, whatever the engine does today (it holds the
// layer until the Hilbert order is known; its budget may refuse it).
func vectorPeakRSS(n int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src := filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(src, "points.gpkg")
		if err := sampledata.WritePointsGPKG(p, n); err != nil {
			return nil, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		title := fmt.Sprintf("%s-point GeoPackage layer (%s, 3 attributes) → GeoParquet, peak RSS", count(n), mb(float64(fi.Size())))
		return &setup{a: b.migrate(src, dir), figures: func(as, _ []benchpair.Measurement) []benchpair.Figure {
			return []benchpair.Figure{
				{Key: "vector-peak-rss", Title: title, Unit: "MiB", Subject: migrateSubject + "; peak resident set of the process.", Values: values(as, rss), Goal: goalPeakRSS},
				{Key: "vector-time", Title: fmt.Sprintf("%s-point GeoPackage layer → GeoParquet, wall time", count(n)), Unit: "s", Subject: "the same runs, wall time.", Values: values(as, wall)},
			}
		}}, nil
	}
}

// orchestration: internal/localrun's BenchmarkBackfillOverhead (the local
// backfill of tiny files, one at a time, minus GDAL's own time).
func orchestration(sub string) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		pattern := "^BenchmarkBackfillOverhead$"
		if sub != "" {
			pattern += "/" + sub
		}
		a := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			return goBench(ctx, b.localrunTest, "internal/localrun", []string{"GEOMIGRATE_BENCH_BACKFILL=1"}, "BenchmarkBackfillOverhead", pattern)
		}
		return &setup{a: a, figures: func(as, _ []benchpair.Measurement) []benchpair.Figure {
			var subs []string
			for k := range as[0].Metrics {
				if s, ok := strings.CutSuffix(k, " overhead-ms/item"); ok {
					subs = append(subs, s)
				}
			}
			slices.SortFunc(subs, func(x, y string) int { return itemsOf(x) - itemsOf(y) })
			var figs []benchpair.Figure
			for _, s := range subs {
				first, last, cpu := values(as, metric(s+" first10%-ms/item")), values(as, metric(s+" last10%-ms/item")), values(as, metric(s+" overhead-cpu-ms/item"))
				figs = append(figs, benchpair.Figure{Key: "orchestration-" + s, Title: fmt.Sprintf("orchestration per file, %s tiny files, --workers 1, wall", count(itemsOf(s))), Unit: "ms",
					Subject: "internal/localrun BenchmarkBackfillOverhead (make bench-backfill): the local backfill's wall time per file minus GDAL's conversion and validation time.",
					Values:  values(as, metric(s+" overhead-ms/item")), Goal: goalOrchestration,
					Note: fmt.Sprintf("First tenth of the files %s ms, last tenth %s ms (flat means equal).",
						benchpair.Number(benchpair.Summarize(first).Median), benchpair.Number(benchpair.Summarize(last).Median))},
					benchpair.Figure{Key: "orchestration-cpu-" + s, Title: fmt.Sprintf("orchestration per file, %s tiny files, --workers 1, CPU", count(itemsOf(s))), Unit: "ms",
						Subject: "the same run: CPU time per file outside GDAL (less sensitive than wall time to other work on the machine).",
						Values:  cpu, Goal: goalOrchestrationCPU},
					benchpair.Figure{Key: "orchestration-peak-rss-" + s, Title: fmt.Sprintf("local backfill of %s tiny files, --workers 1, peak resident set", count(itemsOf(s))), Unit: "MiB",
						Subject: "the same run: the test process's peak resident set (VmHWM, reset before each size), GDAL's memory included.",
						Values:  values(as, metric(s+" peak-rss-MiB")),
						Note:    fmt.Sprintf("Peak Go heap %s MiB.", benchpair.Number(benchpair.Summarize(values(as, metric(s+" peak-heap-MiB"))).Median))})
			}
			return figs
		}}, nil
	}
}

func itemsOf(sub string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(sub, "items="))
	return n
}

// geoParquetWriter: internal/geoparquet's BenchmarkWrite1M, the writer
// alone (no GDAL) writing 1,000,000 points to io.Discard.
func geoParquetWriter(ctx context.Context, b *bench, dir string) (*setup, error) {
	a := func(ctx context.Context, run int) (benchpair.Measurement, error) {
		return goBench(ctx, b.geoparquetTest, "internal/geoparquet", nil, "BenchmarkWrite1M", "^BenchmarkWrite1M$")
	}
	return &setup{a: a, figures: func(as, _ []benchpair.Measurement) []benchpair.Figure {
		return []benchpair.Figure{{Key: "geoparquet-writer-rows", Title: "GeoParquet writer alone, 1,000,000 points (id, label), default options", Unit: "rows/s",
			Subject: "internal/geoparquet BenchmarkWrite1M at -benchtime 1x, one process per run: Write to io.Discard, no GDAL.",
			Values:  values(as, metric(" rows/s"))}}
	}}, nil
}

// goBench runs one Go benchmark from a test binary built by make (in the
// package's directory, as go test would) and returns its metrics, keyed
// "SUB UNIT" (SUB empty for the benchmark itself).
func goBench(ctx context.Context, binary, pkgDir string, env []string, name, pattern string) (benchpair.Measurement, error) {
	m, out, err := childIn(ctx, pkgDir, env, binary, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", "1x", "-test.timeout", "90m")
	if err != nil {
		return m, err
	}
	res, err := benchpair.GoBenchMetrics(out, name)
	if err != nil {
		return m, err
	}
	m.Metrics = map[string]float64{}
	for sub, ms := range res {
		for unit, v := range ms {
			m.Metrics[sub+" "+unit] = v
		}
	}
	return m, nil
}

// raster writes the Float32 field of the given side as dir/src/field.tif.
func raster(dir string, side int) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(src, "field.tif")
	return p, sampledata.WriteFloatField(p, side)
}

// writeRandom writes n pseudo-random bytes (hashing cost does not depend
// on the content, but no file system may compress or dedupe them).
func writeRandom(p string, n int64) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	rng := rand.NewChaCha8([32]byte{'g', 'e', 'o'})
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		b := buf[:min(int64(len(buf)), left)]
		rng.Read(b)
		if _, err := w.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func values(ms []benchpair.Measurement, f func(benchpair.Measurement) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

func wall(m benchpair.Measurement) float64 { return m.Wall.Seconds() }
func cpu(m benchpair.Measurement) float64  { return m.CPU.Seconds() }
func rss(m benchpair.Measurement) float64  { return float64(m.MaxRSS) / (1 << 20) }

// metric is the run's own figure of that name; NaN where the run did not
// report it, so that the figure is refused (benchpair.Figure.Check) rather
// than printed as 0.
func metric(name string) func(benchpair.Measurement) float64 {
	return func(m benchpair.Measurement) float64 {
		v, ok := m.Metrics[name]
		if !ok {
			return math.NaN()
		}
		return v
	}
}

func rasterBytes(side int) float64 { return float64(side) * float64(side) * 4 }
func mb(n float64) string          { return fmt.Sprintf("%.0f MB", n/1e6) }
func gb(n float64) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", n/1e9), "0"), ".0") + " GB"
}
func gib(n float64) string { return fmt.Sprintf("%.2g GiB", n/(1<<30)) }

// count writes 1000000 as 1,000,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
