package geoparquet

// Size: GeoParquet validation: geo metadata, columns and covering checked into one report.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Report is the outcome of Validate. A file is valid when Problems is empty.
type Report struct {
	Problems      []string
	Version       string   // declared GeoParquet version
	PrimaryColumn string   // declared primary geometry column
	Rows          int64    // rows in the file
	RowGroups     int      // row groups in the file
	GeometryTypes []string // types found in the primary column's data (sorted unique)
	// BBox found in the primary column's data (xmin, ymin, xmax, ymax);
	// NaN when no geometry was decoded.
	BBox     [4]float64
	CRS84    bool // the primary column has no "crs" key (OGC:CRS84)
	Covering bool // the primary column declares a bbox covering
}

// OK reports whether no problem was found.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// maxProblemsPerKind caps how many problems of one kind are listed.
const maxProblemsPerKind = 10

type problems struct {
	list   []string
	counts map[string]int
	order  []string
}

func (p *problems) add(kind, format string, args ...any) {
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	if p.counts[kind] == 0 {
		p.order = append(p.order, kind)
	}
	p.counts[kind]++
	if p.counts[kind] <= maxProblemsPerKind {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problems) done() []string {
	out := p.list
	for _, k := range p.order {
		if n := p.counts[k]; n > maxProblemsPerKind {
			out = append(out, fmt.Sprintf("… and %d more %s problems", n-maxProblemsPerKind, k))
		}
	}
	return out
}

// errReaderAt remembers the first real I/O error, so Validate can tell a
// failing store (an error) from a broken file (a problem).
type errReaderAt struct {
	r   io.ReaderAt
	err error
}

func (e *errReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := e.r.ReadAt(p, off)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

var versionRE = regexp.MustCompile(`^1\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)

// Validate checks a GeoParquet file of size bytes read through r. Problems
// with the file are returned in Report.Problems; the error is only for I/O
// errors of r.
func Validate(r io.ReaderAt, size int64) (rep Report, err error) {
	er := &errReaderAt{r: r}
	var p problems
	rep.BBox = [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	defer func() {
		if v := recover(); v != nil {
			p.add("parquet", "the Parquet reader failed on this file: %v", v)
		}
		rep.Problems = p.done()
		if er.err != nil {
			err = fmt.Errorf("geoparquet.Validate: %w", er.err)
		}
	}()
	rdr, rerr := file.NewParquetReader(io.NewSectionReader(er, 0, size))
	if rerr != nil {
		p.add("parquet", "not a readable Parquet file: %v", rerr)
		return rep, nil
	}
	defer rdr.Close()
	md := rdr.MetaData()
	rep.Rows = md.NumRows
	rep.RowGroups = rdr.NumRowGroups()

	geoText := md.KeyValueMetadata().FindValue("geo")
	if geoText == nil {
		p.add("metadata", `no "geo" key in the Parquet file metadata: not a GeoParquet file`)
		return rep, nil
	}
	cols := checkGeoMetadata(*geoText, md.Schema, &rep, &p)
	for _, c := range cols {
		validateColumnData(rdr, c, &rep, &p)
	}
	return rep, nil
}

// geoColumnCheck is a declared geometry column that exists in the schema,
// ready for the data checks.
type geoColumnCheck struct {
	name      string
	primary   bool
	leaf      int // leaf column index of the WKB column
	types     map[string]bool
	bbox      []float64 // declared, nil if absent or invalid
	covLeaves []int     // xmin, ymin, xmax, ymax leaf indices; nil without a usable covering
}

func checkGeoMetadata(text string, sc *schema.Schema, rep *Report, p *problems) []geoColumnCheck {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &top); err != nil {
		p.add("metadata", `"geo" metadata is not a JSON object: %v`, err)
		return nil
	}
	if !jsonString(top["version"], &rep.Version) {
		p.add("metadata", `"geo".version is missing or not a string`)
	} else if !versionRE.MatchString(rep.Version) {
		p.add("metadata", `"geo".version %q is not a GeoParquet 1.x version`, rep.Version)
	}
	if !jsonString(top["primary_column"], &rep.PrimaryColumn) || rep.PrimaryColumn == "" {
		p.add("metadata", `"geo".primary_column is missing or not a non-empty string`)
	}
	var columns map[string]json.RawMessage
	if raw, ok := top["columns"]; !ok || json.Unmarshal(raw, &columns) != nil || columns == nil {
		p.add("metadata", `"geo".columns is missing or not an object`)
		return nil
	}
	if len(columns) == 0 {
		p.add("metadata", `"geo".columns is empty`)
	}
	if rep.PrimaryColumn != "" {
		if _, ok := columns[rep.PrimaryColumn]; !ok {
			p.add("metadata", `primary_column %q is not listed in "geo".columns`, rep.PrimaryColumn)
		}
	}
	names := make([]string, 0, len(columns))
	for n := range columns {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []geoColumnCheck
	for _, name := range names {
		c, ok := checkGeoColumn(name, columns[name], sc, rep, p)
		if ok {
			out = append(out, c)
		}
	}
	return out
}

func checkGeoColumn(name string, raw json.RawMessage, sc *schema.Schema, rep *Report, p *problems) (geoColumnCheck, bool) {
	c := geoColumnCheck{name: name, primary: name == rep.PrimaryColumn, types: map[string]bool{}}
	where := fmt.Sprintf(`"geo".columns[%q]`, name)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		p.add("metadata", "%s is not an object", where)
		return c, false
	}
	usable := true
	var enc string
	if !jsonString(m["encoding"], &enc) {
		p.add("metadata", "%s.encoding is missing or not a string", where)
		usable = false
	} else if enc != "WKB" {
		p.add("metadata", "%s.encoding is %q; only \"WKB\" is supported", where, enc)
		usable = false
	}
	var types []any
	if rawTypes, ok := m["geometry_types"]; !ok || json.Unmarshal(rawTypes, &types) != nil || types == nil {
		p.add("metadata", "%s.geometry_types is missing or not a list", where)
	} else {
		for _, t := range types {
			s, ok := t.(string)
			switch {
			case !ok:
				p.add("metadata", "%s.geometry_types has a non-string entry %v", where, t)
			case !validGeometryTypeName(s):
				p.add("metadata", "%s.geometry_types has an invalid name %q", where, s)
			case c.types[s]:
				p.add("metadata", "%s.geometry_types lists %q twice", where, s)
			default:
				c.types[s] = true
			}
		}
	}
	if rawCRS, ok := m["crs"]; !ok {
		if c.primary {
			rep.CRS84 = true
		}
	} else if t := bytes.TrimSpace(rawCRS); !bytes.Equal(t, []byte("null")) {
		var obj map[string]any
		if json.Unmarshal(t, &obj) != nil || obj == nil {
			p.add("metadata", "%s.crs is neither null nor a PROJJSON object", where)
		} else if _, ok := obj["type"].(string); !ok {
			p.add("metadata", "%s.crs is an object without a PROJJSON \"type\"", where)
		}
	}
	if rawBBox, ok := m["bbox"]; ok {
		var bb []float64
		if json.Unmarshal(rawBBox, &bb) != nil || (len(bb) != 4 && len(bb) != 6) {
			p.add("metadata", "%s.bbox is not a list of 4 or 6 numbers", where)
		} else {
			h := len(bb) / 2
			if bb[0] > bb[h] || bb[1] > bb[h+1] {
				p.add("metadata", "%s.bbox %v has min greater than max", where, bb)
			}
			c.bbox = bb
		}
	}
	if rawEdges, ok := m["edges"]; ok {
		var e string
		if !jsonString(rawEdges, &e) || (e != "planar" && e != "spherical") {
			p.add("metadata", "%s.edges must be \"planar\" or \"spherical\"", where)
		}
	}
	if rawOr, ok := m["orientation"]; ok {
		var o string
		if !jsonString(rawOr, &o) || o != "counterclockwise" {
			p.add("metadata", "%s.orientation must be \"counterclockwise\"", where)
		}
	}
	if rawEpoch, ok := m["epoch"]; ok {
		var e float64
		if json.Unmarshal(rawEpoch, &e) != nil {
			p.add("metadata", "%s.epoch is not a number", where)
		}
	}

	// The column itself: a top-level, non-repeated BYTE_ARRAY leaf.
	c.leaf = sc.ColumnIndexByName(name)
	if c.leaf < 0 || sc.Column(c.leaf).ColumnPath().String() != name {
		p.add("schema", "geometry column %q is not a top-level column of the Parquet schema", name)
		return c, false
	}
	col := sc.Column(c.leaf)
	if col.PhysicalType() != parquet.Types.ByteArray {
		p.add("schema", "geometry column %q is %s, not BYTE_ARRAY", name, col.PhysicalType())
		usable = false
	}
	if col.MaxRepetitionLevel() != 0 {
		p.add("schema", "geometry column %q is repeated", name)
		usable = false
	}

	if rawCov, ok := m["covering"]; ok {
		if c.primary {
			rep.Covering = true
		}
		c.covLeaves = checkCovering(where, rawCov, sc, p)
	}
	return c, usable
}

// checkCovering validates the covering declaration and returns the leaf
// indices of xmin, ymin, xmax, ymax, or nil when it is unusable.
func checkCovering(where string, raw json.RawMessage, sc *schema.Schema, p *problems) []int {
	var cov map[string]json.RawMessage
	if json.Unmarshal(raw, &cov) != nil || cov == nil {
		p.add("covering", "%s.covering is not an object", where)
		return nil
	}
	rawBBox, ok := cov["bbox"]
	if !ok {
		return nil // only bbox coverings are defined; others are ignored
	}
	var bb map[string][]string
	if json.Unmarshal(rawBBox, &bb) != nil || bb == nil {
		p.add("covering", "%s.covering.bbox is not an object of [column, field] pairs", where)
		return nil
	}
	var leaves []int
	group := ""
	for _, k := range []string{"xmin", "ymin", "xmax", "ymax"} {
		ref, ok := bb[k]
		if !ok || len(ref) != 2 || ref[1] != k {
			p.add("covering", "%s.covering.bbox.%s must be [\"<column>\", %q]", where, k, k)
			return nil
		}
		if group == "" {
			group = ref[0]
		} else if ref[0] != group {
			p.add("covering", "%s.covering.bbox names different columns (%q, %q)", where, group, ref[0])
			return nil
		}
		idx := sc.ColumnIndexByName(ref[0] + "." + k)
		if idx < 0 {
			p.add("covering", "covering column %q has no field %q in the Parquet schema", ref[0], k)
			return nil
		}
		col := sc.Column(idx)
		if col.MaxRepetitionLevel() != 0 || len(col.ColumnPath()) != 2 {
			p.add("covering", "covering field %s.%s is not a field of a top-level struct", ref[0], k)
			return nil
		}
		if pt := col.PhysicalType(); pt != parquet.Types.Double && pt != parquet.Types.Float {
			p.add("covering", "covering field %s.%s is %s, not FLOAT or DOUBLE", ref[0], k, pt)
			return nil
		}
		leaves = append(leaves, idx)
	}
	return leaves
}

func jsonString(raw json.RawMessage, dst *string) bool {
	return raw != nil && json.Unmarshal(raw, dst) == nil
}

// validateColumnData decodes every WKB of one geometry column and checks it
// against the declared geometry_types, bbox and covering.
func validateColumnData(rdr *file.Reader, c geoColumnCheck, rep *Report, p *problems) {
	found := map[string]bool{}
	var kinds [16]int8 // 2×WKB type (1 to 7, DecodeWKB) + Z: 0 not seen, 1 listed in geometry_types, 2 not listed
	ext := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	var row int64
	batch := readBatch(rdr)
	vals := make([]parquet.ByteArray, batch)
	defs := make([]int16, batch)
	maxDef := rdr.MetaData().Schema.Column(c.leaf).MaxDefinitionLevel()
	for g := 0; g < rdr.NumRowGroups(); g++ {
		rg := rdr.RowGroup(g)
		n := rg.NumRows()
		var cov [4][]float64
		var covValid []bool
		if c.covLeaves != nil {
			var err error
			if cov, covValid, err = readCovering(rg, c.covLeaves, n, rdr.MetaData().Schema); err != nil {
				p.add("covering", "row group %d: cannot read the covering column: %v", g, err)
				c.covLeaves = nil
			}
		}
		cr, err := rg.Column(c.leaf)
		if err != nil {
			p.add("parquet", "row group %d: cannot read column %q: %v", g, c.name, err)
			return
		}
		br, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return // type problem already reported
		}
		var inGroup int64
		for inGroup < n {
			total, nv, err := br.ReadBatch(min(batch, n-inGroup), vals, defs, nil)
			if err != nil {
				p.add("parquet", "row group %d: reading column %q: %v", g, c.name, err)
				return
			}
			if total == 0 {
				p.add("parquet", "row group %d: column %q has %d values for %d rows", g, c.name, inGroup, n)
				return
			}
			vi := 0
			for i := int64(0); i < total; i++ {
				r := row + inGroup + i
				if defs[i] < maxDef || vi >= nv {
					continue // null geometry
				}
				wkb := vals[vi]
				vi++
				gi, err := DecodeWKB(wkb)
				if err != nil {
					p.add("wkb", "row %d: %s does not decode as WKB: %v", r, c.name, err)
					continue
				}
				// Each kind's name and verdict once, not per row (the maps
				// and a Z name's concatenation were most of this loop).
				k := 2*gi.Type + b2i(gi.Z)
				if kinds[k] == 0 {
					name := gi.TypeName()
					found[name] = true
					kinds[k] = 1
					if len(c.types) > 0 && !c.types[name] {
						kinds[k] = 2
					}
				}
				if kinds[k] == 2 {
					p.add("geometry_types", "row %d: %s is a %s, which geometry_types %v does not list", r, c.name, gi.TypeName(), sortedSet(c.types))
				}
				if gi.Empty {
					continue
				}
				ext[0], ext[1] = min(ext[0], gi.MinX), min(ext[1], gi.MinY)
				ext[2], ext[3] = max(ext[2], gi.MaxX), max(ext[3], gi.MaxY)
				if bb := c.bbox; bb != nil {
					h := len(bb) / 2
					if gi.MinX < bb[0] || gi.MinY < bb[1] || gi.MaxX > bb[h] || gi.MaxY > bb[h+1] {
						p.add("bbox", "row %d: %s extent [%g %g %g %g] is outside the declared bbox %v", r, c.name, gi.MinX, gi.MinY, gi.MaxX, gi.MaxY, bb)
					}
				}
				if c.covLeaves != nil {
					k := inGroup + i
					if !covValid[k] {
						p.add("covering", "row %d: covering bbox is null but %s is not empty", r, c.name)
					} else if cov[0][k] > gi.MinX || cov[1][k] > gi.MinY || cov[2][k] < gi.MaxX || cov[3][k] < gi.MaxY {
						p.add("covering", "row %d: covering bbox [%g %g %g %g] does not contain the geometry's [%g %g %g %g]", r,
							cov[0][k], cov[1][k], cov[2][k], cov[3][k], gi.MinX, gi.MinY, gi.MaxX, gi.MaxY)
					}
				}
			}
			inGroup += total
		}
		row += n
	}
	if c.primary {
		rep.GeometryTypes = sortedSet(found)
		if ext[0] <= ext[2] {
			rep.BBox = ext
		}
	}
}

// readCovering reads the four covering leaves of a row group into per-row
// slices; valid is false where the struct (or a field) is null.
func readCovering(rg *file.RowGroupReader, leaves []int, n int64, sc *schema.Schema) ([4][]float64, []bool, error) {
	var out [4][]float64
	valid := make([]bool, n)
	for i := range valid {
		valid[i] = true
	}
	defs := make([]int16, n)
	for j, leaf := range leaves {
		maxDef := sc.Column(leaf).MaxDefinitionLevel()
		cr, err := rg.Column(leaf)
		if err != nil {
			return out, nil, err
		}
		dense := make([]float64, n)
		var got int64
		var nv int
		switch r := cr.(type) {
		case *file.Float64ColumnChunkReader:
			for got < n {
				t, v, err := r.ReadBatch(n-got, dense[nv:], defs[got:], nil)
				if err != nil {
					return out, nil, err
				}
				if t == 0 {
					break
				}
				got += t
				nv += v
			}
		case *file.Float32ColumnChunkReader:
			f32 := make([]float32, n)
			for got < n {
				t, v, err := r.ReadBatch(n-got, f32[nv:], defs[got:], nil)
				if err != nil {
					return out, nil, err
				}
				if t == 0 {
					break
				}
				got += t
				nv += v
			}
			for i := 0; i < nv; i++ {
				dense[i] = float64(f32[i])
			}
		default:
			return out, nil, errors.New("covering field is not FLOAT or DOUBLE")
		}
		if got != n {
			return out, nil, fmt.Errorf("covering field has %d values for %d rows", got, n)
		}
		vals := make([]float64, n)
		vi := 0
		for i := int64(0); i < n; i++ {
			if defs[i] < maxDef {
				valid[i] = false
				vals[i] = math.NaN()
				continue
			}
			vals[i] = dense[vi]
			vi++
		}
		out[j] = vals
	}
	return out, valid, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String formats the report for people.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GeoParquet %s, %d rows in %d row groups, primary column %q, types %v", r.Version, r.Rows, r.RowGroups, r.PrimaryColumn, r.GeometryTypes)
	if len(r.Problems) == 0 {
		b.WriteString(": valid")
		return b.String()
	}
	fmt.Fprintf(&b, ": %d problem(s)", len(r.Problems))
	for _, p := range r.Problems {
		b.WriteString("\n  - " + p)
	}
	return b.String()
}
