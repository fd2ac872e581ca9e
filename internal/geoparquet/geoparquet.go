// Package geoparquet writes and validates GeoParquet 1.1.0 files in pure Go.
//
// The writer takes features from a FeatureSource (internal/gdal adapts OGR
// layers to it), holds them compactly in memory (or, past Options.SpillBytes,
// sorts them externally through temporary files: spill.go), fills each row
// group with the next features along a Hilbert curve of their bounding-box
// centres (in input order inside the group) and writes WKB geometries, typed
// attribute columns and a "bbox" covering column with ZSTD compression and
// per-row-group statistics, plus the "geo" file metadata.
//
// Output is deterministic: the same layer, features and options give
// byte-identical files (no timestamps, fixed created_by, canonical JSON).
//
// Validate checks any GeoParquet 1.x file (metadata keys and types, every
// WKB decodes, geometry_types and bbox cover the data, the covering column
// is consistent) and reports problems as human-readable strings.
package geoparquet

import (
	"errors"
	"io"
	"time"
)

// FieldType is the type of an attribute column.
type FieldType int

// Attribute types and the Arrow/Parquet types they are written as.
const (
	Int32    FieldType = iota + 1 // int32
	Int64                         // int64
	Float64                       // double
	String                        // UTF-8 string
	Bool                          // boolean
	Date                          // date32 (days since 1970-01-01, civil date of the time.Time)
	DateTime                      // timestamp[us, UTC] (isAdjustedToUTC=true), or LocalDateTime when no value has a zone
	Binary                        // binary
	// LocalDateTime is what a DateTime column is written as when none
	// of its values has a time zone (every value a WallTime):
	// timestamp[us] without zone, isAdjustedToUTC=false. It is never
	// declared: Write chooses it (Stats.DateTimes).
	LocalDateTime
	Time        // time32[ms] (TIME(MILLIS, isAdjustedToUTC=false)): time of day, a time.Duration since midnight
	Int32List   // list<int32> (3-level LIST, optional elements): []int32 or []int64 in range
	Int64List   // list<int64>: []int64
	Float64List // list<double>: []float64 (or []float32)
	StringList  // list<string>: []string, UTF-8
)

// lastFieldType is the last FieldType (for range checks).
const lastFieldType = StringList

// isList says t is one of the LIST column types.
func (t FieldType) isList() bool { return t >= Int32List && t <= StringList }

// WallTime is a date and time of day without a time zone (a value whose
// zone is unknown or "local"): its fields are the reading, its Location
// is ignored. A DateTime value is either a time.Time, an instant (its
// zone offset, when not 0, is normalised away: Stats.DateTimes counts
// it), or a WallTime.
type WallTime struct{ Wall time.Time }

// DateTimeStats says how the values of one DateTime column were written.
type DateTimeStats struct {
	Field string
	// Written is DateTime (UTC instants) or LocalDateTime (every value a
	// WallTime).
	Written FieldType
	// UTC values had zone offset 0; Offset values had another offset and
	// were normalised to the same instant in UTC (the offset itself is
	// not kept); Wall values had no zone: in a LocalDateTime column they
	// are kept as read, in a DateTime column (mixed with zoned values)
	// they were taken as UTC.
	UTC, Offset, Wall int64
}

func (t FieldType) String() string {
	switch t {
	case Int32:
		return "Int32"
	case Int64:
		return "Int64"
	case Float64:
		return "Float64"
	case String:
		return "String"
	case Bool:
		return "Bool"
	case Date:
		return "Date"
	case DateTime:
		return "DateTime"
	case Binary:
		return "Binary"
	case LocalDateTime:
		return "LocalDateTime"
	case Time:
		return "Time"
	case Int32List:
		return "Int32List"
	case Int64List:
		return "Int64List"
	case Float64List:
		return "Float64List"
	case StringList:
		return "StringList"
	}
	return "FieldType(?)"
}

// Field describes one attribute column.
type Field struct {
	Name     string
	Type     FieldType
	Nullable bool
}

// Feature is one row. Values holds one entry per Layer.Fields (nil = null),
// typed int32/int64/float64/string/bool/time.Time (or WallTime)/[]byte,
// time.Duration for Time and slices for the lists (ints of other widths and
// float32 are accepted and range-checked). WKB is ISO WKB (2D,
// Z, M or ZM); a nil or empty WKB is a null geometry.
//
// MinX..MaxY are accepted for interface compatibility but Write derives the
// bounding box from the WKB itself, so a wrong hint cannot produce an
// inconsistent covering column.
type Feature struct {
	WKB                    []byte
	Values                 []any
	MinX, MinY, MaxX, MaxY float64
}

// Layer describes the table to write.
type Layer struct {
	Name           string
	Fields         []Field
	GeometryColumn string // default "geometry"
	// CRSProjJSON is the PROJJSON of the layer CRS; nil/empty means OGC:CRS84.
	CRSProjJSON []byte
	// IsCRS84 says the CRS is OGC:CRS84 (lon/lat WGS 84): the "crs" key is
	// then omitted, as the spec prescribes.
	IsCRS84 bool
	// NoGeometry writes a plain Parquet table: no geometry or covering
	// column, no "geo" metadata, rows in input order; every Feature.WKB
	// must be empty. For attribute-only layers (docs/decisions/0091).
	NoGeometry bool
}

// FeatureSource yields features; Next returns io.EOF at the end. Write
// copies what it keeps of a feature before it calls Next again, so a
// source may hand out every feature in the same WKB buffer and Values
// slice.
type FeatureSource interface {
	Next() (Feature, error)
}

// Options tunes the writer. The zero value Options{} means DefaultOptions();
// any other value is taken literally (start from DefaultOptions() to change
// one knob and keep the spatial order and the covering column).
type Options struct {
	RowGroupRows int // rows per row group; 0 means 65536
	// ZSTDLevel is the ZSTD level of every column; 0 means a level per
	// kind of column (geometry, covering, attributes).
	ZSTDLevel int
	// Compression is the column codec: zstd ("" too), snappy, gzip,
	// brotli, lz4 (LZ4_RAW) or none.
	Compression string
	// SpatialOrder fills the row groups along a Hilbert curve of the
	// bbox centres (stable), so that the covering's row-group statistics
	// let readers skip groups by location; the rows of a group keep their
	// input order. A file without a covering has nothing to skip groups
	// on and stays in input order (docs/decisions/0026).
	SpatialOrder bool
	// Covering writes the "bbox" struct column and declares it as the
	// geometry's covering: FLOAT fields rounded outwards, except for a
	// layer of points only, which gets none (its bbox would repeat its
	// coordinates) and so stays in input order. See docs/decisions/0025
	// and 0026.
	Covering bool
	// CoverPoints writes the covering for a layer of points only too.
	CoverPoints bool
	// CoveringDouble writes the covering fields as DOUBLE (exact) instead
	// of FLOAT.
	CoveringDouble bool
	WriterVersion  string // geomigrate version recorded in created_by
	// Lineage is a JSON object stored under LineageKey in the file's
	// key-value metadata ("" = none): where the file came from (source
	// hash, recipe, versions), inside the file so that it survives a copy.
	Lineage string
	// SpillBytes bounds the rows held in memory: past it, rows go to
	// temporary files in TempDir and are sorted externally (same bytes
	// out; decision 0024). 0 holds the whole layer in memory.
	SpillBytes int64
	TempDir    string // "" = os.TempDir()
}

// DefaultRowGroupRows is the default number of rows per row group.
const DefaultRowGroupRows = 65536

// DefaultOptions returns the recommended options.
func DefaultOptions() Options {
	return Options{RowGroupRows: DefaultRowGroupRows, SpatialOrder: true, Covering: true}
}

// Stats summarises a written file.
type Stats struct {
	Rows          int64
	RowGroups     int
	GeometryTypes []string   // sorted unique GeoParquet names, e.g. "Polygon", "Point Z"
	BBox          [4]float64 // xmin, ymin, xmax, ymax; NaN when there is no non-empty geometry
	Bytes         int64
	// Spills is the number of chunks written to temporary files by the
	// external sort (0: the layer was sorted in memory).
	Spills int
	// DateTimes says, per DateTime column in field order, how its values
	// were written (zone offsets normalised, values without a zone).
	DateTimes []DateTimeStats
}

// Errors returned by Write, wrapped with the offending feature or field;
// test with errors.Is. A non-nil error from the FeatureSource is returned
// wrapped with %w as well.
var (
	ErrInvalidLayer    = errors.New("geoparquet: invalid layer definition")
	ErrInvalidGeometry = errors.New("geoparquet: invalid geometry")
	ErrInvalidValue    = errors.New("geoparquet: invalid attribute value")
)

// SliceSource is a FeatureSource over a slice (tests, small layers).
type SliceSource struct {
	Features []Feature
	i        int
}

// Next implements FeatureSource.
func (s *SliceSource) Next() (Feature, error) {
	if s.i >= len(s.Features) {
		return Feature{}, io.EOF
	}
	s.i++
	return s.Features[s.i-1], nil
}
