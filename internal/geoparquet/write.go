package geoparquet

// Size: the GeoParquet writer: columns collected, typed and built into Arrow arrays by the column type's methods, read together.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Version is the GeoParquet version written.
const Version = "1.1.0"

// arrowGoVersion is recorded in created_by; keep in step with go.mod.
const arrowGoVersion = "v18.8.0"

// CreatedBy returns the fixed created_by string for a writer version.
func CreatedBy(writerVersion string) string {
	if writerVersion == "" {
		writerVersion = "dev"
	}
	return "geomigrate version " + writerVersion + " (arrow-go " + arrowGoVersion + ")"
}

// geoMetadata is the "geo" key, field order fixed for canonical JSON.
type geoMetadata struct {
	Version       string                   `json:"version"`
	PrimaryColumn string                   `json:"primary_column"`
	Columns       map[string]geoColumnMeta `json:"columns"`
}

type geoColumnMeta struct {
	Encoding      string          `json:"encoding"`
	GeometryTypes []string        `json:"geometry_types"`
	CRS           json.RawMessage `json:"crs,omitempty"`
	BBox          []float64       `json:"bbox,omitempty"`
	Covering      *geoCovering    `json:"covering,omitempty"`
}

type geoCovering struct {
	BBox map[string][2]string `json:"bbox"`
}

// column holds one attribute column compactly while features are collected.
// A list column holds its elements in ints, f64 or data/offs (one entry
// per element) and each row's first element in loffs.
type column struct {
	f     Field
	as    FieldType // the type written (settle): f.Type, or LocalDateTime
	valid []bool
	ints  []int64   // Int32, Int64, Date (days), DateTime (µs), Time (ms); Int32List, Int64List elements
	f64   []float64 // Float64; Float64List elements
	bools []bool    // Bool
	data  []byte    // String, Binary, StringList elements: arena
	offs  []int64   // String, Binary: len = rows+1; StringList: len = elements+1
	loffs []int64   // lists: len = rows+1, each row's first element
	// DateTime values by zone, over every row read (kept across spills).
	utc, offset, wall int64
}

// table is every collected feature, columnar.
//
// Per-row bounding boxes are not kept: they are recomputed from the WKB
// (a cheap linear scan) when sorting and when building each row group,
// which saves 33 bytes a row.
type table struct {
	rows     int
	base     int64   // rows read before these (spilled)
	geom     []byte  // WKB arena; a null geometry has length 0
	geomOffs []int64 // len rows+1
	cols     []*column
	types    map[string]struct{}
	typeSeen [16]bool // 2×WKB type (1 to 7, DecodeWKB) + Z: its name is in types
	extent   [4]float64
	distinct []distinct // per column, over every row read (encoding.go)
}

// wkb returns row r's WKB (nil for a null geometry).
func (t *table) wkb(r int32) []byte {
	a, b := t.geomOffs[r], t.geomOffs[r+1]
	if a == b {
		return nil
	}
	return t.geom[a:b:b]
}

// box returns row r's bbox; ok is false for a null or empty geometry.
func (t *table) box(r int32) (b [4]float64, ok bool) {
	w := t.wkb(r)
	if w == nil {
		return b, false
	}
	g, err := DecodeWKB(w)
	if err != nil || g.Empty {
		return b, false // cannot happen: every WKB was decoded on the way in
	}
	return [4]float64{g.MinX, g.MinY, g.MaxX, g.MaxY}, true
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Write reads every feature from src, sorts them (see Options) and writes a
// GeoParquet 1.1.0 file to w. w is not closed.
func Write(w io.Writer, layer Layer, src FeatureSource, opts Options) (Stats, error) {
	if opts == (Options{}) {
		opts = DefaultOptions()
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = DefaultRowGroupRows
	}
	if layer.GeometryColumn == "" {
		layer.GeometryColumn = "geometry"
	}
	if layer.NoGeometry {
		// Nothing to order or cover by location.
		opts.Covering, opts.SpatialOrder = false, false
		layer.GeometryColumn = ""
	}
	crs, err := layerCRS(layer)
	if err != nil {
		return Stats{}, err
	}
	codec, err := codecOf(opts.Compression)
	if err != nil {
		return Stats{}, err
	}
	if opts.Lineage != "" && !json.Valid([]byte(opts.Lineage)) {
		return Stats{}, fmt.Errorf("%w: lineage metadata is not JSON", ErrInvalidLayer)
	}
	bboxName, err := checkNames(layer, opts.Covering)
	if err != nil {
		return Stats{}, err
	}

	t, sp, err := collect(layer, src, opts)
	if sp != nil {
		defer sp.close()
	}
	if err != nil {
		return Stats{}, err
	}

	cov := t.coveringOf(opts)
	if cov == noCovering {
		bboxName = ""
	}
	dts := t.settle()
	schema, err := buildSchema(layer, t, crs, bboxName, cov, opts.Lineage)
	if err != nil {
		return Stats{}, err
	}
	wprops := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithCreatedBy(CreatedBy(opts.WriterVersion)),
		parquet.WithMaxRowGroupLength(int64(opts.RowGroupRows)),
		parquet.WithStats(true),
	}
	if !layer.NoGeometry {
		wprops = append(wprops, parquet.WithStatsFor(layer.GeometryColumn, false))
	}
	wprops = append(wprops, t.columnProperties(layer.GeometryColumn, bboxName, codec, opts)...)
	cw := &countingWriter{w: w}
	mem := memory.DefaultAllocator
	fw, err := pqarrow.NewFileWriter(schema, cw, parquet.NewWriterProperties(wprops...), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return Stats{}, fmt.Errorf("geoparquet.Write: create writer: %w", err)
	}
	rows := t.base + int64(t.rows)
	groups := 0
	writeGroup := func(g *table, idx []int32) error {
		rec := g.record(mem, schema, idx, cov, !layer.NoGeometry)
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("geoparquet.Write: write row group %d: %w", groups, err)
		}
		groups++
		return nil
	}
	// The Hilbert order picks the rows of each row group, so that the
	// covering's row-group statistics let a reader skip groups by
	// location; inside a group the rows keep their input order, which
	// compresses ids and attributes far better and changes no group's
	// statistics. Without a covering nothing in the file can prune by
	// location, so the rows stay in input order (decision 0026).
	spatial := opts.SpatialOrder && cov != noCovering
	if sp == nil {
		order := t.order(spatial)
		for start := 0; start < t.rows && err == nil; start += opts.RowGroupRows {
			group := order[start:min(start+opts.RowGroupRows, t.rows)]
			slices.Sort(group)
			err = writeGroup(t, group)
		}
	} else {
		err = sp.write(t, spatial, opts.RowGroupRows, writeGroup)
	}
	if err != nil {
		fw.Close()
		return Stats{}, err
	}
	if err := fw.Close(); err != nil {
		return Stats{}, fmt.Errorf("geoparquet.Write: close: %w", err)
	}
	st := Stats{Rows: rows, RowGroups: groups, GeometryTypes: sortedKeys(t.types), BBox: t.extent, Bytes: cw.n, DateTimes: dts}
	if sp != nil {
		st.Spills = sp.spills
	}
	return st, nil
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// layerCRS returns the compact PROJJSON to write, or nil for OGC:CRS84.
func layerCRS(layer Layer) (json.RawMessage, error) {
	if layer.IsCRS84 || len(bytes.TrimSpace(layer.CRSProjJSON)) == 0 {
		return nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(layer.CRSProjJSON, &obj); err != nil {
		return nil, fmt.Errorf("%w: CRS is not a PROJJSON object: %v", ErrInvalidLayer, err)
	}
	if isCRS84(obj) {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, layer.CRSProjJSON); err != nil {
		return nil, fmt.Errorf("%w: CRS: %v", ErrInvalidLayer, err)
	}
	return buf.Bytes(), nil
}

// isCRS84 recognises a PROJJSON whose id is OGC:CRS84.
func isCRS84(obj map[string]any) bool {
	id, _ := obj["id"].(map[string]any)
	if id == nil {
		return false
	}
	auth, _ := id["authority"].(string)
	return auth == "OGC" && fmt.Sprint(id["code"]) == "CRS84"
}

// checkNames validates the layer's column names and picks the covering
// column name ("bbox", or "<geometry>_bbox" when "bbox" is an attribute).
func checkNames(layer Layer, covering bool) (string, error) {
	seen := map[string]bool{}
	if !layer.NoGeometry {
		seen[layer.GeometryColumn] = true
	}
	for i, f := range layer.Fields {
		if f.Name == "" {
			return "", fmt.Errorf("%w: field %d has no name", ErrInvalidLayer, i)
		}
		if seen[f.Name] {
			return "", fmt.Errorf("%w: duplicate column name %q", ErrInvalidLayer, f.Name)
		}
		seen[f.Name] = true
		if f.Type < Int32 || f.Type > lastFieldType || f.Type == LocalDateTime {
			return "", fmt.Errorf("%w: field %q has unsupported type %d", ErrInvalidLayer, f.Name, int(f.Type))
		}
	}
	if !covering || layer.NoGeometry {
		return "", nil
	}
	for _, name := range []string{"bbox", layer.GeometryColumn + "_bbox"} {
		if !seen[name] {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: no free name for the bbox covering column", ErrInvalidLayer)
}

// collect reads every feature of src into a table. Once the rows held
// pass opts.SpillBytes they are spilled to a chunk file (see spill.go) and
// the table starts again; the spiller is then returned too. The table's
// types and extent always describe every row read.
func collect(layer Layer, src FeatureSource, opts Options) (*table, *spiller, error) {
	t := newTable(layer)
	var sp *spiller
	for row := int64(0); ; row++ {
		f, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, sp, fmt.Errorf("geoparquet.Write: reading feature %d: %w", row, err)
		}
		if len(f.Values) != len(layer.Fields) {
			return nil, sp, fmt.Errorf("%w: feature %d has %d values for %d fields", ErrInvalidValue, row, len(f.Values), len(layer.Fields))
		}
		if layer.NoGeometry && len(f.WKB) > 0 {
			return nil, sp, fmt.Errorf("%w: feature %d has a geometry in a layer without geometry", ErrInvalidGeometry, row)
		}
		if err := t.addGeometry(f.WKB); err != nil {
			return nil, sp, fmt.Errorf("%w: feature %d: %v", ErrInvalidGeometry, row, err)
		}
		for i, c := range t.cols {
			if err := c.add(f.Values[i]); err != nil {
				return nil, sp, fmt.Errorf("%w: feature %d, field %q: %v", ErrInvalidValue, row, c.f.Name, err)
			}
		}
		t.rows++
		// held() walks the columns: every 256 rows is often enough.
		if opts.SpillBytes > 0 && t.rows%256 == 0 && t.held() >= opts.SpillBytes {
			if sp == nil {
				sp = &spiller{dir: opts.TempDir}
			}
			t.countDistinct(opts)
			if err := sp.spill(t); err != nil {
				return nil, sp, err
			}
			t.base += int64(t.rows)
			t.reset()
		}
	}
	t.countDistinct(opts)
	if t.extent[0] > t.extent[2] {
		t.extent = [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	return t, sp, nil
}

func (t *table) addGeometry(wkb []byte) error {
	if len(wkb) == 0 {
		t.geomOffs = append(t.geomOffs, int64(len(t.geom)))
		return nil
	}
	g, err := DecodeWKB(wkb)
	if err != nil {
		return err
	}
	// The types map is written once per kind, not per row (a map
	// assignment per feature was 3 % of writing 1M points).
	if k := 2*g.Type + b2i(g.Z); !t.typeSeen[k] {
		t.typeSeen[k] = true
		t.types[g.TypeName()] = struct{}{}
	}
	t.geom = append(t.geom, wkb...)
	t.geomOffs = append(t.geomOffs, int64(len(t.geom)))
	if !g.Empty {
		t.extent[0], t.extent[1] = min(t.extent[0], g.MinX), min(t.extent[1], g.MinY)
		t.extent[2], t.extent[3] = max(t.extent[2], g.MaxX), max(t.extent[3], g.MaxY)
	}
	return nil
}

func (c *column) add(v any) error {
	if v == nil {
		if !c.f.Nullable {
			return errors.New("null in a non-nullable field")
		}
		c.appendNull()
		return nil
	}
	switch c.f.Type {
	case Int32, Int64:
		n, ok := toInt64(v)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		if c.f.Type == Int32 && (n < math.MinInt32 || n > math.MaxInt32) {
			return fmt.Errorf("%d overflows int32", n)
		}
		c.ints = append(c.ints, n)
	case Float64:
		switch x := v.(type) {
		case float64:
			c.f64 = append(c.f64, x)
		case float32:
			c.f64 = append(c.f64, float64(x))
		default:
			n, ok := toInt64(v)
			if !ok {
				return fmt.Errorf("%T is not a number", v)
			}
			c.f64 = append(c.f64, float64(n))
		}
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%T is not a bool", v)
		}
		c.bools = append(c.bools, b)
	case Date:
		var tm time.Time
		switch x := v.(type) {
		case time.Time:
			tm = x
		case WallTime:
			tm = x.Wall
		default:
			return fmt.Errorf("%T is not a time.Time", v)
		}
		y, m, d := tm.Date()
		c.ints = append(c.ints, time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()/86400)
	case DateTime:
		switch x := v.(type) {
		case time.Time:
			if _, off := x.Zone(); off != 0 {
				c.offset++
			} else {
				c.utc++
			}
			c.ints = append(c.ints, x.UnixMicro())
		case WallTime:
			c.wall++
			c.ints = append(c.ints, wallMicros(x.Wall))
		default:
			return fmt.Errorf("%T is not a time.Time", v)
		}
	case Time:
		d, ok := v.(time.Duration)
		if !ok {
			return fmt.Errorf("%T is not a time.Duration", v)
		}
		if d < 0 || d >= 24*time.Hour {
			return fmt.Errorf("time of day %v is outside [0, 24h)", d)
		}
		c.ints = append(c.ints, d.Milliseconds())
	case Int32List, Int64List, Float64List, StringList:
		if err := c.addList(v); err != nil {
			return err
		}
	case String:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			return fmt.Errorf("%T is not a string", v)
		}
		if !utf8.ValidString(s) {
			return errors.New("string is not valid UTF-8")
		}
		c.data = append(c.data, s...)
		c.offs = append(c.offs, int64(len(c.data)))
	case Binary:
		switch x := v.(type) {
		case []byte:
			c.data = append(c.data, x...)
		case string:
			c.data = append(c.data, x...)
		default:
			return fmt.Errorf("%T is not []byte", v)
		}
		c.offs = append(c.offs, int64(len(c.data)))
	}
	c.valid = append(c.valid, true)
	return nil
}

// wallMicros is a wall-clock reading as microseconds since 1970-01-01
// 00:00 of the same calendar (its location ignored).
func wallMicros(t time.Time) int64 {
	y, m, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, m, d, h, mi, sec, t.Nanosecond(), time.UTC).UnixMicro()
}

// addList appends one list value: its elements, then the row's end.
func (c *column) addList(v any) error {
	switch c.f.Type {
	case Int32List:
		switch x := v.(type) {
		case []int32:
			for _, e := range x {
				c.ints = append(c.ints, int64(e))
			}
		case []int64:
			for _, e := range x {
				if e < math.MinInt32 || e > math.MaxInt32 {
					return fmt.Errorf("list element %d overflows int32", e)
				}
				c.ints = append(c.ints, e)
			}
		default:
			return fmt.Errorf("%T is not a list of integers", v)
		}
	case Int64List:
		x, ok := v.([]int64)
		if !ok {
			return fmt.Errorf("%T is not a list of int64", v)
		}
		c.ints = append(c.ints, x...)
	case Float64List:
		switch x := v.(type) {
		case []float64:
			c.f64 = append(c.f64, x...)
		case []float32:
			for _, e := range x {
				c.f64 = append(c.f64, float64(e))
			}
		default:
			return fmt.Errorf("%T is not a list of numbers", v)
		}
	case StringList:
		x, ok := v.([]string)
		if !ok {
			return fmt.Errorf("%T is not a list of strings", v)
		}
		for _, e := range x {
			if !utf8.ValidString(e) {
				return errors.New("list element is not valid UTF-8")
			}
			c.data = append(c.data, e...)
			c.offs = append(c.offs, int64(len(c.data)))
		}
	}
	c.loffs = append(c.loffs, int64(c.elements()))
	return nil
}

// elements is the number of list elements a list column holds.
func (c *column) elements() int {
	switch c.f.Type {
	case Float64List:
		return len(c.f64)
	case StringList:
		return len(c.offs) - 1
	}
	return len(c.ints)
}

// settle decides the type each column is written as: a DateTime column
// none of whose values has a zone is written as LocalDateTime, so that
// its wall-clock readings are not presented as UTC instants
// (docs/decisions/0091). It returns what it decided for every DateTime
// column.
func (t *table) settle() []DateTimeStats {
	var out []DateTimeStats
	for _, c := range t.cols {
		c.as = c.f.Type
		if c.f.Type != DateTime {
			continue
		}
		if c.wall > 0 && c.utc+c.offset == 0 {
			c.as = LocalDateTime
		}
		out = append(out, DateTimeStats{Field: c.f.Name, Written: c.as, UTC: c.utc, Offset: c.offset, Wall: c.wall})
	}
	return out
}

// appendNull appends a null: a zero value and validity false.
func (c *column) appendNull() {
	c.valid = append(c.valid, false)
	if c.f.Type.isList() {
		c.loffs = append(c.loffs, int64(c.elements()))
		return
	}
	switch c.f.Type {
	case Float64:
		c.f64 = append(c.f64, 0)
	case Bool:
		c.bools = append(c.bools, false)
	case String, Binary:
		c.offs = append(c.offs, int64(len(c.data)))
	default:
		c.ints = append(c.ints, 0)
	}
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}

// order returns the row permutation: input order, or a stable Hilbert
// order of bbox centres over the layer extent (rows without a bbox last).
func (t *table) order(spatial bool) []int32 {
	idx := make([]int32, t.rows)
	if !spatial || t.rows < 2 || math.IsNaN(t.extent[0]) {
		for i := range idx {
			idx[i] = int32(i)
		}
		return idx
	}
	// key<<32 | row: sorting the packed keys is a stable sort by key.
	keys := make([]uint64, t.rows)
	for i := range keys {
		k := uint64(math.MaxUint32)
		if b, ok := t.box(int32(i)); ok {
			cx, cy := (b[0]+b[2])/2, (b[1]+b[3])/2
			k = hilbertIndex(gridCell(cx, t.extent[0], t.extent[2]), gridCell(cy, t.extent[1], t.extent[3]))
		}
		keys[i] = k<<32 | uint64(i)
	}
	slices.Sort(keys)
	for i, k := range keys {
		idx[i] = int32(uint32(k))
	}
	return idx
}

func arrowType(ft FieldType) arrow.DataType {
	switch ft {
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Float64:
		return arrow.PrimitiveTypes.Float64
	case String:
		return arrow.BinaryTypes.String
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case Date:
		return arrow.FixedWidthTypes.Date32
	case DateTime:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case LocalDateTime:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case Time:
		return arrow.FixedWidthTypes.Time32ms
	case Binary:
		return arrow.BinaryTypes.Binary
	case Int32List:
		return arrow.ListOfField(listElement(arrow.PrimitiveTypes.Int32))
	case Int64List:
		return arrow.ListOfField(listElement(arrow.PrimitiveTypes.Int64))
	case Float64List:
		return arrow.ListOfField(listElement(arrow.PrimitiveTypes.Float64))
	case StringList:
		return arrow.ListOfField(listElement(arrow.BinaryTypes.String))
	}
	return nil
}

// listElement is a list's element field, named as the Parquet spec's
// three-level LIST encoding names it (and as the file reads back).
func listElement(t arrow.DataType) arrow.Field {
	return arrow.Field{Name: "element", Type: t, Nullable: true}
}

// columnPath is the dotted path of a column's leaf, for per-column
// writer properties.
func columnPath(f Field) string {
	if f.Type.isList() {
		return f.Name + ".list.element"
	}
	return f.Name
}

// bboxStruct is the covering column's type: four FLOAT or DOUBLE fields.
func bboxStruct(cov coveringKind) *arrow.StructType {
	var ft arrow.DataType = arrow.PrimitiveTypes.Float32
	if cov == doubleCovering {
		ft = arrow.PrimitiveTypes.Float64
	}
	return arrow.StructOf(
		arrow.Field{Name: "xmin", Type: ft}, arrow.Field{Name: "ymin", Type: ft},
		arrow.Field{Name: "xmax", Type: ft}, arrow.Field{Name: "ymax", Type: ft})
}

func buildSchema(layer Layer, t *table, crs json.RawMessage, bboxName string, cov coveringKind, lineage string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, 0, len(layer.Fields)+2)
	for i, f := range layer.Fields {
		fields = append(fields, arrow.Field{Name: f.Name, Type: arrowType(t.cols[i].as), Nullable: f.Nullable})
	}
	if layer.NoGeometry {
		var md arrow.Metadata
		if lineage != "" {
			md = arrow.NewMetadata([]string{LineageKey}, []string{lineage})
		}
		return arrow.NewSchema(fields, &md), nil
	}
	fields = append(fields, arrow.Field{Name: layer.GeometryColumn, Type: arrow.BinaryTypes.Binary, Nullable: true})
	col := geoColumnMeta{Encoding: "WKB", GeometryTypes: sortedKeys(t.types), CRS: crs}
	if !math.IsNaN(t.extent[0]) {
		col.BBox = t.extent[:]
	}
	if cov != noCovering {
		fields = append(fields, arrow.Field{Name: bboxName, Type: bboxStruct(cov), Nullable: true})
		col.Covering = &geoCovering{BBox: map[string][2]string{
			"xmin": {bboxName, "xmin"}, "ymin": {bboxName, "ymin"},
			"xmax": {bboxName, "xmax"}, "ymax": {bboxName, "ymax"},
		}}
	}
	geo, err := json.Marshal(geoMetadata{Version: Version, PrimaryColumn: layer.GeometryColumn,
		Columns: map[string]geoColumnMeta{layer.GeometryColumn: col}})
	if err != nil {
		return nil, fmt.Errorf("geoparquet.Write: encode geo metadata: %w", err)
	}
	keys, values := []string{"geo"}, []string{string(geo)}
	if lineage != "" {
		keys, values = append(keys, LineageKey), append(values, lineage)
	}
	md := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(fields, &md), nil
}

// record builds the arrow record of the rows idx (already ordered).
func (t *table) record(mem memory.Allocator, schema *arrow.Schema, idx []int32, cov coveringKind, geometry bool) arrow.RecordBatch {
	n := len(idx)
	cols := make([]arrow.Array, 0, schema.NumFields())
	for _, c := range t.cols {
		cols = append(cols, c.array(mem, idx))
	}
	if !geometry {
		rec := array.NewRecordBatch(schema, cols, int64(n))
		for _, c := range cols {
			c.Release()
		}
		return rec
	}
	gb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	var size int64
	for _, r := range idx {
		size += t.geomOffs[r+1] - t.geomOffs[r]
	}
	gb.Reserve(n)
	gb.ReserveData(int(size))
	for _, r := range idx {
		if w := t.wkb(r); w != nil {
			gb.Append(w)
		} else {
			gb.AppendNull()
		}
	}
	cols = append(cols, gb.NewArray())
	gb.Release()
	if cov != noCovering {
		cols = append(cols, t.coveringArray(mem, idx, cov))
	}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func (c *column) array(mem memory.Allocator, idx []int32) arrow.Array {
	if c.f.Type.isList() {
		return c.listArray(mem, idx)
	}
	switch c.as {
	case Int32:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(int32(c.ints[r]))
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case Int64:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(c.ints[r])
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case Date:
		b := array.NewDate32Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(arrow.Date32(c.ints[r]))
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case DateTime, LocalDateTime:
		b := array.NewTimestampBuilder(mem, arrowType(c.as).(*arrow.TimestampType))
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(arrow.Timestamp(c.ints[r]))
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case Time:
		b := array.NewTime32Builder(mem, arrow.FixedWidthTypes.Time32ms.(*arrow.Time32Type))
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(arrow.Time32(c.ints[r]))
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case Float64:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(c.f64[r])
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case Bool:
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(c.bools[r])
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	default: // String, Binary
		b := array.NewBinaryBuilder(mem, arrowType(c.f.Type).(arrow.BinaryDataType))
		defer b.Release()
		b.Reserve(len(idx))
		var size int64
		for _, r := range idx {
			size += c.offs[r+1] - c.offs[r]
		}
		b.ReserveData(int(size))
		for _, r := range idx {
			if c.valid[r] {
				b.Append(c.data[c.offs[r]:c.offs[r+1]])
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	}
}

// listArray builds a list column's array of rows idx.
func (c *column) listArray(mem memory.Allocator, idx []int32) arrow.Array {
	lt := arrowType(c.f.Type).(*arrow.ListType)
	b := array.NewListBuilderWithField(mem, lt.ElemField())
	defer b.Release()
	b.Reserve(len(idx))
	vb := b.ValueBuilder()
	for _, r := range idx {
		if !c.valid[r] {
			b.AppendNull()
			continue
		}
		b.Append(true)
		for e := c.loffs[r]; e < c.loffs[r+1]; e++ {
			switch x := vb.(type) {
			case *array.Int32Builder:
				x.Append(int32(c.ints[e]))
			case *array.Int64Builder:
				x.Append(c.ints[e])
			case *array.Float64Builder:
				x.Append(c.f64[e])
			case *array.StringBuilder:
				x.BinaryBuilder.Append(c.data[c.offs[e]:c.offs[e+1]])
			}
		}
	}
	return b.NewArray()
}

// codecOf maps a codec name (as gpq and GDAL's Parquet driver spell it) to
// the writer's codec.
func codecOf(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "", "zstd":
		return compress.Codecs.Zstd, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	case "brotli":
		return compress.Codecs.Brotli, nil
	case "lz4":
		return compress.Codecs.Lz4Raw, nil
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	}
	return compress.Codecs.Uncompressed, fmt.Errorf("%w: compression %q: want zstd, snappy, gzip, brotli, lz4 or none", ErrInvalidLayer, name)
}
