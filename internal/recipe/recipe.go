// Package recipe is the domain of conversion: what a conversion is asked to
// produce (Recipe), what it produces (Output), the Engine that does the work,
// and how outputs are named (DestKey). It is pure Go: the GDAL-backed Engine
// lives in internal/gdal, the only cgo package.
package recipe

// Size: the Recipe value's contract: its fields, defaults, validation and canonical hash.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// Output formats.
const (
	FormatCOG        = "COG"
	FormatGeoParquet = "GeoParquet"
	FormatFlatGeobuf = "FlatGeobuf"
	FormatParquet    = "Parquet"
)

// Overview resampling policies. ResamplingAuto picks nearest for
// categorical rasters and average for everything else
// (OverviewResamplingFor).
const (
	ResamplingAuto     = "auto"
	ResamplingNearest  = "nearest"
	ResamplingAverage  = "average"
	ResamplingBilinear = "bilinear"
	ResamplingCubic    = "cubic"
	ResamplingMode     = "mode"
)

// OverviewResamplings are the overview resampling names a recipe takes:
// auto and the names of GDAL's overview builder (lower case, as rio-cogeo
// and gdaladdo -r spell them). The engine checks that its GDAL builds
// overviews with the one a recipe names (Capabilities.Resamplings).
var OverviewResamplings = []string{ResamplingAuto, ResamplingNearest, ResamplingAverage, ResamplingBilinear,
	ResamplingCubic, "cubicspline", "lanczos", ResamplingMode, "rms", "gauss", "average_magphase"}

// Geometry policies: GeometryKeep (the default) writes invalid geometries
// as they are, counted in a warning; GeometryRepair makes them valid
// without changing the layer's geometry type (counted and reported in
// Output.Stats); GeometryStrict refuses the source with
// fault.InvalidGeometry.
const (
	GeometryKeep   = "keep"
	GeometryRepair = "repair"
	GeometryStrict = "strict"
)

// Curve policies: CurvesRefuse (the default) refuses a layer with curve
// geometries for GeoParquet output (fault.CurveGeometry), whose WKB has no
// curves; CurvesLinearize approximates every arc by segments of at most
// CurveStepDegrees (GDAL's OGR_ARC_STEPSIZE meaning). FlatGeobuf output
// keeps curves under either.
const (
	CurvesRefuse    = "refuse"
	CurvesLinearize = "linearize"
	// DefaultCurveStepDegrees is GDAL's own OGR_ARC_STEPSIZE default.
	DefaultCurveStepDegrees = 4.0
)

// What becomes of a layer without a geometry column (an attribute
// table): AttributeTablesRefuse refuses its source with fault.NoGeometry,
// AttributeTablesParquet writes it as plain Parquet (FormatParquet).
const (
	AttributeTablesRefuse  = "refuse"
	AttributeTablesParquet = "parquet"
)

// Defaults.
const (
	DefaultBlockSize = 512
	// DefaultZSTDLevel is 3, libzstd's own default. Measured on small
	// rasters through Engine.Convert (docs/decisions/0110): level 9, GDAL's
	// default, spent about twice the CPU for 0.5–6 % smaller files (libtiff
	// streams each tile without its size, so zstd sizes its tables for an
	// unknown input and clears them per tile); level 1 lost up to 10 % on
	// Int16 data.
	DefaultZSTDLevel    = 3
	DefaultRowGroupRows = 65536
	// DefaultDeflateLevel is GDAL's own default for DEFLATE.
	DefaultDeflateLevel = 6
	DefaultCompression  = "ZSTD"
	// DefaultQuality is GDAL's own QUALITY default for JPEG and WEBP.
	DefaultQuality = 75
	// OverviewsNone is Recipe.OverviewLevels for a COG without overviews.
	OverviewsNone = -1
	// Budgets: generous for a 10 GB Lambda /tmp, small enough that a
	// declared pixel bomb is refused before any pixel is read.
	DefaultMaxBytes    int64 = 5 << 30       // 5 GiB of source files
	DefaultMaxPixels   int64 = 4_000_000_000 // 4 Gpx (width × height × bands)
	DefaultMaxFeatures int64 = 50_000_000
	// DefaultMaxMemory is the memory a conversion may plan for when the
	// machine does not say less (Lambda's setting, a cgroup limit, RAM):
	// the engine lowers it to what the machine has.
	DefaultMaxMemory int64 = 3 << 30
)

// Recipe is what a conversion is asked to produce. The fields that change
// output bytes enter Hash; the budgets decide only whether a source is
// refused, so they do not.
type Recipe struct {
	RasterFormat       string `json:"raster_format"`       // "COG"
	VectorFormat       string `json:"vector_format"`       // "GeoParquet" | "FlatGeobuf"
	BlockSize          int    `json:"block_size"`          // COG tile size, 512
	ZSTDLevel          int    `json:"zstd_level"`          // 1..22, default 3
	OverviewResampling string `json:"overview_resampling"` // OverviewResamplings
	GeometryPolicy     string `json:"geometry_policy"`     // "keep" | "repair" | "strict"
	RowGroupRows       int    `json:"row_group_rows"`      // GeoParquet rows per row group, 65536

	// Raster settings a recipe file adds (internal/recipe/file.go); each
	// enters Hash only when it differs from its default, so recipes from
	// before they existed keep their hash.
	Compression  string `json:"compression,omitempty"`   // COG COMPRESS: ZSTD (default) or another of Compressions
	DeflateLevel int    `json:"deflate_level,omitempty"` // DEFLATE and LERC_DEFLATE LEVEL, 1..12, default 6
	Predictor    string `json:"predictor,omitempty"`     // auto (default), none, standard, floating_point
	// Quality (1..100) and MinPSNR are the lossy compressions' (JPEG,
	// WEBP): GDAL's QUALITY, and the least peak signal-to-noise ratio, in
	// dB, every band of an output must keep against its source; a lossy
	// compression is refused without it (outputs are lossless by
	// default; docs/decisions/0104).
	Quality int     `json:"quality,omitempty"`
	MinPSNR float64 `json:"min_psnr_db,omitempty"`
	// OverviewLevels: 0 = auto (halving down to one tile), OverviewsNone,
	// or how many levels (OVERVIEW_COUNT).
	OverviewLevels int `json:"overview_levels,omitempty"`
	// NoData is assigned to every band (-a_nodata): canonical float text,
	// "" keeps the source's.
	NoData string `json:"nodata,omitempty"`
	// TargetCRS: "" keeps the source CRS; AUTHORITY:CODE or WebOptimized
	// reprojects through GDAL's warper.
	TargetCRS string `json:"target_crs,omitempty"`
	// CreationOptions are extra COG creation options, KEY=VALUE sorted by
	// key (CreationOption checks each; the engine checks them against the
	// COG driver's list).
	CreationOptions []string `json:"creation_options,omitempty"`
	// ParquetCompression is the GeoParquet column codec: zstd (default),
	// snappy, gzip, brotli, lz4, none.
	ParquetCompression string `json:"parquet_compression,omitempty"`
	// Curves: CurvesRefuse (default) or CurvesLinearize, with the largest
	// angle an arc segment may span, in degrees.
	Curves           string  `json:"curves,omitempty"`
	CurveStepDegrees float64 `json:"curve_step_degrees,omitempty"`

	// AssignCRS (AUTHORITY:CODE) is given to a source, or a layer, that
	// declares no CRS; "" assigns none.
	AssignCRS string `json:"assign_crs,omitempty"`
	// Datetime (RFC 3339, UTC) is the STAC datetime of the outputs, over
	// what the file declares and the source's Last-Modified; "" leaves
	// those.
	Datetime string `json:"datetime,omitempty"`
	// CSVGeometry (CSVGeometryWKT or CSVGeometryXY) and its columns make a
	// CSV a vector source; "" leaves CSV sources refused.
	CSVGeometry  string `json:"csv_geometry,omitempty"`
	CSVWKTColumn string `json:"csv_wkt_column,omitempty"`
	CSVXColumn   string `json:"csv_x_column,omitempty"`
	CSVYColumn   string `json:"csv_y_column,omitempty"`

	// AttributeTables: AttributeTablesRefuse or AttributeTablesParquet;
	// "" is refuse, and is left empty by WithDefaults so that a job's
	// recipe JSON and hash stay as they were for recipes without it.
	AttributeTables string `json:"attribute_tables,omitempty"`

	// level is a recipe file's "level" until the codec is settled.
	level *int

	MaxBytes    int64 `json:"max_bytes"`    // source size (with sidecars)
	MaxPixels   int64 `json:"max_pixels"`   // declared width × height × bands
	MaxFeatures int64 `json:"max_features"` // features over all layers
	// MaxMemory bounds every declared size (bands, tile and strip sizes)
	// of a source: one block may take 1/8 of it.
	MaxMemory int64 `json:"max_memory"`

	EngineVersion string `json:"engine_version"` // GDAL release, from Engine.Version()
	ToolVersion   string `json:"tool_version"`   // geomigrate version

	// SourceSHA256 and SourceFingerprint identify the source being
	// converted; the engine writes them into the output with the recipe
	// hash and versions (Lineage). They belong to the job, not to the
	// recipe: they are not part of Hash and not carried in the job's JSON
	// (Convert sets them from the job just before converting).
	SourceSHA256      string `json:"-"`
	SourceFingerprint string `json:"-"`
}

// OverviewResamplingFor is the resampling a raster's overviews are built
// with: the recipe's, or for ResamplingAuto nearest on categorical data
// and average on continuous data. Average (like any interpolating method)
// invents values between classes, so a land-cover grid's overviews would
// hold classes that do not exist.
func (r Recipe) OverviewResamplingFor(categorical bool) string {
	res := r.WithDefaults().OverviewResampling
	if res != ResamplingAuto {
		return res
	}
	if categorical {
		return ResamplingNearest
	}
	return ResamplingAverage
}

// Lineage is what an output of this recipe records about its making.
func (r Recipe) Lineage() Lineage { return LineageOf(r, r.SourceSHA256, r.SourceFingerprint) }

// DefaultRecipe is the recipe of the design: COG and GeoParquet.
func DefaultRecipe() Recipe { return Recipe{}.WithDefaults() }

// WithDefaults fills every zero field with its default, so that a zero
// field and its explicit default hash the same.
func (r Recipe) WithDefaults() Recipe {
	if r.RasterFormat == "" {
		r.RasterFormat = FormatCOG
	}
	if r.VectorFormat == "" {
		r.VectorFormat = FormatGeoParquet
	}
	if r.BlockSize == 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.ZSTDLevel == 0 {
		r.ZSTDLevel = DefaultZSTDLevel
	}
	if r.OverviewResampling == "" {
		r.OverviewResampling = ResamplingAuto
	}
	if r.GeometryPolicy == "" {
		r.GeometryPolicy = GeometryKeep
	}
	if r.Curves == "" {
		r.Curves = CurvesRefuse
	}
	if r.CurveStepDegrees == 0 {
		r.CurveStepDegrees = DefaultCurveStepDegrees
	}
	if r.RowGroupRows == 0 {
		r.RowGroupRows = DefaultRowGroupRows
	}
	if r.Compression == "" {
		r.Compression = DefaultCompression
	}
	if r.Quality == 0 && r.Lossy() {
		r.Quality = DefaultQuality
	}
	if r.DeflateLevel == 0 {
		r.DeflateLevel = DefaultDeflateLevel
	}
	if r.Predictor == "" {
		r.Predictor = "auto"
	}
	if r.ParquetCompression == "" {
		r.ParquetCompression = "zstd"
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = DefaultMaxBytes
	}
	if r.MaxPixels == 0 {
		r.MaxPixels = DefaultMaxPixels
	}
	if r.MaxFeatures == 0 {
		r.MaxFeatures = DefaultMaxFeatures
	}
	if r.MaxMemory == 0 {
		r.MaxMemory = DefaultMaxMemory
	}
	return r
}

// Validate checks a recipe (after WithDefaults). A bad recipe is a
// misconfiguration of the worker, not a fault of the data: it is a
// *fault.SystemicError. The checks run in a fixed order and the first
// refusal is reported.
func (r Recipe) Validate() error {
	r = r.WithDefaults()
	for _, check := range []func() error{
		r.checkFormats, r.checkTiling, r.checkGeometry, r.checkCompression, r.checkCreation,
		r.checkParquet, r.checkMetadata, r.checkTables, r.checkBudgets,
	} {
		if err := check(); err != nil {
			return fault.Systemic("recipe.Recipe", err)
		}
	}
	return nil
}

func (r Recipe) checkFormats() error {
	if r.RasterFormat != FormatCOG {
		return fmt.Errorf("raster format %q: only %q is supported", r.RasterFormat, FormatCOG)
	}
	if r.VectorFormat != FormatGeoParquet && r.VectorFormat != FormatFlatGeobuf {
		return fmt.Errorf("vector format %q: want %q or %q", r.VectorFormat, FormatGeoParquet, FormatFlatGeobuf)
	}
	return nil
}

func (r Recipe) checkTiling() error {
	if r.BlockSize < 64 || r.BlockSize > 4096 || r.BlockSize%16 != 0 {
		return fmt.Errorf("block size %d: want a multiple of 16 in [64, 4096]", r.BlockSize)
	}
	if r.ZSTDLevel < 1 || r.ZSTDLevel > 22 {
		return fmt.Errorf("zstd level %d: want 1..22", r.ZSTDLevel)
	}
	if !slices.Contains(OverviewResamplings, r.OverviewResampling) {
		return fmt.Errorf("overview resampling %q: want one of %s", r.OverviewResampling, strings.Join(OverviewResamplings, ", "))
	}
	return nil
}

func (r Recipe) checkGeometry() error {
	if r.GeometryPolicy != GeometryKeep && r.GeometryPolicy != GeometryRepair && r.GeometryPolicy != GeometryStrict {
		return fmt.Errorf("geometry policy %q: want %q, %q or %q", r.GeometryPolicy, GeometryKeep, GeometryRepair, GeometryStrict)
	}
	if r.Curves != CurvesRefuse && r.Curves != CurvesLinearize {
		return fmt.Errorf("curves %q: want %q or %q", r.Curves, CurvesRefuse, CurvesLinearize)
	}
	if !(r.CurveStepDegrees > 0 && r.CurveStepDegrees <= 90) {
		return fmt.Errorf("curve step %v degrees: want more than 0 and at most 90", r.CurveStepDegrees)
	}
	return nil
}

func (r Recipe) checkCompression() error {
	if !slices.Contains(Compressions, r.Compression) {
		return fmt.Errorf("compression %q: want one of %s", r.Compression, strings.Join(Compressions, ", "))
	}
	if err := r.checkLossy(); err != nil {
		return err
	}
	if r.DeflateLevel < 1 || r.DeflateLevel > 12 {
		return fmt.Errorf("deflate level %d: want 1..12", r.DeflateLevel)
	}
	if !slices.Contains(Predictors, r.Predictor) {
		return fmt.Errorf("predictor %q: want one of %s", r.Predictor, strings.Join(Predictors, ", "))
	}
	if r.OverviewLevels < OverviewsNone || r.OverviewLevels > 30 {
		return fmt.Errorf("overview levels %d", r.OverviewLevels)
	}
	return nil
}

// checkCreation checks what reaches the COG driver as written: nodata,
// the target CRS and raw creation options.
func (r Recipe) checkCreation() error {
	if r.NoData != "" {
		if nd, err := parseNoData(r.NoData); err != nil || nd != r.NoData {
			return fmt.Errorf("nodata %q: want a number, nan, inf or -inf", r.NoData)
		}
	}
	if r.TargetCRS != "" {
		if crs, err := parseTargetCRS(r.TargetCRS); err != nil || crs != r.TargetCRS {
			return fmt.Errorf("target CRS %q: want AUTHORITY:CODE or %s", r.TargetCRS, WebOptimized)
		}
	}
	for _, kv := range r.CreationOptions {
		if _, err := CreationOption(kv); err != nil {
			return err
		}
	}
	return nil
}

func (r Recipe) checkParquet() error {
	if !slices.Contains(ParquetCompressions, r.ParquetCompression) {
		return fmt.Errorf("GeoParquet compression %q: want one of %s", r.ParquetCompression, strings.Join(ParquetCompressions, ", "))
	}
	if r.RowGroupRows < 1 {
		return fmt.Errorf("row group rows %d", r.RowGroupRows)
	}
	return nil
}

func (r Recipe) checkMetadata() error {
	if crs, err := parseAssignCRS(r.AssignCRS); err != nil || crs != r.AssignCRS {
		return fmt.Errorf("assign CRS %q: want AUTHORITY:CODE", r.AssignCRS)
	}
	if r.Datetime != "" {
		if d, err := ParseDatetime(r.Datetime); err != nil || d != r.Datetime {
			return fmt.Errorf("datetime %q: want an RFC 3339 time in UTC such as 2019-06-01T00:00:00Z", r.Datetime)
		}
	}
	return nil
}

// checkTables checks how tables without a geometry column are read:
// CSV geometry columns and attribute-only tables.
func (r Recipe) checkTables() error {
	switch r.CSVGeometry {
	case "":
	case CSVGeometryWKT:
		if !csvColumnOK(r.CSVWKTColumn) {
			return fmt.Errorf("csv geometry wkt needs wkt_column (the column holding WKT)")
		}
	case CSVGeometryXY:
		if !csvColumnOK(r.CSVXColumn) || !csvColumnOK(r.CSVYColumn) {
			return fmt.Errorf("csv geometry xy needs x_column and y_column")
		}
	default:
		return fmt.Errorf("csv geometry %q: want %s or %s", r.CSVGeometry, CSVGeometryWKT, CSVGeometryXY)
	}
	if r.AttributeTables != "" && r.AttributeTables != AttributeTablesRefuse && r.AttributeTables != AttributeTablesParquet {
		return fmt.Errorf("attribute tables %q: want %q or %q", r.AttributeTables, AttributeTablesRefuse, AttributeTablesParquet)
	}
	return nil
}

func (r Recipe) checkBudgets() error {
	if r.MaxBytes < 0 || r.MaxPixels < 0 || r.MaxFeatures < 0 || r.MaxMemory < 0 {
		return errors.New("negative budget")
	}
	return nil
}

// lossyError is a refusal about a lossy choice (File.check points it at
// the compression that makes it).
type lossyError struct{ msg string }

func (e lossyError) Error() string { return e.msg }

func lossyErrorf(format string, args ...any) error {
	return lossyError{fmt.Sprintf(format, args...)}
}

// Lossy reports whether r's compression is lossy (JPEG, WEBP).
func (r Recipe) Lossy() bool {
	c := r.Compression
	if c == "" {
		c = DefaultCompression
	}
	return slices.Contains(LossyCompressions, c)
}

// checkLossy: a lossy compression only with a stated threshold, and the
// lossy settings only with a lossy compression.
func (r Recipe) checkLossy() error {
	if !r.Lossy() {
		switch {
		case r.MinPSNR != 0:
			return lossyErrorf("min_psnr_db applies to the lossy compressions (%s) only: a %s output is checked pixel for pixel", strings.Join(LossyCompressions, ", "), r.Compression)
		case r.Quality != 0:
			return lossyErrorf("quality applies to the lossy compressions (%s) only", strings.Join(LossyCompressions, ", "))
		}
		return nil
	}
	if r.MinPSNR == 0 {
		return lossyErrorf("compression %s is lossy, and outputs are lossless by default: choose it by stating the least PSNR every band must keep, min_psnr_db (e.g. 40), or keep a lossless compression (ZSTD, DEFLATE, LZW …)", r.Compression)
	}
	if !(r.MinPSNR > 0 && r.MinPSNR <= 200) {
		return lossyErrorf("min_psnr_db %v: want more than 0 and at most 200 dB", r.MinPSNR)
	}
	if r.Quality < 1 || r.Quality > 100 {
		return lossyErrorf("quality %d: want 1..100", r.Quality)
	}
	if r.Predictor != "auto" && r.Predictor != "none" {
		return lossyErrorf("predictor %s: %s takes no predictor", r.Predictor, r.Compression)
	}
	return nil
}

// hashVersion is bumped when the canonical form below changes meaning.
const hashVersion = 1

// canonical is the map of output-affecting fields, after defaults.
// encoding/json writes map keys sorted, which makes the JSON canonical.
func (r Recipe) canonical() []byte {
	r = r.WithDefaults()
	m := map[string]any{
		"v":                   hashVersion,
		"raster_format":       r.RasterFormat,
		"vector_format":       r.VectorFormat,
		"block_size":          r.BlockSize,
		"zstd_level":          r.ZSTDLevel,
		"overview_resampling": r.OverviewResampling,
		"geometry_policy":     r.GeometryPolicy,
		"row_group_rows":      r.RowGroupRows,
		"engine_version":      r.EngineVersion,
		"tool_version":        r.ToolVersion,
	}
	// Settings added with recipe files enter only when not at their
	// default, so a recipe that does not use them keeps its hash.
	if r.Compression != DefaultCompression {
		m["compression"] = r.Compression
	}
	if r.Compression == "DEFLATE" || r.Compression == "LERC_DEFLATE" {
		m["deflate_level"] = r.DeflateLevel
	}
	if r.Predictor != "auto" {
		m["predictor"] = r.Predictor
	}
	// The threshold enters too: the lineage and fidelity record of each
	// output name it, so a new threshold is a new recipe.
	if r.Lossy() {
		m["quality"], m["min_psnr_db"] = r.Quality, r.MinPSNR
	}
	if r.OverviewLevels != 0 {
		m["overview_levels"] = r.OverviewLevels
	}
	if r.NoData != "" {
		m["nodata"] = r.NoData
	}
	if r.TargetCRS != "" {
		m["target_crs"] = r.TargetCRS
	}
	if len(r.CreationOptions) > 0 {
		m["creation_options"] = r.CreationOptions
	}
	if r.ParquetCompression != "zstd" {
		m["parquet_compression"] = r.ParquetCompression
	}
	// Adding assign_crs or csv columns changes the hash, so that a replay
	// after the remediation converts the refused source again.
	if r.AssignCRS != "" {
		m["assign_crs"] = r.AssignCRS
	}
	// A datetime changes the items: a rerun rewrites them.
	if r.Datetime != "" {
		m["datetime"] = r.Datetime
	}
	if r.CSVGeometry != "" {
		m["csv_geometry"] = r.CSVGeometry
		switch r.CSVGeometry {
		case CSVGeometryWKT:
			m["csv_wkt_column"] = r.CSVWKTColumn
		case CSVGeometryXY:
			m["csv_x_column"], m["csv_y_column"] = r.CSVXColumn, r.CSVYColumn
		}
	}
	if r.Curves != CurvesRefuse {
		m["curves"] = r.Curves
		m["curve_step_degrees"] = r.CurveStepDegrees
	}
	if r.AttributeTables == AttributeTablesParquet {
		m["attribute_tables"] = r.AttributeTables
	}
	b, err := json.Marshal(m)
	if err != nil { // cannot happen: strings, ints and a string list only
		panic(err)
	}
	return b
}

// CanonicalJSON is the text that Hash digests (sorted keys, defaults
// applied, budgets left out), for logs and object metadata.
func (r Recipe) CanonicalJSON() string { return string(r.canonical()) }

// Hash is the hex SHA-256 of CanonicalJSON: it changes whenever a field that
// changes output bytes changes (formats, block size, ZSTD level, resampling,
// geometry policy, row group size, GDAL and geomigrate versions) and never
// otherwise. Budgets are not part of it: they decide whether a source is
// refused, not what a conversion writes.
func (r Recipe) Hash() string {
	sum := sha256.Sum256(r.canonical())
	return hex.EncodeToString(sum[:])
}

// ShortHash is the first 16 hex characters (64 bits) of Hash, the form used
// in the idempotency key and in object metadata ("recipe"). 64 bits is
// ample: the set of recipes a deployment ever uses is tiny.
func (r Recipe) ShortHash() string { return r.Hash()[:16] }

// ParseDatetime reads a recipe's datetime: an RFC 3339 time, or a date
// (2019-06-01, midnight UTC); it returns it as RFC 3339 in UTC.
func ParseDatetime(s string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err != nil {
		return "", fmt.Errorf("%q: want an RFC 3339 time (2019-06-01T10:00:00Z) or a date (2019-06-01)", s)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}
