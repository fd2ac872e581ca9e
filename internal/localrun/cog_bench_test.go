package localrun_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// cogSideEnv sets the side of BenchmarkCOGEndToEnd's raster (default 6000;
// 12000 for the large figure).
const cogSideEnv = "GEOMIGRATE_BENCH_COG_SIDE"

// stageTimer records how long the engine's Convert took (GDAL's translate
// and the fidelity check inside it) and the fidelity check's own share
// (Output.Stats["fidelity_ns"]).
type stageTimer struct {
	recipe.Engine
	convert, fidelity time.Duration
}

func (e *stageTimer) Convert(ctx context.Context, src, work string, r recipe.Recipe) ([]recipe.Output, error) {
	start := time.Now()
	outs, err := e.Engine.Convert(ctx, src, work, r)
	e.convert = time.Since(start)
	e.fidelity = 0
	for _, o := range outs {
		e.fidelity += time.Duration(o.Stats["fidelity_ns"])
	}
	return outs, err
}

// BenchmarkCOGEndToEnd migrates one Float32 GeoTIFF (6000² by default) to
// COG through the local executor and the directory store (HashCheck,
// Convert with its fidelity check and output validation, Promote: the whole
// local path), and converts the same file with `gdal_translate -of COG`
// given the same creation options (gdal.COGOptions) and GDAL settings, in
// alternating pairs. It reports the median of the per-pair ratios
// geomigrate ÷ gdal_translate (target ≤ 1.05), their spread, and each
// side's median time, and of geomigrate's: the engine's Convert (GDAL and
// the fidelity check) and the fidelity check alone, so that what is left
// (hashing, validation, STAC, staging, promotion, the executor) shows as
// "rest-s". No timed assertion: speed is reported, not tested.
//
//	go test -run '^$' -bench '^BenchmarkCOGEndToEnd$' -benchtime 5x -timeout 30m ./internal/localrun/
func BenchmarkCOGEndToEnd(b *testing.B) {
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		b.Skip("gdal_translate not installed (make deps)")
	}
	side := 6000
	if v := os.Getenv(cogSideEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 256 {
			b.Fatalf("%s=%q: want a side of at least 256 pixels", cogSideEnv, v)
		}
		side = n
	}
	eng := gdalEngine(b) // registers GDAL's drivers
	srcDir := b.TempDir()
	if err := sampledata.WriteFloatField(filepath.Join(srcDir, "dem.tif"), side); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(srcDir, "dem.tif"))
	if err != nil {
		b.Fatal(err)
	}
	threads := eng.Config().NumThreads
	var ours, theirs, ratios, engine, fidelity, rest []float64
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p := newPipeline(b, srcDir)
		timer := &stageTimer{Engine: p.engine.Engine}
		p.engine.Engine = timer
		args := []string{"-q", "--config", "GDAL_NUM_THREADS", strconv.Itoa(threads),
			"--config", "GDAL_CACHEMAX", strconv.Itoa(eng.Config().CacheMaxMB)}
		args = append(args, gdal.COGOptions(p.cfg.Recipe, false, threads)...)
		dst := filepath.Join(b.TempDir(), "cli.tif")
		args = append(args, filepath.Join(srcDir, "dem.tif"), dst)
		runner := &localrun.Runner{Executor: p.executor(b, p.store), Workers: 1}
		b.StartTimer()

		start := time.Now()
		outcomes := runner.Run(context.Background(), []migration.Source{{Bucket: "src", Key: "dem.tif", KeyEncoding: "plain", DatasetID: "bench"}})
		a := time.Since(start)
		if len(outcomes) != 1 || outcomes[0].Status != localrun.StatusCompleted {
			b.Fatalf("migrate: %+v", outcomes)
		}
		start = time.Now()
		if out, err := exec.Command("gdal_translate", args...).CombinedOutput(); err != nil {
			b.Fatalf("gdal_translate: %v\n%s", err, out)
		}
		c := time.Since(start)

		ours, theirs = append(ours, a.Seconds()), append(theirs, c.Seconds())
		ratios = append(ratios, a.Seconds()/c.Seconds())
		engine, fidelity = append(engine, timer.convert.Seconds()), append(fidelity, timer.fidelity.Seconds())
		rest = append(rest, (a - timer.convert).Seconds())
	}
	b.StopTimer()
	b.ReportMetric(median(ratios), "geomigrate/gdal_translate")
	b.ReportMetric(slices.Min(ratios), "ratio-min")
	b.ReportMetric(slices.Max(ratios), "ratio-max")
	b.ReportMetric(median(ours), "geomigrate-s")
	b.ReportMetric(median(theirs), "gdal_translate-s")
	b.ReportMetric(median(engine), "engine-convert-s")
	b.ReportMetric(median(fidelity), "fidelity-check-s")
	b.ReportMetric(median(rest), "rest-s")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
