package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/geomigrate/geomigrate/internal/formats"
)

//go:embed throughput.json
var throughputJSON []byte

// Rate is the measured conversion speed of one source format: a fixed
// cost per file and a rate per byte, in CPU time of one core.
type Rate struct {
	MBPerSecond float64 `json:"mb_per_s"`
	OverheadMS  float64 `json:"overhead_ms"`
	Output      string  `json:"output"`
	Note        string  `json:"note"`
	// SmallMS and LargeMS are the CPU times of the two measured sources,
	// SmallWallMS and LargeWallMS their wall times on the shared machine.
	SmallBytes  int64   `json:"small_bytes"`
	SmallMS     float64 `json:"small_ms"`
	SmallWallMS float64 `json:"small_wall_ms"`
	LargeBytes  int64   `json:"large_bytes"`
	LargeMS     float64 `json:"large_ms"`
	LargeWallMS float64 `json:"large_wall_ms"`
	// OutputRatio is output bytes over source bytes (the large source).
	OutputRatio float64 `json:"output_ratio"`
	// RangeGetsPerFile and RangeGetsPerMB: the reads GDAL makes of such a
	// source read by range, measured (Convert's read-ahead serves them
	// from far fewer GETs: Settings.SourceReadWhole); zero for formats
	// read by download.
	RangeGetsPerFile float64 `json:"range_gets_per_file,omitempty"`
	RangeGetsPerMB   float64 `json:"range_gets_per_mb,omitempty"`
	SmallRangeGets   int64   `json:"small_range_gets,omitempty"`
	LargeRangeGets   int64   `json:"large_range_gets,omitempty"`
}

// Seconds is the time one file of n bytes takes to convert on one vCPU.
func (r Rate) Seconds(n int64) float64 {
	return r.OverheadMS/1000 + float64(n)/1e6/r.MBPerSecond
}

// Throughput is the measured table (throughput.json), written by
// internal/gdal TestMeasureThroughput (scripts/measure-throughput.sh).
type Throughput struct {
	MeasuredAt string `json:"measured_at"`
	Machine    string `json:"machine"`
	GDAL       string `json:"gdal"`
	GoVersion  string `json:"go"`
	Threads    int    `json:"threads"`
	// LoadAverage is the machine's load while measuring (/proc/loadavg).
	LoadAverage string          `json:"load_average"`
	Method      string          `json:"method"`
	Command     string          `json:"command"`
	Formats     map[string]Rate `json:"formats"`
}

// DefaultThroughput is the embedded table.
func DefaultThroughput() Throughput {
	t, err := ReadThroughput(bytes.NewReader(throughputJSON))
	if err != nil {
		panic("cost: embedded throughput.json: " + err.Error()) // a build defect, caught by the tests
	}
	return t
}

// ReadThroughput decodes a throughput table and checks every rate is usable.
func ReadThroughput(r io.Reader) (Throughput, error) {
	var t Throughput
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Throughput{}, fmt.Errorf("cost.ReadThroughput: %w", err)
	}
	for ext, r := range t.Formats {
		if r.MBPerSecond <= 0 || r.OverheadMS < 0 {
			return Throughput{}, fmt.Errorf("cost.ReadThroughput: %s: rate %g MB/s, overhead %g ms", ext, r.MBPerSecond, r.OverheadMS)
		}
	}
	if _, ok := t.Formats[rasterStandIn]; !ok {
		return Throughput{}, fmt.Errorf("cost.ReadThroughput: no %s row (the stand-in for unmeasured rasters)", rasterStandIn)
	}
	if _, ok := t.Formats[vectorStandIn]; !ok {
		return Throughput{}, fmt.Errorf("cost.ReadThroughput: no %s row (the stand-in for unmeasured vectors)", vectorStandIn)
	}
	return t, nil
}

// The measured formats that stand in for unmeasured ones of their kind.
const (
	rasterStandIn = ".tif"
	vectorStandIn = ".gpkg"
)

// RateFor is the rate of a source format (an extension as formats.Lookup
// gives it: ".tif", ".shp" …) and the measured row it came from: the
// format's own, or the raster or vector stand-in when it was not measured,
// by the kind formats.PredictKind guesses (as output naming does: an
// archive by what it holds, an unknown extension as a raster).
func (t Throughput) RateFor(ext string) (Rate, string) {
	if r, ok := t.Formats[ext]; ok {
		return r, ext
	}
	kind := formats.PredictKind("x" + ext)
	if kind == formats.Raster {
		return t.Formats[rasterStandIn], rasterStandIn
	}
	return t.Formats[vectorStandIn], vectorStandIn
}

// Measured lists the measured formats, sorted.
func (t Throughput) Measured() []string {
	var out []string
	for ext := range t.Formats {
		out = append(out, ext)
	}
	sort.Strings(out)
	return out
}
