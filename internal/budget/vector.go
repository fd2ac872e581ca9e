package budget

// Vector memory budget: feature and vertex counts bounded against the
// memory a conversion may use (Recipe.MaxMemory, already lowered to the
// machine's by Effective).
//
// The GeoParquet writer (internal/geoparquet) holds at most SpillBytes of
// rows; past that it sorts externally through temporary files (decision
// 0024), so its memory does not grow with the layer. FlatGeobuf output
// streams through GDAL, which keeps one spatial-index entry per feature
// and one geometry at a time. The cost model below is the measured peak Go
// heap (docs/fidelity.md, Budgets), rounded up:
//
//	GeoParquet  payloadCost per byte of SpillBytes, plus payloadCost per
//	            byte of the largest feature (WKB, text and binary)
//	FlatGeobuf  fgbFeatureCost per feature, plus payloadCost per byte of
//	            the largest geometry
//
// The layer must fit in vectorShare of the budget; the rest is left to
// GDAL's reader, the Go runtime and the process itself. The declared
// feature count is checked before anything is read (where the driver knows
// it without a scan: Shapefile, GeoPackage, FlatGeobuf, GeoJSON after its
// first pass), and a running total while the features are read, so that a
// layer of many features (FlatGeobuf) or one huge geometry is refused
// before the process runs out of memory.

import (
	"fmt"
	"math"
	"strconv"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

const (
	// payloadCost is the heap per byte of WKB or text held. Measured: 3.5
	// (BenchmarkWritePolygons: 50,000 polygons of 200 vertices).
	payloadCost = 4
	// spillShare: the GeoParquet writer's rows in memory may take
	// 1/spillShare of the budget (times payloadCost: slice growth, the
	// sort's keys, garbage), and never more than maxSpillBytes: past a few
	// tens of MiB, bigger chunks only mean fewer temporary files.
	spillShare    = 16
	maxSpillBytes = 64 << 20
	minSpillBytes = 1 << 20
	// fgbFeatureCost is GDAL's FlatGeobuf writer per feature: an index
	// entry (bounding box, offset, size) kept for the packed R-tree.
	// Measured: 209 bytes a feature (peak RSS of ogr2ogr-like
	// VectorTranslate of 1,000,000 points, GeoPackage to FlatGeobuf).
	fgbFeatureCost = 256
	// vectorShareNum/vectorShareDen of the budget is for the held rows.
	vectorShareNum, vectorShareDen = 3, 4
	// geoJSONObjectShare: GDAL parses each GeoJSON feature whole with
	// json-c and refuses one whose parsed size, by its own estimate,
	// passes OGR_GEOJSON_MAX_OBJ_SIZE (MB, default 200). Measured, the
	// estimate is ~8 bytes per byte of text and the real peak ~3 times
	// the estimate (a polygon of 1,000,000 vertices, 21.5 MB of text,
	// peaks at 518 MB): the limit is 1/6 of the budget (a peak of about
	// half of it), never above GDAL's default.
	geoJSONObjectShare = 6
	geoJSONObjectMaxMB = 200
)

// VectorMeter totals what converting one layer holds in memory.
type VectorMeter struct {
	layer      string
	format     string // recipe.FormatGeoParquet or FormatFlatGeobuf
	perFeature int64
	fixed      int64 // held whatever the layer (the GeoParquet writer's rows before a spill)
	budget     int64 // vectorShare of maxMemory; 0 = no budget
	maxMemory  int64

	features, largest int64
}

// SpillBytes is how much of a layer's rows the GeoParquet writer holds
// before it spills them to temporary files, for a memory budget
// (maxMemory <= 0: none known).
func SpillBytes(maxMemory int64) int64 {
	if maxMemory <= 0 {
		return maxSpillBytes
	}
	return min(maxSpillBytes, max(minSpillBytes, maxMemory/spillShare))
}

// NewVectorMeter is the meter of a layer converted under r.
func NewVectorMeter(layer string, r recipe.Recipe) *VectorMeter {
	m := &VectorMeter{layer: layer, format: r.VectorFormat, maxMemory: r.MaxMemory}
	if r.MaxMemory > 0 {
		m.budget = r.MaxMemory / vectorShareDen * vectorShareNum
	}
	if r.VectorFormat == recipe.FormatFlatGeobuf {
		m.perFeature = fgbFeatureCost
	} else {
		m.fixed = satMul(SpillBytes(r.MaxMemory), payloadCost)
	}
	return m
}

// estimate is the memory held for features features and the largest
// feature seen.
func (m *VectorMeter) estimate(features int64) int64 {
	return satAdd(m.fixed, satAdd(satMul(features, m.perFeature), satMul(m.largest, payloadCost)))
}

// Declared refuses a layer whose declared feature count alone is over the
// budget (FlatGeobuf: GeoParquet holds no more for more features).
func (m *VectorMeter) Declared(n int64) error {
	if m.budget <= 0 || n <= 0 || m.perFeature == 0 || m.estimate(n) <= m.budget {
		return nil
	}
	most := m.budget / m.perFeature
	return fault.Data(fault.BudgetExceeded,
		"layer %q declares %d features; converting it to %s holds about %d bytes per feature in memory, %s in all, over the memory budget of %s (%d/%d of max_memory %s): split the layer into files of at most %d features each, convert it to GeoParquet (which spills to disk), or give the conversion more memory (max_memory, Lambda memory size)",
		m.layer, n, m.format, m.perFeature, FormatBytes(m.estimate(n)), FormatBytes(m.budget),
		vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory), most)
}

// MaxPayload is the largest payload the next Add accepts (-1: none,
// math.MaxInt64 without a budget): a reader may skip work on a feature
// that will be refused (the validation of a huge geometry).
func (m *VectorMeter) MaxPayload() int64 {
	if m.budget <= 0 {
		return math.MaxInt64
	}
	room := m.budget - satAdd(m.fixed, satMul(m.features+1, m.perFeature))
	if room < 0 || m.largest*payloadCost > room {
		return -1
	}
	return room / payloadCost
}

// Add counts one feature read and its payload (WKB bytes, and for the
// GeoParquet writer text and binary bytes too); it refuses the layer as
// soon as the estimate is over the budget.
func (m *VectorMeter) Add(payload int64) error {
	m.features++
	m.largest = max(m.largest, payload)
	if m.budget <= 0 || m.estimate(m.features) <= m.budget {
		return nil
	}
	if m.perFeature > 0 && m.largest*payloadCost <= m.budget/2 {
		return fault.Data(fault.BudgetExceeded,
			"layer %q: %d features read so far; converting them to %s holds about %d bytes per feature in memory, %s in all, over the memory budget of %s (%d/%d of max_memory %s), and the layer is not finished: split the layer into smaller files, convert it to GeoParquet (which spills to disk), or give the conversion more memory (max_memory, Lambda memory size)",
			m.layer, m.features, m.format, m.perFeature, FormatBytes(m.estimate(m.features)), FormatBytes(m.budget),
			vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory))
	}
	return fault.Data(fault.BudgetExceeded,
		"layer %q: feature %d holds %s of geometry (WKB)%s; converting it to %s needs about %s, over the memory budget of %s (%d/%d of max_memory %s): split or simplify that geometry, or give the conversion more memory (max_memory, Lambda memory size)",
		m.layer, m.features, FormatBytes(payload), m.textToo(), m.format, FormatBytes(m.estimate(m.features)), FormatBytes(m.budget),
		vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory))
}

// textToo names what the payload counts besides geometry.
func (m *VectorMeter) textToo() string {
	if m.perFeature == 0 {
		return " and text"
	}
	return ""
}

// GeoJSONObjectLimit is the OGR_GEOJSON_MAX_OBJ_SIZE (MB) for a budget
// ("" for none): GDAL refuses a GeoJSON feature larger than that before parsing it.
func GeoJSONObjectLimit(maxMemory int64) string {
	if maxMemory <= 0 {
		return ""
	}
	return strconv.FormatInt(min(geoJSONObjectMaxMB, max(1, maxMemory/geoJSONObjectShare>>20)), 10)
}

// FormatBytes writes n bytes in KiB or MiB, for messages.
func FormatBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func satMul(a, b int64) int64 {
	if a > 0 && b > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
