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
// for hashing, 5 ms of orchestration per file, no more bytes than gpq) and
// 1 GiB of peak memory whatever the input's size.
var (
	goalCOG           = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1.05}
	goalSHA256        = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtLeast, Limit: 0.9}
	goalPeakRSS       = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 1024}
	goalOrchestration = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 5}
	// CPU outside GDAL per backfill item, at every size up to 10,000.
	goalOrchestrationCPU = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 5}
	goalGPQBytes         = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1}
	// migrate of 10,000 tiny files within 400 MiB of peak memory.
	goalTinyFilesRSS = &benchpair.Goal{Of: benchpair.OfValue, Op: benchpair.AtMost, Limit: 400}
	goalGPQRows      = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtLeast, Limit: 1}
	// FlatGeobuf, value-level check included, within 1.25 × ogr2ogr's CPU.
	goalFlatGeobufCPU = &benchpair.Goal{Of: benchpair.OfRatio, Op: benchpair.AtMost, Limit: 1.25}
)

// gpq (planetlabs/gpq) cannot be installed here: its output sizes for the
// two GeoParquet sets are the published anchors, in MB (10^6 bytes).
const (
	gpqPointsMB   = 20.9
	gpqPolygonsMB = 4.3
)

// sizes are the inputs of a run; quick mode shrinks the expensive ones.
type sizes struct {
	cogSide   int   // Float32 raster side of the COG time figure
	bigSide   int   // Float32 raster side of the peak-RSS figure (23170: 2 GiB)
	hashBytes int64 // bytes hashed
	vector    int   // points of the peak-RSS vector layer
	points    int   // GeoParquet points set (gpq's count is for 1,000,000)
	polygons  int   // GeoParquet polygons set (gpq's count is for 100,000)
	backfill  string
	tiny      []int // file counts of the tiny-files CLI runs
}

func (b *bench) sizes() sizes {
	if b.quick {
		return sizes{cogSide: 2000, bigSide: 8192, hashBytes: 256e6, vector: 1_000_000, points: 1_000_000, polygons: 100_000, backfill: "^items=100$", tiny: []int{100, 1000}}
	}
	return sizes{cogSide: 6000, bigSide: 23170, hashBytes: 2e9, vector: 10_000_000, points: 1_000_000, polygons: 100_000, backfill: "", tiny: []int{100, 1000, 10000}}
}

func experiments(s sizes) []experiment {
	return []experiment{
		{name: "cog", title: fmt.Sprintf("COG, %d² Float32", s.cogSide), runs: 5, quick: 3, goal: goalCOG, setup: cogTime(s.cogSide)},
		{name: "orchestration", title: "orchestration per file, --workers 1", runs: 1, quick: 1, goal: goalOrchestration, setup: orchestration(s.backfill)},
		{name: "geoparquet-points", title: fmt.Sprintf("%s points GeoJSON → GeoParquet", count(s.points)), runs: 3, quick: 1, goal: goalGPQBytes,
			setup: geoParquet("points.geojson", s.points, sampledata.WritePointsGeoJSON, gpqPointsMB, 1_000_000, "points-1M", true)},
		{name: "geoparquet-polygons", title: fmt.Sprintf("%s polygons GeoJSON → GeoParquet", count(s.polygons)), runs: 3, quick: 1, goal: goalGPQBytes,
			setup: geoParquet("polygons.geojson", s.polygons, sampledata.WritePolygonsGeoJSON, gpqPolygonsMB, 100_000, "quads-100k", false)},
		{name: "sha256", title: fmt.Sprintf("SHA-256 of %s", gb(float64(s.hashBytes))), runs: 5, quick: 3, goal: goalSHA256, setup: sha256Throughput(s.hashBytes)},
		{name: "cog-rss", title: fmt.Sprintf("%s GeoTIFF → COG", gib(rasterBytes(s.bigSide))), runs: 2, quick: 2, goal: goalPeakRSS, setup: cogPeakRSS(s.bigSide)},
		{name: "vector-rss", title: fmt.Sprintf("peak RSS, %s-point GeoPackage layer → GeoParquet", count(s.vector)), runs: 1, quick: 1, goal: goalPeakRSS, setup: vectorPeakRSS(s.vector)},
		{name: "geoparquet-writer", title: "GeoParquet writer alone, 1,000,000 points", runs: 3, quick: 1, setup: geoParquetWriter},
		{name: "flatgeobuf-points", title: fmt.Sprintf("%s points GeoJSON → FlatGeobuf, against ogr2ogr", count(s.points)), runs: 5, quick: 3, goal: goalFlatGeobufCPU,
			setup: flatGeobuf("points.geojson", s.points, sampledata.WritePointsGeoJSON)},
		{name: "tiny-files", title: "migrate and backfill CLIs over tiny files, peak RSS and CPU per file", runs: 1, quick: 1, goal: goalTinyFilesRSS, setup: tinyFiles(s.tiny)},
	}
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

// geoParquet: geomigrate's GeoParquet size on a generated GeoJSON set,
// against gpq's published size for a set of gpqCount features, and
// against a gpq-equivalent writer on the same features measured in the
// same run: the anchor side runs internal/geoparquet's
// BenchmarkGeoParquetSize for set, the writer alone on the features GDAL
// hands over for this GeoJSON (gpqsets_test.go), with geomigrate's
// default options and with the gpq-equivalent writer (writeLikeGPQ).
func geoParquet(name string, n int, write func(string, int) error, gpqMB float64, gpqCount int, set string, withRSS bool) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src := filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(src, name)
		if err := write(p, n); err != nil {
			return nil, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		what := fmt.Sprintf("%s %s GeoJSON (%s)", count(n), strings.TrimSuffix(name, ".geojson"), mb(float64(fi.Size())))
		var same benchpair.Side
		if n == gpqCount {
			same = func(ctx context.Context, run int) (benchpair.Measurement, error) {
				return goBench(ctx, b.geoparquetTest, "internal/geoparquet", nil, "BenchmarkGeoParquetSize", "^BenchmarkGeoParquetSize$/^"+set+"$/")
			}
		}
		return &setup{a: b.migrate(src, dir), b: same, figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			bytes := benchpair.Figure{Key: "geoparquet-bytes-" + name, Title: what + " → GeoParquet, bytes", Unit: "MB",
				Subject: migrateSubject + "; the output's size (run report bytes_out). gpq cannot be installed here: its published size is the anchor.",
				Values:  values(as, func(m benchpair.Measurement) float64 { return m.Metrics["bytes_out"] / 1e6 })}
			var figs []benchpair.Figure
			if n == gpqCount {
				ours, like := values(bs, metric(set+"/geomigrate bytes")), values(bs, metric(set+"/gpq-equivalent bytes"))
				bytes.Anchor, bytes.Goal = &benchpair.Anchor{Name: "gpq", Published: gpqMB}, goalGPQBytes
				bytes.Note = fmt.Sprintf("gpq's size was published for the set it was measured on, which is not in the repository; this one is generated (internal/sampledata) with the same feature count and geometry type, so the ratio compares like with like only as far as the two sets agree. On these very features, in this run, a gpq-equivalent writer wrote %s MB (next row).",
					benchpair.Number(benchpair.Summarize(like).Median/1e6))
				figs = append(figs, bytes,
					benchpair.Figure{Key: "geoparquet-bytes-gpq-equivalent-" + name, Title: what + " → GeoParquet, bytes, against a gpq-equivalent writer on the same features", Unit: "MB",
						Subject: "the runs above, bytes_out; the anchor is internal/geoparquet BenchmarkGeoParquetSize/" + set + "/gpq-equivalent (writeLikeGPQ: gpq's Parquet library and settings, input order, no covering) on the features GDAL reads from this GeoJSON, run alternately with them.",
						Values:  values(as, func(m benchpair.Measurement) float64 { return m.Metrics["bytes_out"] / 1e6 }),
						Anchor:  &benchpair.Anchor{Name: "gpq-equivalent writer", Values: scale(like, 1e-6)}, Goal: goalGPQBytes,
						Note: fmt.Sprintf("bytes_out is the CLI's file, its pages compressed by GDAL's libzstd (docs/decisions/0086). The writer alone in a Go test process, without GDAL and so with arrow-go's pure-Go ZSTD like the gpq-equivalent writer, wrote %s MB of the features. A bbox covering column, which gpq does not write, is part of both for polygons (docs/decisions/0026).",
							benchpair.Number(benchpair.Summarize(ours).Median/1e6))},
					benchpair.Figure{Key: "geoparquet-writer-rows-" + set, Title: fmt.Sprintf("GeoParquet writer alone, %s (the features of %s), rows/s", set, name), Unit: "rows/s",
						Subject: "internal/geoparquet BenchmarkGeoParquetSize/" + set + " at -benchtime 1x: Write with the default options to io.Discard, no GDAL, so both writers' pages go through arrow-go's pure-Go ZSTD (libzstd, which the CLI uses, wrote the same features at the pure-Go encoder's speed: docs/decisions/0086); the anchor is the gpq-equivalent writer in the same process.",
						Values:  values(bs, metric(set+"/geomigrate rows/s")), Anchor: &benchpair.Anchor{Name: "gpq-equivalent writer", Values: values(bs, metric(set+"/gpq-equivalent rows/s"))}, Goal: goalGPQRows})
			} else {
				bytes.Note = fmt.Sprintf("gpq's published size (%.1f MB) is for %s features: no ratio at this size.", gpqMB, count(gpqCount))
				figs = append(figs, bytes)
			}
			figs = append(figs, benchpair.Figure{Key: "geoparquet-time-" + name, Title: what + " → GeoParquet, wall time", Unit: "s", Subject: "the same runs, wall time (gpq's published times were not measured on this machine in this run: no ratio).",
				Values: values(as, wall)})
			if withRSS {
				figs = append(figs, benchpair.Figure{Key: "geoparquet-rss-" + name, Title: what + " → GeoParquet, peak RSS", Unit: "MiB", Subject: "the same runs, peak resident set of the process.",
					Values: values(as, rss)})
			}
			return figs
		}}, nil
	}
}

// scale multiplies every value by k.
func scale(vs []float64, k float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v * k
	}
	return out
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

// tinyFiles: `geomigrate migrate` and `geomigrate backfill` (default
// workers) over n one-point GeoJSON files in one directory, for each n,
// each a child process under GNU time: its peak resident set and its CPU
// time per file, GDAL's included (the whole process's).
func tinyFiles(ns []int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		srcs := make([]string, len(ns))
		for i, n := range ns {
			srcs[i] = filepath.Join(dir, fmt.Sprintf("tiny-%d", n))
			if err := writeTinyFiles(srcs[i], n); err != nil {
				return nil, err
			}
		}
		a := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			m := benchpair.Measurement{Metrics: map[string]float64{}}
			for i, n := range ns {
				for _, cmd := range []string{"migrate", "backfill"} {
					dest := filepath.Join(dir, fmt.Sprintf("dest-%s-%d-%d", cmd, n, run))
					progress("tiny-files: %s of %s files", cmd, count(n))
					c, _, err := child(ctx, nil, b.cli, cmd, srcs[i], "--dest", dest, "--progress", "plain")
					os.RemoveAll(dest)
					if err != nil {
						return m, fmt.Errorf("%s of %d files: %w", cmd, n, err)
					}
					key := fmt.Sprintf("%s-%d", cmd, n)
					m.Metrics[key+" rss"] = float64(c.MaxRSS) / (1 << 20)
					m.Metrics[key+" cpu"] = float64(c.CPU.Milliseconds()) / float64(n)
					m.Metrics[key+" wall"] = c.Wall.Seconds()
				}
			}
			return m, nil
		}
		return &setup{a: a, figures: func(as, _ []benchpair.Measurement) []benchpair.Figure {
			var figs []benchpair.Figure
			for _, cmd := range []string{"migrate", "backfill"} {
				for _, n := range ns {
					key := fmt.Sprintf("%s-%d", cmd, n)
					var goal *benchpair.Goal
					if cmd == "migrate" && n == 10000 {
						goal = goalTinyFilesRSS
					}
					subject := fmt.Sprintf("`geomigrate %s DIR --dest OUT --progress plain` (default workers, bbolt state store, report written) over %s one-point GeoJSON files in one directory, a child process under GNU time", cmd, count(n))
					figs = append(figs,
						benchpair.Figure{Key: "tiny-" + key + "-peak-rss", Title: fmt.Sprintf("%s of %s tiny files, peak RSS", cmd, count(n)), Unit: "MiB",
							Subject: subject + "; peak resident set of the process.", Values: values(as, metric(key+" rss")), Goal: goal,
							Note: fmt.Sprintf("Wall time %s s.", benchpair.Number(benchpair.Summarize(values(as, metric(key+" wall"))).Median))},
						benchpair.Figure{Key: "tiny-" + key + "-cpu", Title: fmt.Sprintf("%s of %s tiny files, CPU per file (GDAL included)", cmd, count(n)), Unit: "ms",
							Subject: subject + "; user + system CPU of the process divided by the files.", Values: values(as, metric(key+" cpu"))})
				}
			}
			return figs
		}}, nil
	}
}

// writeTinyFiles writes n one-point GeoJSON files, distinct content each,
// into dir/incoming, as internal/localrun's BenchmarkBackfillOverhead does.
func writeTinyFiles(dir string, n int) error {
	in := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(in, 0o755); err != nil {
		return err
	}
	for i := range n {
		body := fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":%d},"geometry":{"type":"Point","coordinates":[%d.5,%d.25]}}]}`, i, i%359-179, i%179-89)
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("point_%05d.geojson", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
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
func metric(name string) func(benchpair.Measurement) float64 {
	return func(m benchpair.Measurement) float64 { return m.Metrics[name] }
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
