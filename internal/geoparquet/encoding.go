package geoparquet

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// How each column is encoded and compressed (docs/decisions/0025): the
// choice is made per column from its type and from whole-layer counts of
// its values, so it is deterministic and needs no row order.

// coveringKind is how the bbox covering column is written.
type coveringKind int

const (
	noCovering     coveringKind = iota
	floatCovering               // FLOAT fields, each bound rounded outwards
	doubleCovering              // DOUBLE fields, exact
)

// coveringOf decides the covering column of this table.
func (t *table) coveringOf(opts Options) coveringKind {
	switch {
	case !opts.Covering:
		return noCovering
	case !opts.CoverPoints && t.pointsOnly():
		return noCovering
	case opts.CoveringDouble:
		return doubleCovering
	}
	return floatCovering
}

// pointsOnly says every non-null geometry is a Point (or Point Z): their
// bbox would only repeat the coordinates.
func (t *table) pointsOnly() bool {
	if len(t.types) == 0 {
		return false
	}
	for k := range t.types {
		if k != "Point" && k != "Point Z" {
			return false
		}
	}
	return true
}

// floorFloat32 is the largest float32 ≤ v; ceilFloat32 the smallest ≥ v:
// a FLOAT covering rounded this way still contains its geometry.
func floorFloat32(v float64) float32 {
	f := float32(v)
	if float64(f) > v {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}

func ceilFloat32(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// coveringArray builds the covering struct of rows idx: null where the
// geometry is null or empty.
func (t *table) coveringArray(mem memory.Allocator, idx []int32, cov coveringKind) arrow.Array {
	sb := array.NewStructBuilder(mem, bboxStruct(cov))
	defer sb.Release()
	sb.Reserve(len(idx))
	for i := 0; i < 4; i++ {
		sb.FieldBuilder(i).Reserve(len(idx))
	}
	var appendBox func(b [4]float64)
	if cov == doubleCovering {
		var fbs [4]*array.Float64Builder
		for i := range fbs {
			fbs[i] = sb.FieldBuilder(i).(*array.Float64Builder)
		}
		appendBox = func(b [4]float64) {
			for i, fb := range fbs {
				fb.Append(b[i])
			}
		}
	} else {
		var fbs [4]*array.Float32Builder
		for i := range fbs {
			fbs[i] = sb.FieldBuilder(i).(*array.Float32Builder)
		}
		// Rounded outwards, so the box still contains the geometry.
		appendBox = func(b [4]float64) {
			fbs[0].Append(floorFloat32(b[0]))
			fbs[1].Append(floorFloat32(b[1]))
			fbs[2].Append(ceilFloat32(b[2]))
			fbs[3].Append(ceilFloat32(b[3]))
		}
	}
	for _, r := range idx {
		b, ok := t.box(r)
		if !ok {
			sb.AppendNull()
			continue
		}
		sb.Append(true)
		appendBox(b)
	}
	return sb.NewArray()
}

// ZSTD levels by kind of column, used when Options.ZSTDLevel is 0, on
// libzstd's scale (zstd.go; docs/decisions/0086). With libzstd (UseZSTD,
// as internal/gdal sets it), level 5 wrote the geometry of 100k
// quadrilaterals in 27 % and of 100k parcels in 16 % fewer bytes than
// level 3, and every covering and attribute column smaller too, at 90–105
// MB/s against 157–194 for level 3; level 7 saved 2 % more at 75 MB/s. The
// pure-Go encoder runs 3 to 5 at its default speed, which was its smallest
// below 10 for every kind of column (decision 0025).
const (
	geometryLevel  = 5
	coveringLevel  = 5
	attributeLevel = 5
)

// geometryEncoding is the WKB column's encoding (decision 0026).
// DELTA_BYTE_ARRAY stores each value's prefix shared with the previous one
// (the WKB header of a polygon: byte order, type, ring and point counts)
// once and the rest back to back: the geometry of 100k parcels and of
// 100k quadrilaterals took 2.6 % and 4.4 % less than PLAIN under ZSTD.
// Points share only their 5-byte header, and the varying suffixes then
// compress worse (+7 %); DELTA_LENGTH_BYTE_ARRAY (the lengths apart, the
// values back to back) took 0.3 % less than PLAIN for 1M points.
func (t *table) geometryEncoding() parquet.Encoding {
	if t.pointsOnly() {
		return parquet.Encodings.DeltaLengthByteArray
	}
	return parquet.Encodings.DeltaByteArray
}

// dictionaryShare: a column is dictionary-encoded when the layer holds
// at most one distinct value per dictionaryShare rows of a row group.
const dictionaryShare = 4

// columnProperties returns the per-column encodings, dictionaries and
// compression levels.
func (t *table) columnProperties(geomCol, bboxName string, codec compress.Compression, opts Options) []parquet.WriterProperty {
	zstd := codec == compress.Codecs.Zstd
	level := func(path string, l int) parquet.WriterProperty {
		if opts.ZSTDLevel != 0 {
			l = opts.ZSTDLevel
		}
		return parquet.WithCompressionLevelFor(path, l)
	}
	var props []parquet.WriterProperty
	if geomCol != "" {
		props = append(props, parquet.WithDictionaryFor(geomCol, false), parquet.WithEncodingFor(geomCol, t.geometryEncoding()))
		if zstd {
			props = append(props, level(geomCol, geometryLevel))
		}
	}
	if bboxName != "" {
		for _, c := range []string{"xmin", "ymin", "xmax", "ymax"} {
			path := bboxName + "." + c
			props = append(props, parquet.WithDictionaryFor(path, false), parquet.WithEncodingFor(path, parquet.Encodings.ByteStreamSplit))
			if zstd {
				props = append(props, level(path, coveringLevel))
			}
		}
	}
	limit := int(min(t.base+int64(t.rows), int64(max(opts.RowGroupRows, 1)))) / dictionaryShare
	for i, c := range t.cols {
		path := columnPath(c.f)
		// Lists are not counted (their elements are not rows): no
		// dictionary.
		dict := c.f.Type != Bool && !c.f.Type.isList() && t.distinct[i].fewDistinct(limit)
		props = append(props, parquet.WithDictionaryFor(path, dict))
		if !dict {
			props = append(props, parquet.WithEncodingFor(path, valueEncoding(c.f.Type)))
		}
		if zstd {
			props = append(props, level(path, attributeLevel))
		}
	}
	return props
}

// valueEncoding is a column's encoding when it has no dictionary:
// DELTA_BINARY_PACKED for integers, dates and times (ids in input order
// shrink to almost nothing, and even ids scattered by the spatial order
// took 1.17 MB instead of 3.14 MB PLAIN on the 1M-point set), PLAIN for
// the rest (BYTE_STREAM_SPLIT made unique reals printed with 3 decimals
// 63 % larger than PLAIN under ZSTD; booleans are bit-packed).
func valueEncoding(ft FieldType) parquet.Encoding {
	switch ft {
	case Int32, Int64, Date, DateTime, Time, Int32List, Int64List:
		return parquet.Encodings.DeltaBinaryPacked
	}
	return parquet.Encodings.Plain
}

// distinct counts a column's distinct non-null values over the whole
// layer, across spilled chunks, up to a cap: past it the exact number no
// longer matters (no dictionary), and the set is dropped so its memory
// stays bounded. Only whole-layer counts are used (no row order), so the
// spilled and the in-memory paths choose the same encodings. (The writer's
// own cost-based fallback was tried instead: it judges the dictionary on
// the first thousand values, before it pays off, and dropped it for
// columns of 977 distinct values.)
type distinct struct {
	seen    map[string]struct{} // String, Binary
	numbers map[uint64]struct{} // the bits of every other type
	over    bool
}

// count adds the column's rows held now; cap is the most distinct values
// worth counting. A value already seen is only looked up: most rows repeat
// one (the map lookup of a converted []byte does not allocate).
func (d *distinct) count(c *column, cap int) {
	if d.over {
		return
	}
	if d.seen == nil {
		d.seen, d.numbers = map[string]struct{}{}, map[uint64]struct{}{}
	}
	for r, ok := range c.valid {
		if !ok {
			continue
		}
		switch c.f.Type {
		case String, Binary:
			if _, ok := d.seen[string(c.data[c.offs[r]:c.offs[r+1]])]; !ok {
				d.seen[string(c.data[c.offs[r]:c.offs[r+1]])] = struct{}{}
			}
		case Float64:
			d.numbers[math.Float64bits(c.f64[r])] = struct{}{}
		default:
			d.numbers[uint64(c.ints[r])] = struct{}{}
		}
		if d.len() > cap {
			d.over, d.seen, d.numbers = true, nil, nil
			return
		}
	}
}

func (d *distinct) len() int { return len(d.seen) + len(d.numbers) }

// fewDistinct says the column holds at most limit distinct non-null
// values in the whole layer, so every row group's dictionary stays small.
func (d *distinct) fewDistinct(limit int) bool {
	return !d.over && d.len() <= limit
}

// distinctCap is the most distinct values a column may hold and still get
// a dictionary.
func distinctCap(opts Options) int {
	return max(opts.RowGroupRows, 1) / dictionaryShare
}

// countDistinct adds the rows the table holds now to its whole-layer
// distinct counts; collect calls it before each spill and at the end.
func (t *table) countDistinct(opts Options) {
	if t.distinct == nil {
		t.distinct = make([]distinct, len(t.cols))
	}
	for i, c := range t.cols {
		if c.f.Type != Bool && !c.f.Type.isList() {
			t.distinct[i].count(c, distinctCap(opts))
		}
	}
}
