package budget

// Vector memory budget: feature and vertex counts bounded against the
// memory a conversion may use (Recipe.MaxMemory, already lowered to the
// machine's by Effective).
//
// The GeoParquet writer (internal/geoparquet) holds every row of a layer in
// memory before writing, to sort the rows along a Hilbert curve: its memory
// grows with the feature count and with the bytes of geometry (WKB) and
// text it keeps. FlatGeobuf output streams through GDAL, which keeps one
// spatial-index entry per feature and one geometry at a time. The cost
// model below is the measured peak Go heap (docs/fidelity.md, Budgets),
// rounded up:
//
//	GeoParquet  featureCost + fieldCost × fields per feature, plus
//	            payloadCost per byte of WKB, text and binary held
//	FlatGeobuf  fgbFeatureCost per feature, plus payloadCost per byte of
//	            the largest geometry
//
// The layer must fit in vectorShare of the budget; the rest is left to
// GDAL's reader, the Go runtime and the process itself. The declared
// feature count is checked before anything is read (where the driver knows
// it without a scan: Shapefile, GeoPackage, FlatGeobuf, GeoJSON after its
// first pass), and a running total while the features are read, so that a
// layer of few but huge geometries is refused before the process runs out
// of memory.

import (
	"fmt"
	"math"
	"strconv"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

const (
	// featureCost is what the GeoParquet writer holds per row besides its
	// payload: WKB offset (8), Hilbert key and row index (12), slices grown
	// by appending and garbage not yet collected. Measured: 1,000,000
	// points with an int64 and a short string peak at 250 bytes a row,
	// 120 of them payload and fields (BenchmarkWrite1M).
	featureCost = 192
	// fieldCost is one attribute of one row: validity (1), value (8), text
	// offset (8), with growth and GC headroom.
	fieldCost = 32
	// payloadCost is the heap per byte of WKB or text held. Measured: 3.5
	// (BenchmarkWritePolygons: 50,000 polygons of 200 vertices).
	payloadCost = 4
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
	holdsAll   bool  // every row is held (GeoParquet), or one at a time
	budget     int64 // vectorShare of maxMemory; 0 = no budget
	maxMemory  int64

	features, payload, largest int64
}

// NewVectorMeter is the meter of a layer with fields attribute fields
// converted under r.
func NewVectorMeter(layer string, fields int, r recipe.Recipe) *VectorMeter {
	m := &VectorMeter{layer: layer, format: r.VectorFormat, maxMemory: r.MaxMemory}
	if r.MaxMemory > 0 {
		m.budget = r.MaxMemory / vectorShareDen * vectorShareNum
	}
	if r.VectorFormat == recipe.FormatFlatGeobuf {
		m.perFeature = fgbFeatureCost
	} else {
		m.perFeature = featureCost + fieldCost*int64(fields)
		m.holdsAll = true
	}
	return m
}

// estimate is the memory held for features features and the payload seen.
func (m *VectorMeter) estimate(features int64) int64 {
	held := m.largest
	if m.holdsAll {
		held = m.payload
	}
	return satAdd(satMul(features, m.perFeature), satMul(held, payloadCost))
}

// Declared refuses a layer whose declared feature count alone is over the
// budget.
func (m *VectorMeter) Declared(n int64) error {
	if m.budget <= 0 || n <= 0 || m.estimate(n) <= m.budget {
		return nil
	}
	most := m.budget / m.perFeature
	return fault.Data(fault.BudgetExceeded,
		"layer %q declares %d features; converting it to %s holds about %d bytes per feature in memory, %s in all, over the memory budget of %s (%d/%d of max_memory %s): split the layer into files of at most %d features each, or give the conversion more memory (max_memory, Lambda memory size); a streaming writer will lift this limit",
		m.layer, n, m.format, m.perFeature, FormatBytes(m.estimate(n)), FormatBytes(m.budget),
		vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory), most)
}

// Add counts one feature read and its payload (WKB bytes, and for the
// GeoParquet writer text and binary bytes too); it refuses the layer as
// soon as the running total is over the budget.
func (m *VectorMeter) Add(payload int64) error {
	m.features++
	m.payload += payload
	m.largest = max(m.largest, payload)
	if m.budget <= 0 || m.estimate(m.features) <= m.budget {
		return nil
	}
	if !m.holdsAll {
		return fault.Data(fault.BudgetExceeded,
			"layer %q: feature %d has a geometry of %s (WKB); converting it needs about %s, over the memory budget of %s (%d/%d of max_memory %s): split or simplify that geometry, or give the conversion more memory (max_memory, Lambda memory size)",
			m.layer, m.features, FormatBytes(payload), FormatBytes(m.estimate(m.features)), FormatBytes(m.budget),
			vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory))
	}
	return fault.Data(fault.BudgetExceeded,
		"layer %q: the first %d features hold %s of geometry (WKB) and text (the largest feature %s); converting them to %s needs about %s in memory, over the memory budget of %s (%d/%d of max_memory %s), and the layer is not finished: split the layer into smaller files or simplify its largest geometries, or give the conversion more memory (max_memory, Lambda memory size); a streaming writer will lift this limit",
		m.layer, m.features, FormatBytes(m.payload), FormatBytes(m.largest), m.format, FormatBytes(m.estimate(m.features)),
		FormatBytes(m.budget), vectorShareNum, vectorShareDen, FormatBytes(m.maxMemory))
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
