package geoparquet

// Size: the canonical feature encoding and the file digest that reads it back column by column must encode alike.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Digest is an order-independent digest of a multiset of features: the
// sum, modulo 2^256, of each feature's SHA-256 over its canonical encoding
// (CanonicalFeature), and the count. The writer reorders rows along a
// Hilbert curve, so a digest that does not depend on order lets a source
// and its output be compared in one streaming pass each, in constant
// memory. Two equal multisets give equal digests; a changed byte in any
// geometry or value changes the sum (short of a SHA-256 collision).
type Digest struct {
	sum [4]uint64 // little-endian limbs
	N   int64
	buf []byte
}

// Add adds one feature: its geometry WKB (nil for a null geometry) and
// its attribute values typed as Write takes them.
func (d *Digest) Add(wkb []byte, types []FieldType, values []any) error {
	var err error
	d.buf, err = CanonicalFeature(d.buf[:0], wkb, types, values)
	if err != nil {
		return err
	}
	h := sha256.Sum256(d.buf)
	var carry uint64
	for i := range d.sum {
		limb := binary.LittleEndian.Uint64(h[8*i:])
		s := d.sum[i] + limb
		c1 := b2u(s < limb)
		s2 := s + carry
		c2 := b2u(s2 < s)
		d.sum[i], carry = s2, c1+c2
	}
	d.N++
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Equal reports two digests of the same multiset.
func (d Digest) Equal(o Digest) bool { return d.sum == o.sum && d.N == o.N }

// String is the sum as 64 hex digits.
func (d Digest) String() string {
	var b [32]byte
	for i, l := range d.sum {
		binary.BigEndian.PutUint64(b[8*(3-i):], l)
	}
	return hex.EncodeToString(b[:])
}

// CanonicalFeature appends the canonical encoding of one feature to dst:
// the geometry (a 0 byte for null, else 1, its length and its bytes),
// then every value with AppendCanonical. It is the one definition of a
// feature's canonical form: a source and its output are compared through
// it.
func CanonicalFeature(dst, wkb []byte, types []FieldType, values []any) ([]byte, error) {
	if len(values) != len(types) {
		return dst, fmt.Errorf("%d values for %d fields", len(values), len(types))
	}
	if len(wkb) == 0 {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(wkb)))
		dst = append(dst, wkb...)
	}
	var err error
	for i, v := range values {
		if dst, err = AppendCanonical(dst, types[i], v); err != nil {
			return dst, fmt.Errorf("field %d: %w", i+1, err)
		}
	}
	return dst, nil
}

// AppendCanonical appends the canonical encoding of one attribute value of
// type t: a 0 byte for null; else a 1 byte and the value as the column
// holds it: integers as int64, floats as their IEEE bits, booleans as one
// byte, text and binary as length and bytes, and Date and DateTime both
// as microseconds since 1970 UTC (a Date at midnight of its civil date),
// so that a date read back as a date-time compares equal.
func AppendCanonical(dst []byte, t FieldType, v any) ([]byte, error) {
	if v == nil {
		return append(dst, 0), nil
	}
	dst = append(dst, 1)
	switch t {
	case Int32, Int64:
		n, ok := toInt64(v)
		if !ok {
			return dst, fmt.Errorf("%T is not an integer", v)
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(n)), nil
	case Float64:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			n, ok := toInt64(v)
			if !ok {
				return dst, fmt.Errorf("%T is not a number", v)
			}
			f = float64(n)
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return dst, fmt.Errorf("%T is not a bool", v)
		}
		return append(dst, byte(b2u(b))), nil
	case Date, DateTime, LocalDateTime:
		var us int64
		switch x := v.(type) {
		case time.Time:
			if t == Date {
				y, m, d := x.Date()
				x = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
			}
			us = x.UnixMicro()
		case WallTime:
			// Written as its reading taken as UTC, in either column type.
			if t == Date {
				y, m, d := x.Wall.Date()
				us = time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMicro()
			} else {
				us = wallMicros(x.Wall)
			}
		default:
			return dst, fmt.Errorf("%T is not a time.Time", v)
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(us)), nil
	case Time:
		d, ok := v.(time.Duration)
		if !ok {
			return dst, fmt.Errorf("%T is not a time.Duration", v)
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(d.Milliseconds())), nil
	case Int32List, Int64List, Float64List, StringList:
		return appendCanonicalList(dst, t, v)
	case String, Binary:
		var b []byte
		switch x := v.(type) {
		case string:
			b = []byte(x)
		case []byte:
			b = x
		default:
			return dst, fmt.Errorf("%T is not text or bytes", v)
		}
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(b)))
		return append(dst, b...), nil
	}
	return dst, fmt.Errorf("field type %v", t)
}

// appendCanonicalList appends a list value: its length, then each
// element as AppendCanonical encodes the element type (integers as int64
// whether given as []int32 or []int64).
func appendCanonicalList(dst []byte, t FieldType, v any) ([]byte, error) {
	elem := map[FieldType]FieldType{Int32List: Int64, Int64List: Int64, Float64List: Float64, StringList: String}[t]
	var items []any
	switch x := v.(type) {
	case []int32:
		for _, e := range x {
			items = append(items, int64(e))
		}
	case []int64:
		for _, e := range x {
			items = append(items, e)
		}
	case []float64:
		for _, e := range x {
			items = append(items, e)
		}
	case []float32:
		for _, e := range x {
			items = append(items, float64(e))
		}
	case []string:
		for _, e := range x {
			items = append(items, e)
		}
	case []any:
		items = x
	default:
		return dst, fmt.Errorf("%T is not a list", v)
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(items)))
	var err error
	for _, e := range items {
		if dst, err = AppendCanonical(dst, elem, e); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// FileDigest reads every row of a GeoParquet file that Write wrote (its
// primary geometry and every attribute column of info.Fields), in
// batches, and returns their Digest and the rows whose primary geometry
// is null (counted by definition level, as ReadInfo counts them), so that
// info may come from the footer alone (ReadFooterInfo) and the geometry
// column is read once.
func FileDigest(r io.ReaderAt, size int64, info Info) (d Digest, nulls int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("geoparquet.FileDigest: the Parquet reader failed: %v", v)
		}
	}()
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return d, 0, fmt.Errorf("geoparquet.FileDigest: %w", err)
	}
	defer rdr.Close()
	if nulls, err = fileDigest(rdr, info, &d); err != nil {
		return d, 0, fmt.Errorf("geoparquet.FileDigest: %w", err)
	}
	return d, nulls, nil
}

// colCursor reads one flat column of a row group in batches.
type colCursor struct {
	typ    FieldType
	rd     file.ColumnChunkReader
	maxDef int16
	defs   []int16
	i32    []int32
	i64    []int64
	f64    []float64
	bools  []bool
	bytes  []parquet.ByteArray
	vals   []any // this batch's values, nil for null
	nulls  int64 // values read that are null (a flat column's)
	// A LIST column's levels are read ahead of its rows: a row ends only
	// where the next begins (repetition level 0) or the column ends.
	list *listState
}

// listState is a LIST column's read-ahead: the levels and values of the
// last batch not yet consumed, and the row being assembled.
type listState struct {
	reps            []int16
	li, ln, vi      int // next level, levels buffered, next value
	row             []any
	null, open, eof bool
}

// fill reads the next n rows of the column into c.vals.
func (c *colCursor) fill(n int) error {
	c.vals = c.vals[:0]
	if c.list != nil {
		return c.fillList(n)
	}
	for len(c.vals) < n {
		want := int64(n - len(c.vals))
		total, nv, err := c.readBatch(want, nil)
		if err != nil {
			return err
		}
		if total == 0 {
			return errors.New("column ends early")
		}
		vi := 0
		for _, dl := range c.defs[:total] {
			if dl < c.maxDef || vi >= nv {
				c.vals = append(c.vals, nil)
				c.nulls++
				continue
			}
			c.vals = append(c.vals, c.value(vi))
			vi++
		}
	}
	return nil
}

// readBatch reads up to want levels of the column into c.defs (and, for a
// LIST column, reps) and their values into the typed buffer: the levels
// read and the values among them.
func (c *colCursor) readBatch(want int64, reps []int16) (total int64, nv int, err error) {
	defs := c.defs[:want]
	switch rd := c.rd.(type) {
	case *file.Int32ColumnChunkReader:
		return rd.ReadBatch(want, c.i32[:want], defs, reps)
	case *file.Int64ColumnChunkReader:
		return rd.ReadBatch(want, c.i64[:want], defs, reps)
	case *file.Float64ColumnChunkReader:
		return rd.ReadBatch(want, c.f64[:want], defs, reps)
	case *file.BooleanColumnChunkReader:
		return rd.ReadBatch(want, c.bools[:want], defs, reps)
	case *file.ByteArrayColumnChunkReader:
		return rd.ReadBatch(want, c.bytes[:want], defs, reps)
	}
	return 0, 0, fmt.Errorf("column reader %T", c.rd)
}

// fillList reads the next n rows of a LIST column (three-level: a null
// list, an empty one, a null element and an element have definition
// levels maxDef-3 or less, maxDef-2, maxDef-1 and maxDef).
func (c *colCursor) fillList(n int) error {
	ls := c.list
	emit := func() {
		if ls.null {
			c.vals = append(c.vals, nil)
		} else {
			c.vals = append(c.vals, append([]any{}, ls.row...))
		}
		ls.open = false
	}
	for len(c.vals) < n {
		if ls.li == ls.ln {
			if ls.eof {
				if ls.open {
					emit()
					continue
				}
				return errors.New("column ends early")
			}
			total, _, err := c.readBatch(int64(len(c.defs)), ls.reps)
			if err != nil {
				return err
			}
			if total == 0 {
				ls.eof = true
				continue
			}
			ls.li, ls.ln, ls.vi = 0, int(total), 0
		}
		d, r := c.defs[ls.li], ls.reps[ls.li]
		ls.li++
		if r == 0 {
			if ls.open {
				emit()
			}
			ls.open, ls.null, ls.row = true, false, ls.row[:0]
		}
		switch {
		case d < c.maxDef-2:
			ls.null = true
		case d == c.maxDef-2:
			// An empty list.
		case d == c.maxDef-1:
			ls.row = append(ls.row, nil)
		default:
			ls.row = append(ls.row, c.element(ls.vi))
			ls.vi++
		}
	}
	return nil
}

// element is the vi-th element value of a LIST column's last batch.
func (c *colCursor) element(vi int) any {
	switch c.typ {
	case Int32List:
		return int64(c.i32[vi])
	case Int64List:
		return c.i64[vi]
	case Float64List:
		return c.f64[vi]
	case StringList:
		return string(c.bytes[vi])
	}
	return nil
}

// value is the vi-th value of the last batch, typed as Write takes it.
func (c *colCursor) value(vi int) any {
	switch c.typ {
	case Int32:
		return c.i32[vi]
	case Date:
		return time.Unix(int64(c.i32[vi])*86400, 0).UTC()
	case Int64:
		return c.i64[vi]
	case DateTime, LocalDateTime:
		return time.UnixMicro(c.i64[vi]).UTC()
	case Time:
		return time.Duration(c.i32[vi]) * time.Millisecond
	case Float64:
		return c.f64[vi]
	case Bool:
		return c.bools[vi]
	case String:
		return string(c.bytes[vi])
	case Binary:
		// A copy: the reader's buffers are reused by the next batch.
		return append([]byte(nil), c.bytes[vi]...)
	}
	return nil
}

func fileDigest(rdr *file.Reader, info Info, d *Digest) (nulls int64, err error) {
	md := rdr.MetaData()
	batch := int(readBatch(rdr))
	// A plain table (ReadTableInfo) has no geometry column: its rows
	// digest as features with a null geometry, as the writer's input did.
	names := []string{info.GeometryColumn}
	types := []FieldType{Binary}
	geom := info.GeometryColumn != ""
	for _, f := range info.Fields {
		if f.Type == 0 {
			return 0, fmt.Errorf("column %q is of a type Write does not write", f.Name)
		}
		names = append(names, f.Name)
		types = append(types, f.Type)
	}
	leaves := make([]int, len(names))
	for i, n := range names {
		if i == 0 && !geom {
			continue
		}
		if types[i].isList() {
			n += ".list.element"
		}
		if leaves[i] = md.Schema.ColumnIndexByName(n); leaves[i] < 0 {
			return 0, fmt.Errorf("no column %q", n)
		}
	}
	cs := make([]*colCursor, len(names))
	for i := range cs {
		cs[i] = &colCursor{typ: types[i], maxDef: md.Schema.Column(leaves[i]).MaxDefinitionLevel(),
			defs: make([]int16, batch), vals: make([]any, 0, batch)}
		switch types[i] {
		case Int32, Date, Time, Int32List:
			cs[i].i32 = make([]int32, batch)
		case Int64, DateTime, LocalDateTime, Int64List:
			cs[i].i64 = make([]int64, batch)
		case Float64, Float64List:
			cs[i].f64 = make([]float64, batch)
		case Bool:
			cs[i].bools = make([]bool, batch)
		default:
			cs[i].bytes = make([]parquet.ByteArray, batch)
		}
	}
	values := make([]any, len(names)-1)
	for g := 0; g < rdr.NumRowGroups(); g++ {
		rg := rdr.RowGroup(g)
		for i, c := range cs {
			if i == 0 && !geom {
				continue
			}
			rd, err := rg.Column(leaves[i])
			if err != nil {
				return 0, fmt.Errorf("row group %d: %w", g, err)
			}
			c.rd = rd
			if c.typ.isList() {
				c.list = &listState{reps: make([]int16, len(c.defs))}
			}
		}
		for left := rg.NumRows(); left > 0; {
			n := int(min(int64(batch), left))
			for i, c := range cs {
				if i == 0 && !geom {
					c.vals = c.vals[:0]
					for range n {
						c.vals = append(c.vals, nil)
					}
					continue
				}
				if err := c.fill(n); err != nil {
					return 0, fmt.Errorf("row group %d, column %q: %w", g, names[i], err)
				}
			}
			for row := 0; row < n; row++ {
				var wkb []byte
				if v, ok := cs[0].vals[row].([]byte); ok {
					wkb = v
				}
				for i := range values {
					values[i] = cs[i+1].vals[row]
				}
				if err := d.Add(wkb, types[1:], values); err != nil {
					return 0, fmt.Errorf("row group %d: %w", g, err)
				}
			}
			left -= int64(n)
		}
	}
	return cs[0].nulls, nil
}
