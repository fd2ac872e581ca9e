package gdal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// MeasureThroughputEnv names the file TestMeasureThroughput writes the
// measured conversion throughput table to (internal/cost/throughput.json,
// which `geomigrate plan` embeds). Unset, the test is skipped: it takes
// minutes and its numbers depend on the machine and its load.
// scripts/measure-throughput.sh sets it.
const MeasureThroughputEnv = "GEOMIGRATE_MEASURE_THROUGHPUT"

// throughputFormat is one measured source format: a small and a large
// source of the same shape, so the per-file overhead and the per-byte rate
// can be told apart (rate = Δbytes / Δtime between the two).
type throughputFormat struct {
	ext, note    string
	small, large func(dir string) (string, error)
}

// measuredFormat is one row of the table (the JSON internal/cost reads).
type measuredFormat struct {
	MBPerSecond float64 `json:"mb_per_s"`
	OverheadMS  float64 `json:"overhead_ms"`
	Output      string  `json:"output"`
	Note        string  `json:"note"`
	SmallBytes  int64   `json:"small_bytes"`
	SmallMS     float64 `json:"small_ms"`
	LargeBytes  int64   `json:"large_bytes"`
	LargeMS     float64 `json:"large_ms"`
	// SmallWallMS and LargeWallMS are the least wall times, for comparison
	// (SmallMS and LargeMS are CPU times).
	SmallWallMS float64 `json:"small_wall_ms"`
	LargeWallMS float64 `json:"large_wall_ms"`
	// OutputRatio is the large source's output bytes over its source bytes.
	OutputRatio float64 `json:"output_ratio"`
	// RangeGetsPerFile and RangeGetsPerMB: the ranged reads (one GET each
	// on S3) ConvertReader makes, fitted on the two sources like the time;
	// only for formats Convert reads by range (formats.ReadableByRange).
	RangeGetsPerFile float64 `json:"range_gets_per_file,omitempty"`
	RangeGetsPerMB   float64 `json:"range_gets_per_mb,omitempty"`
	SmallRangeGets   int64   `json:"small_range_gets,omitempty"`
	LargeRangeGets   int64   `json:"large_range_gets,omitempty"`
}

type measuredTable struct {
	MeasuredAt string `json:"measured_at"`
	Machine    string `json:"machine"`
	GDAL       string `json:"gdal"`
	GoVersion  string `json:"go"`
	Threads    int    `json:"threads"`
	// LoadAverage is /proc/loadavg before and after: how busy the machine
	// was while measuring.
	LoadAverage string                    `json:"load_average"`
	Method      string                    `json:"method"`
	Command     string                    `json:"command"`
	Formats     map[string]measuredFormat `json:"formats"`
}

// TestMeasureThroughput measures Engine.Convert's throughput per source
// format on this machine with one GDAL thread (one vCPU's worth: Lambda
// gives 1 vCPU at 1,769 MB), and writes the table to $MeasureThroughputEnv.
// Each conversion is timed five times and the least CPU time kept.
//
// Without the variable it runs the same code on tiny sources with the
// package's engine, once each, and checks the table it would write is
// complete (the numbers of so small a run mean nothing): the measuring
// code cannot rot unnoticed between measurements.
func TestMeasureThroughput(t *testing.T) {
	out := os.Getenv(MeasureThroughputEnv)
	e, sizes, runs := engine, smokeSizes, 1
	if out != "" {
		var err error
		if e, err = New(WithNumThreads(1)); err != nil {
			t.Fatal(err)
		}
		sizes, runs = measureSizes, 5
	}
	dir := t.TempDir()
	table := measuredTable{
		MeasuredAt: time.Now().UTC().Format(time.RFC3339),
		Machine:    machine(),
		GDAL:       e.Version(),
		GoVersion:  runtime.Version(),
		Threads:    1,
		Method: "Engine.Convert (preflight, open, budgets, conversion, fidelity check, output read-back) of a generated small and large " +
			"source per format, GDAL_NUM_THREADS=1, default recipe (COG ZSTD 9 / GeoParquet ZSTD); least process CPU time " +
			"(user + system, getrusage) of 5 runs each, as a dedicated vCPU would spend it (the least wall time is kept beside it); " +
			"mb_per_s = (large_bytes - small_bytes) / (large_ms - small_ms), overhead_ms = small_ms - small_bytes / rate; " +
			"range GETs: the ReadAt calls of ConvertReader (one ranged GET each on S3), fitted the same way",
		Command: "scripts/measure-throughput.sh",
		Formats: map[string]measuredFormat{},
	}
	before := loadAverage()
	for _, f := range throughputFormats(sizes) {
		m, err := measureFormat(e, dir, f, runs)
		if err != nil {
			t.Fatalf("%s: %v", f.ext, err)
		}
		t.Logf("%s: %.2f MB/s, overhead %.0f ms (small %d B in %.0f ms CPU, large %d B in %.0f ms CPU, %.0f ms wall), range GETs %d/%d", f.ext, m.MBPerSecond, m.OverheadMS, m.SmallBytes, m.SmallMS, m.LargeBytes, m.LargeMS, m.LargeWallMS, m.SmallRangeGets, m.LargeRangeGets)
		if m.Output == "" || m.OutputRatio <= 0 || m.LargeBytes <= m.SmallBytes || (formats.ReadableByRange("x"+f.ext) && m.LargeRangeGets <= m.SmallRangeGets) {
			t.Errorf("%s: incomplete row %+v", f.ext, m)
		}
		table.Formats[f.ext] = m
	}
	table.LoadAverage = "before: " + before + "; after: " + loadAverage()
	b, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		return
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// throughputSizes are the small and large sources: raster sides (the ASCII
// grid's large one apart: its text is three times the bytes) and feature
// counts.
type throughputSizes struct {
	rasterSmall, rasterLarge, asciiLarge int
	featuresSmall, featuresLarge         int
}

var (
	measureSizes = throughputSizes{256, 3072, 2048, 200, 100_000}
	smokeSizes   = throughputSizes{256, 512, 384, 5, 2000}
)

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPU(s) %s, shared with other work", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model)
}

func measureFormat(e *Engine, dir string, f throughputFormat, runs int) (measuredFormat, error) {
	m := measuredFormat{Note: f.note}
	var err error
	for i, gen := range []func(string) (string, error){f.small, f.large} {
		sub := filepath.Join(dir, strings.TrimPrefix(f.ext, ".")+[]string{"-small", "-large"}[i])
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return m, err
		}
		src, err := gen(sub)
		if err != nil {
			return m, fmt.Errorf("generate: %w", err)
		}
		pre, err := preflight.Local(src, recipe.DefaultRecipe(), probe{})
		if err != nil {
			return m, err
		}
		bytes := pre.Bytes // with the sidecars GDAL reads
		cpu, wall, output, outBytes, err := fastestConvert(e, src, sub, runs)
		if err != nil {
			return m, err
		}
		ms, wallMS := float64(cpu)/float64(time.Millisecond), round(float64(wall)/float64(time.Millisecond), 1)
		var gets int64
		if formats.ReadableByRange(src) {
			if gets, err = countRangeReads(e, src, sub); err != nil {
				return m, err
			}
		}
		if i == 0 {
			m.SmallBytes, m.SmallMS, m.SmallWallMS, m.SmallRangeGets = bytes, ms, wallMS, gets
		} else {
			m.LargeRangeGets, m.LargeWallMS = gets, wallMS
			m.LargeBytes, m.LargeMS, m.Output = bytes, ms, output
			m.OutputRatio = round(float64(outBytes)/float64(bytes), 3)
		}
	}
	switch {
	case m.LargeBytes <= m.SmallBytes:
		return m, fmt.Errorf("large source (%d B) not larger than small (%d B)", m.LargeBytes, m.SmallBytes)
	case m.LargeMS <= m.SmallMS && runs == 1:
		m.LargeMS = m.SmallMS + 1 // a smoke run, too small to time: the fit still runs
	case m.LargeMS <= m.SmallMS:
		return m, fmt.Errorf("large source (%d B, %.0f ms) not slower than small (%d B, %.0f ms): cannot separate rate from overhead", m.LargeBytes, m.LargeMS, m.SmallBytes, m.SmallMS)
	}
	rate := float64(m.LargeBytes-m.SmallBytes) / 1e6 / ((m.LargeMS - m.SmallMS) / 1000)
	m.MBPerSecond = round(rate, 3)
	m.OverheadMS = round(math.Max(0, m.SmallMS-float64(m.SmallBytes)/1e6/rate*1000), 1)
	m.SmallMS, m.LargeMS = round(m.SmallMS, 1), round(m.LargeMS, 1)
	if m.LargeRangeGets > 0 {
		perMB := float64(m.LargeRangeGets-m.SmallRangeGets) / (float64(m.LargeBytes-m.SmallBytes) / 1e6)
		m.RangeGetsPerMB = round(perMB, 3)
		m.RangeGetsPerFile = round(math.Max(0, float64(m.SmallRangeGets)-perMB*float64(m.SmallBytes)/1e6), 1)
	}
	return m, err
}

// readCounter counts ReadAt calls, the reads GDAL makes of a source read
// by range (objectstore.ReaderAt serves them from its read-ahead).
type readCounter struct {
	ra io.ReaderAt
	n  atomic.Int64
}

func (c *readCounter) ReadAt(p []byte, off int64) (int, error) {
	c.n.Add(1)
	return c.ra.ReadAt(p, off)
}

// countRangeReads converts src through ConvertReader, as Convert does for
// an S3 object, and counts the reads.
func countRangeReads(e *Engine, src, dir string) (int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	work := filepath.Join(dir, "ranged")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(work)
	r := recipe.DefaultRecipe()
	r.EngineVersion = e.Version()
	c := &readCounter{ra: f}
	if _, err := e.ConvertReader(context.Background(), c, fileSize(src), filepath.Base(src), work, r); err != nil {
		return 0, fmt.Errorf("convert %s by range: %w", filepath.Base(src), err)
	}
	return c.n.Load(), nil
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// fastestConvert converts src runs times and returns the least CPU time
// (user + system of the whole process: GDAL, the Go side, the GC) and the
// least wall time of a run, the output format and the output bytes. CPU
// time is what a dedicated vCPU spends; on a shared machine it moves far
// less with the load than the wall time does.
func fastestConvert(e *Engine, src, dir string, runs int) (cpu, wall time.Duration, format string, size int64, err error) {
	r := recipe.DefaultRecipe()
	r.EngineVersion = e.Version()
	cpu, wall = time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for i := 0; i < runs; i++ {
		work := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		if err := os.MkdirAll(work, 0o755); err != nil {
			return 0, 0, "", 0, err
		}
		cpu0, start := processCPU(), time.Now()
		outs, err := e.Convert(context.Background(), src, work, r)
		w, c := time.Since(start), processCPU()-cpu0
		if err != nil {
			return 0, 0, "", 0, fmt.Errorf("convert %s: %w", filepath.Base(src), err)
		}
		size = 0
		for _, o := range outs {
			format = o.Format
			size += fileSize(o.Path)
		}
		cpu, wall = min(cpu, c), min(wall, w)
		os.RemoveAll(work)
	}
	return cpu, wall, format, size, nil
}

// processCPU is the user + system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func throughputFormats(z throughputSizes) []throughputFormat {
	raster := func(side int) func(string) (string, error) {
		return func(dir string) (string, error) { return writeFloatField(filepath.Join(dir, "field.tif"), side) }
	}
	// translated writes the same field and translates it into another
	// raster format (-of driver), removing the GeoTIFF.
	translated := func(side int, ext, driver string) func(string) (string, error) {
		return func(dir string) (string, error) {
			tif, err := writeFloatField(filepath.Join(dir, "field-src.tif"), side)
			if err != nil {
				return "", err
			}
			defer os.Remove(tif)
			src, err := godal.Open(tif)
			if err != nil {
				return "", err
			}
			defer src.Close()
			p := filepath.Join(dir, "field"+ext)
			out, err := src.Translate(p, []string{"-of", driver})
			if err != nil {
				return "", err
			}
			return p, out.Close()
		}
	}
	vector := func(n int, ext string, switches ...string) func(string) (string, error) {
		return func(dir string) (string, error) {
			p := filepath.Join(dir, "parcels"+ext)
			text := parcelsGeoJSON(n)
			if ext == ".geojson" {
				return p, os.WriteFile(p, []byte(text), 0o644)
			}
			return p, sampledata.FromGeoJSON(text, p, switches)
		}
	}
	smallFeatures, largeFeatures := z.featuresSmall, z.featuresLarge
	vnote := func(what string) string {
		return fmt.Sprintf("%s of %d (small) and %d (large) 9-vertex polygons with an integer, a real and a string field, EPSG:4326", what, smallFeatures, largeFeatures)
	}
	return []throughputFormat{
		{".tif", fmt.Sprintf("GeoTIFF → COG: Float32, tiled 256, uncompressed, %d² (small) and %d² (large), smooth field plus noise, EPSG:32633", z.rasterSmall, z.rasterLarge), raster(z.rasterSmall), raster(z.rasterLarge)},
		{".gpkg", vnote("GeoPackage → GeoParquet"), vector(smallFeatures, ".gpkg", "-f", "GPKG", "-nln", "parcels"), vector(largeFeatures, ".gpkg", "-f", "GPKG", "-nln", "parcels")},
		{".shp", vnote("Shapefile (.shp .shx .dbf .prj) → GeoParquet"), vector(smallFeatures, ".shp", "-f", "ESRI Shapefile"), vector(largeFeatures, ".shp", "-f", "ESRI Shapefile")},
		{".geojson", vnote("GeoJSON → GeoParquet"), vector(smallFeatures, ".geojson"), vector(largeFeatures, ".geojson")},
		{".kml", vnote("KML → GeoParquet"), vector(smallFeatures, ".kml", "-f", "KML", "-nln", "parcels"), vector(largeFeatures, ".kml", "-f", "KML", "-nln", "parcels")},
		{".fgb", vnote("FlatGeobuf → GeoParquet"), vector(smallFeatures, ".fgb", "-f", "FlatGeobuf", "-nln", "parcels"), vector(largeFeatures, ".fgb", "-f", "FlatGeobuf", "-nln", "parcels")},
		{".img", fmt.Sprintf("Erdas Imagine → COG: the GeoTIFF field translated (-of HFA), %d² and %d²", z.rasterSmall, z.rasterLarge), translated(z.rasterSmall, ".img", "HFA"), translated(z.rasterLarge, ".img", "HFA")},
		{".asc", fmt.Sprintf("Arc/Info ASCII grid (.asc + .prj) → COG: the GeoTIFF field translated (-of AAIGrid), %d² and %d²", z.rasterSmall, z.asciiLarge), translated(z.rasterSmall, ".asc", "AAIGrid"), translated(z.asciiLarge, ".asc", "AAIGrid")},
	}
}

// writeFloatField writes a side × side Float32 GeoTIFF like benchRaster's.
func writeFloatField(p string, side int) (string, error) {
	ds, err := godal.Create(godal.GTiff, p, 1, godal.Float32, side, side,
		godal.CreationOption("TILED=YES", "COMPRESS=NONE", "BLOCKXSIZE=256", "BLOCKYSIZE=256"))
	if err != nil {
		return "", err
	}
	wkt, err := sampledata.WKT(32633)
	if err != nil {
		ds.Close()
		return "", err
	}
	if err := ds.SetProjection(wkt); err != nil {
		ds.Close()
		return "", err
	}
	if err := ds.SetGeoTransform([6]float64{500000, 10, 0, 5200000, 0, -10}); err != nil {
		ds.Close()
		return "", err
	}
	band := ds.Bands()[0]
	if err := band.SetNoData(-9999); err != nil {
		ds.Close()
		return "", err
	}
	buf := make([]float32, side)
	seed := uint32(1)
	for y := 0; y < side; y++ {
		for x := 0; x < side; x++ {
			seed = seed*1664525 + 1013904223
			buf[x] = float32(800 + 300*math.Sin(float64(x)/410)*math.Cos(float64(y)/370) + 0.05*float64(y) + float64(seed>>24)/64)
		}
		if err := band.Write(0, y, buf, side, 1); err != nil {
			ds.Close()
			return "", err
		}
	}
	return p, ds.Close()
}

// parcelsGeoJSON is n small 9-vertex polygons (8 distinct corners) with
// three attributes, deterministic.
func parcelsGeoJSON(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		x := -10 + 40*math.Mod(float64(i)*0.6180339887, 1)
		y := 35 + 30*math.Mod(float64(i)*0.7548776662, 1)
		var ring []string
		for k := 0; k <= 8; k++ {
			a := 2 * math.Pi * float64(k%8) / 8
			ring = append(ring, fmt.Sprintf("[%.6f,%.6f]", x+0.001*math.Cos(a), y+0.001*math.Sin(a)))
		}
		fmt.Fprintf(&sb, `{"type":"Feature","properties":{"parcel":%d,"area":%.3f,"owner":"owner %d"},"geometry":{"type":"Polygon","coordinates":[[%s]]}}`,
			i, float64(i%977)/7, i%1000, strings.Join(ring, ","))
	}
	sb.WriteString("]}")
	return sb.String()
}
