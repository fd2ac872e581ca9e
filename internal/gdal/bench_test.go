package gdal

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// benchRaster writes a ~100 MB Float32 GeoTIFF (5120 x 5120, tiled,
// uncompressed): a smooth field with fine-grained variation, so that the
// compressor and the predictor have realistic work.
func benchRaster(b *testing.B, dir string) string {
	b.Helper()
	const side, rows = 5120, 256
	p := filepath.Join(dir, "bench_f32.tif")
	ds, err := godal.Create(godal.GTiff, p, 1, godal.Float32, side, side,
		godal.CreationOption("TILED=YES", "COMPRESS=NONE", "BLOCKXSIZE=256", "BLOCKYSIZE=256"))
	if err != nil {
		b.Fatal(err)
	}
	wkt, err := sampledata.WKT(32633)
	if err != nil {
		b.Fatal(err)
	}
	if err := ds.SetProjection(wkt); err != nil {
		b.Fatal(err)
	}
	if err := ds.SetGeoTransform([6]float64{500000, 10, 0, 5200000, 0, -10}); err != nil {
		b.Fatal(err)
	}
	band := ds.Bands()[0]
	if err := band.SetNoData(-9999); err != nil {
		b.Fatal(err)
	}
	buf := make([]float32, side*rows)
	seed := uint32(1)
	for y0 := 0; y0 < side; y0 += rows {
		for y := 0; y < rows; y++ {
			for x := 0; x < side; x++ {
				seed = seed*1664525 + 1013904223 // deterministic noise
				fy := float64(y0 + y)
				v := 800 + 300*math.Sin(float64(x)/410)*math.Cos(fy/370) + 0.05*fy + float64(seed>>24)/64
				buf[y*side+x] = float32(v)
			}
		}
		if err := band.Write(0, y0, buf, side, rows); err != nil {
			b.Fatal(err)
		}
	}
	if err := ds.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// fidelityNs is the time the engine spent on the fidelity check of these
// outputs (Output.Stats["fidelity_ns"]).
func fidelityNs(b *testing.B, outs []recipe.Output) int64 {
	var ns int64
	for _, o := range outs {
		n, ok := o.Stats["fidelity_ns"]
		if !ok || o.Fidelity == nil {
			b.Fatalf("%s: no fidelity check recorded", o.Path)
		}
		ns += n
	}
	return ns
}

// reportCheckShare reports the fidelity check's share of the conversion
// time it is part of, to be kept within 10 % (docs/decisions/0012).
func reportCheckShare(b *testing.B, checkNs int64, convertNs float64) {
	if convertNs > 0 {
		b.ReportMetric(float64(checkNs)/convertNs, "check/convert")
		b.ReportMetric(float64(checkNs)/float64(b.N)/1e6, "check-ms/op")
	}
}

// BenchmarkCOG converts the same ~100 MB Float32 GeoTIFF with the engine
// and with `gdal_translate` given the same switches (COGOptions) and the
// same GDAL settings; the second sub-benchmark reports the ratio
// engine ns/op ÷ gdal_translate ns/op (target ≤ 1.1). The first reports the
// fidelity check's share of the engine's conversion time (check/convert,
// target ≤ 0.1). No timed assertions.
func BenchmarkCOG(b *testing.B) {
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		b.Skip("gdal_translate not installed (make deps)")
	}
	dir := b.TempDir()
	src := benchRaster(b, dir)
	fi, _ := os.Stat(src)
	r := fgbRecipe()
	threads := engine.Config().NumThreads
	var engineNs float64

	b.Run("engine", func(b *testing.B) {
		b.SetBytes(fi.Size())
		work := b.TempDir()
		b.ResetTimer()
		engineNs = convertEachRun(b, engine, src, work, r)
	})
	b.Run("gdal_translate", func(b *testing.B) {
		b.SetBytes(fi.Size())
		dst := filepath.Join(b.TempDir(), "cli.tif")
		args := []string{"-q",
			"--config", "GDAL_NUM_THREADS", strconv.Itoa(threads),
			"--config", "GDAL_CACHEMAX", strconv.Itoa(engine.Config().CacheMaxMB)}
		args = append(args, COGOptions(r, false, threads)...)
		args = append(args, src, dst)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if out, err := exec.Command("gdal_translate", args...).CombinedOutput(); err != nil {
				b.Fatalf("gdal_translate: %v\n%s", err, out)
			}
			b.StopTimer()
			os.Remove(dst)
			b.StartTimer()
		}
		cliNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		if engineNs > 0 && cliNs > 0 {
			b.ReportMetric(engineNs/cliNs, "engine/gdal_translate")
		}
	})
}

// BenchmarkCategoricalScan measures what categorical detection costs on a
// raster without a colour table (5120 x 5120 Byte, 6 classes, tiled 256,
// DEFLATE): scan opens the file and reads the band in full to prove it
// holds few values (what Convert does before translating); convert is the
// whole conversion, scan included. The metric scan/convert is its share.
// Continuous integer data ends the scan in its first strip; floats and
// paletted rasters are never scanned.
func BenchmarkCategoricalScan(b *testing.B) {
	const side = 5120
	px := make([]byte, side*side)
	classes := []byte{11, 21, 42, 52, 71, 90}
	for y := 0; y < side; y++ {
		for x := 0; x < side; x++ {
			px[y*side+x] = classes[((x/13)*3+(y/11)*5+(x*y)/4099)%len(classes)]
		}
	}
	src := filepath.Join(b.TempDir(), "landcover.tif")
	if err := sampledata.WriteRaster(src, sampledata.Raster{Width: side, Height: side, Type: godal.Byte, EPSG: 32633,
		GeoTransform: [6]float64{500000, 30, 0, 5200000, 0, -30}, Data: px}); err != nil {
		b.Fatal(err)
	}
	var scanNs float64
	b.Run("scan", func(b *testing.B) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			ds, err := godal.Open(src, godal.RasterOnly())
			if err != nil {
				b.Fatal(err)
			}
			few, err := fewValues(context.Background(), ds.Bands()[0], newRecorder())
			ds.Close()
			if err != nil || !few {
				b.Fatal(few, err)
			}
		}
		scanNs = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	})
	b.Run("convert", func(b *testing.B) {
		work := b.TempDir()
		b.ResetTimer()
		start := time.Now()
		var checkNs int64
		for i := 0; i < b.N; i++ {
			outs, err := engine.Convert(context.Background(), src, work, fgbRecipe())
			if err != nil {
				b.Fatal(err)
			}
			if outs[0].OverviewResampling != recipe.ResamplingNearest {
				b.Fatal(outs[0].OverviewResampling)
			}
			checkNs += fidelityNs(b, outs)
			b.StopTimer()
			os.Remove(outs[0].Path)
			b.StartTimer()
		}
		if ns := float64(time.Since(start).Nanoseconds()) / float64(b.N); scanNs > 0 {
			b.ReportMetric(scanNs/ns, "scan/convert")
		}
		reportCheckShare(b, checkNs, float64(time.Since(start).Nanoseconds()))
	})
}

// BenchmarkFlatGeobufPoints converts 1,000,000 generated GeoJSON points to
// FlatGeobuf with the engine (its value-level fidelity check included)
// and with `ogr2ogr -f FlatGeobuf -lco SPATIAL_INDEX=YES`; the second
// sub-benchmark reports engine ns/op ÷ ogr2ogr ns/op. make bench measures
// the same pair as CPU time of whole processes (flatgeobuf-points); this
// one is for profiling the engine's side (-cpuprofile).
func BenchmarkFlatGeobufPoints(b *testing.B) {
	src := filepath.Join(b.TempDir(), "points.geojson")
	if err := sampledata.WritePointsGeoJSON(src, 1_000_000); err != nil {
		b.Fatal(err)
	}
	var engineNs float64
	b.Run("engine", func(b *testing.B) {
		work := b.TempDir()
		engineNs = convertEachRun(b, engine, src, work, fgbRecipe())
	})
	b.Run("ogr2ogr", func(b *testing.B) {
		if _, err := exec.LookPath("ogr2ogr"); err != nil {
			b.Skip("ogr2ogr not installed (make deps)")
		}
		dst := filepath.Join(b.TempDir(), "cli.fgb")
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if out, err := exec.Command("ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES", dst, src).CombinedOutput(); err != nil {
				b.Fatalf("ogr2ogr: %v\n%s", err, out)
			}
			b.StopTimer()
			os.Remove(dst)
			b.StartTimer()
		}
		if ns := float64(time.Since(start).Nanoseconds()) / float64(b.N); engineNs > 0 && ns > 0 {
			b.ReportMetric(engineNs/ns, "engine/ogr2ogr")
		}
	})
}

// BenchmarkGeoParquetGeoJSON converts make bench's two GeoJSON sets
// (1,000,000 points, 100,000 polygons) to GeoParquet with the engine, its
// value check included: Engine.Convert alone, for profiling what make
// bench's geoparquet-points and geoparquet-polygons measure of the CLI
// (-cpuprofile).
func BenchmarkGeoParquetGeoJSON(b *testing.B) {
	for _, set := range []struct {
		name  string
		n     int
		write func(string, int) error
	}{
		{"points", 1_000_000, sampledata.WritePointsGeoJSON},
		{"polygons", 100_000, sampledata.WritePolygonsGeoJSON},
	} {
		b.Run(set.name, func(b *testing.B) {
			src := filepath.Join(b.TempDir(), set.name+".geojson")
			if err := set.write(src, set.n); err != nil {
				b.Fatal(err)
			}
			ns := convertEachRun(b, engine, src, b.TempDir(), gpRecipe())
			b.ReportMetric(float64(set.n)/(ns/1e9), "rows/s")
		})
	}
}

// convertEachRun converts src b.N times (each output removed untimed),
// reports the fidelity check's share, and returns the ns per conversion.
func convertEachRun(b *testing.B, engine *Engine, src, work string, r recipe.Recipe) float64 {
	b.Helper()
	var checkNs int64
	start := time.Now()
	for i := 0; i < b.N; i++ {
		outs, err := engine.Convert(context.Background(), src, work, r)
		if err != nil {
			b.Fatal(err)
		}
		checkNs += fidelityNs(b, outs)
		b.StopTimer()
		os.Remove(outs[0].Path)
		b.StartTimer()
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	reportCheckShare(b, checkNs, ns*float64(b.N))
	return ns
}
