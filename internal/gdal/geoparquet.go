package gdal

// Vector → GeoParquet 1.1: an OGR layer read through a few direct OGR calls
// (one cgo call per feature for the geometry, one per attribute) and handed
// to the pure-Go writer of internal/geoparquet as a FeatureSource.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <string.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <cpl_conv.h>
#include <cpl_error.h>

enum {
	GM_REPAIR = 1,  // MakeValid invalid geometries
	GM_MULTI = 2,   // promote single to multi of the same family
	GM_Z = 4,       // keep (and force) Z; otherwise 2D
	GM_SWAP = 8,    // swap x and y
};

// gm_next reads the next feature; NULL at the end or on a read error
// (*failed = 1 then, with the message in CPLGetLastErrorMsg).
static OGRFeatureH gm_next(OGRLayerH l, int *failed) {
	CPLErrorReset();
	OGRFeatureH f = OGR_L_GetNextFeature(l);
	*failed = (f == NULL && CPLGetLastErrorType() >= CE_Failure);
	return f;
}

// gm_wkb exports the feature's geometry as little-endian ISO WKB into a
// malloc'ed buffer (*out, *n); *out is NULL for a null or empty geometry.
// *repaired is set when MakeValid replaced an invalid geometry.
// Returns 0 on failure.
static int gm_wkb(OGRFeatureH f, int flags, unsigned char **out, size_t *n, int *repaired) {
	*out = NULL; *n = 0; *repaired = 0;
	OGRGeometryH g0 = OGR_F_GetGeometryRef(f);
	if (g0 == NULL || OGR_G_IsEmpty(g0)) return 1;
	OGRGeometryH g = OGR_G_Clone(g0);
	if (g == NULL) return 0;
	if ((flags & GM_REPAIR) && !OGR_G_IsValid(g)) {
		OGRGeometryH v = OGR_G_MakeValid(g);
		if (v == NULL) { OGR_G_DestroyGeometry(g); return 0; }
		OGR_G_DestroyGeometry(g);
		g = v;
		*repaired = 1;
	}
	if (flags & GM_MULTI) {
		switch (wkbFlatten(OGR_G_GetGeometryType(g))) {
		case wkbPoint: g = OGR_G_ForceToMultiPoint(g); break;
		case wkbLineString: g = OGR_G_ForceToMultiLineString(g); break;
		case wkbPolygon: g = OGR_G_ForceToMultiPolygon(g); break;
		default: break;
		}
	}
	OGR_G_SetMeasured(g, FALSE);
	OGR_G_Set3D(g, (flags & GM_Z) ? TRUE : FALSE);
	if (flags & GM_SWAP) OGR_G_SwapXY(g);
	size_t sz = OGR_G_WkbSizeEx(g);
	unsigned char *buf = malloc(sz ? sz : 1);
	if (buf == NULL) { OGR_G_DestroyGeometry(g); return 0; }
	if (OGR_G_ExportToIsoWkb(g, wkbNDR, buf) != OGRERR_NONE) {
		free(buf); OGR_G_DestroyGeometry(g); return 0;
	}
	OGR_G_DestroyGeometry(g);
	*out = buf; *n = sz;
	return 1;
}

static int gm_datetime(OGRFeatureH f, int i, int *y, int *m, int *d, int *h, int *mi, float *s, int *tz) {
	return OGR_F_GetFieldAsDateTimeEx(f, i, y, m, d, h, mi, s, tz);
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// layerHandle is the OGRLayerH of a godal Layer (a struct holding only the
// handle; TestLayerHandleLayout pins that).
func layerHandle(l godal.Layer) C.OGRLayerH {
	return *(*C.OGRLayerH)(unsafe.Pointer(&l))
}

// ogrField is how one OGR field is read and written.
type ogrField struct {
	index   C.int
	ogrType C.OGRFieldType
	out     geoparquet.FieldType
	asText  bool // unsupported OGR type written as OGR's string form
}

// geoParquetSchema maps the OGR fields of a layer to GeoParquet columns.
// Unsupported types (lists, Time) become strings and are returned in
// asText for a warning. The geometry column is "geometry" unless an
// attribute has that name.
func geoParquetSchema(l godal.Layer) (fields []geoparquet.Field, read []ogrField, geomCol string, asText []string) {
	defn := C.OGR_L_GetLayerDefn(layerHandle(l))
	n := int(C.OGR_FD_GetFieldCount(defn))
	used := map[string]bool{}
	for i := 0; i < n; i++ {
		fd := C.OGR_FD_GetFieldDefn(defn, C.int(i))
		name := C.GoString(C.OGR_Fld_GetNameRef(fd))
		if name == "" {
			name = fmt.Sprintf("field_%d", i+1)
		}
		for base, k := name, 2; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		f := ogrField{index: C.int(i), ogrType: C.OGR_Fld_GetType(fd)}
		switch f.ogrType {
		case C.OFTInteger:
			f.out = geoparquet.Int32
			if C.OGR_Fld_GetSubType(fd) == C.OFSTBoolean {
				f.out = geoparquet.Bool
			}
		case C.OFTInteger64:
			f.out = geoparquet.Int64
		case C.OFTReal:
			f.out = geoparquet.Float64
		case C.OFTString:
			f.out = geoparquet.String
		case C.OFTDate:
			f.out = geoparquet.Date
		case C.OFTDateTime:
			f.out = geoparquet.DateTime
		case C.OFTBinary:
			f.out = geoparquet.Binary
		default:
			f.out, f.asText = geoparquet.String, true
			asText = append(asText, fmt.Sprintf("%s (%s)", name, C.GoString(C.OGR_GetFieldTypeName(f.ogrType))))
		}
		// Every column is nullable: OGR drivers disagree on "unset" and
		// "null", and a NOT NULL declaration is not worth a refused file.
		fields = append(fields, geoparquet.Field{Name: name, Type: f.out, Nullable: true})
		read = append(read, f)
	}
	geomCol = "geometry"
	for k := 1; used[geomCol]; k++ {
		geomCol = fmt.Sprintf("geometry_%d", k)
	}
	return fields, read, geomCol, asText
}

// ogrSource is a geoparquet.FeatureSource over an OGR layer. It must be
// used on one locked OS thread (Convert holds one).
type ogrSource struct {
	ctx      context.Context
	layer    C.OGRLayerH
	fields   []ogrField
	flags    C.int
	name     string
	rows     int64
	repaired int64
	meter    *budget.VectorMeter // what the writer holds, against the budget
}

func (s *ogrSource) Next() (geoparquet.Feature, error) {
	if s.rows%4096 == 0 && s.rows > 0 {
		if err := s.ctx.Err(); err != nil {
			return geoparquet.Feature{}, err
		}
	}
	var failed C.int
	f := C.gm_next(s.layer, &failed)
	if f == nil {
		if failed != 0 {
			return geoparquet.Feature{}, fault.Data(fault.CorruptSource, "layer %q cannot be read after %d features: %s",
				s.name, s.rows, C.GoString(C.CPLGetLastErrorMsg()))
		}
		return geoparquet.Feature{}, io.EOF
	}
	defer C.OGR_F_Destroy(f)
	var out geoparquet.Feature
	var buf *C.uchar
	var n C.size_t
	var repaired C.int
	if C.gm_wkb(f, s.flags, &buf, &n, &repaired) == 0 {
		return out, fault.Data(fault.InvalidGeometry, "layer %q: the geometry of feature %d cannot be converted to WKB: %s",
			s.name, s.rows+1, C.GoString(C.CPLGetLastErrorMsg()))
	}
	if buf != nil {
		out.WKB = C.GoBytes(unsafe.Pointer(buf), C.int(n))
		C.free(unsafe.Pointer(buf))
	}
	if repaired != 0 {
		s.repaired++
	}
	out.Values = make([]any, len(s.fields))
	payload := int64(len(out.WKB))
	for i, fd := range s.fields {
		if C.OGR_F_IsFieldSetAndNotNull(f, fd.index) == 0 {
			continue
		}
		v := fieldValue(f, fd)
		switch x := v.(type) {
		case string:
			payload += int64(len(x))
		case []byte:
			payload += int64(len(x))
		}
		out.Values[i] = v
	}
	// The writer holds rows up to a spill: a feature's text and binary
	// attributes count with its geometry.
	if err := s.meter.Add(payload); err != nil {
		return geoparquet.Feature{}, err
	}
	s.rows++
	return out, nil
}

func fieldValue(f C.OGRFeatureH, fd ogrField) any {
	if fd.asText {
		return C.GoString(C.OGR_F_GetFieldAsString(f, fd.index))
	}
	switch fd.out {
	case geoparquet.Int32:
		return int32(C.OGR_F_GetFieldAsInteger(f, fd.index))
	case geoparquet.Bool:
		return C.OGR_F_GetFieldAsInteger(f, fd.index) != 0
	case geoparquet.Int64:
		return int64(C.OGR_F_GetFieldAsInteger64(f, fd.index))
	case geoparquet.Float64:
		return float64(C.OGR_F_GetFieldAsDouble(f, fd.index))
	case geoparquet.String:
		// Bytes as stored: the writer refuses text that is not UTF-8.
		return C.GoString(C.OGR_F_GetFieldAsString(f, fd.index))
	case geoparquet.Binary:
		var n C.int
		p := C.OGR_F_GetFieldAsBinary(f, fd.index, &n)
		return C.GoBytes(unsafe.Pointer(p), n)
	case geoparquet.Date, geoparquet.DateTime:
		var y, m, d, h, mi, tz C.int
		var sec C.float
		if C.gm_datetime(f, fd.index, &y, &m, &d, &h, &mi, &sec, &tz) == 0 {
			return nil
		}
		whole, frac := math.Modf(float64(sec))
		t := time.Date(int(y), time.Month(m), int(d), int(h), int(mi), int(whole),
			int(math.Round(frac*1e6))*1000, time.UTC)
		// OGR time zone flag: 100 is UTC, 100±k is UTC±k×15 min; 0 (unknown)
		// and 1 (local) are taken as UTC, the only deterministic choice.
		if tz > 1 && tz != 100 {
			t = t.Add(-time.Duration(int(tz)-100) * 15 * time.Minute)
		}
		return t
	}
	return nil
}

// writeGeoParquet writes one layer as GeoParquet 1.1 to dst.
func writeGeoParquet(ctx context.Context, ds *godal.Dataset, sc layerScan, dst string, r recipe.Recipe, rec *recorder) (recipe.Output, error) {
	lp := ds.LayerByName(sc.name)
	if lp == nil {
		return recipe.Output{}, fault.Data(fault.CorruptSource, "layer %q cannot be opened", sc.name)
	}
	l := *lp
	sr, assigned, err := layerSRS(l, r)
	if err != nil {
		return recipe.Output{}, err
	}
	if assigned {
		defer sr.Close()
	}
	crs, err := canonicalCRS(sr)
	if err != nil {
		return recipe.Output{}, fault.DataWrap(fault.InvalidCRS, err, "layer %q has a CRS that cannot be written as PROJJSON", sc.name)
	}
	fields, read, geomCol, asText := geoParquetSchema(l)
	for _, f := range asText {
		rec.warn(fmt.Sprintf("layer %q: field %s has no GeoParquet type; written as text", sc.name, f))
	}
	repair := sc.invalid > 0 && r.GeometryPolicy == recipe.GeometryRepair
	var flags C.int
	if repair {
		flags |= C.GM_REPAIR
	}
	if sc.promote || (repair && sc.family == "polygon") {
		flags |= C.GM_MULTI
	}
	if sc.promote {
		rec.warn(fmt.Sprintf("layer %q mixes single and multi geometries: promoted to multi", sc.name))
	}
	if sc.hasZ {
		flags |= C.GM_Z
	}
	if sc.hasM {
		rec.warn(fmt.Sprintf("layer %q has M values: dropped (GeoParquet output is 2D or 3D)", sc.name))
	}
	if crs.SwapXY {
		flags |= C.GM_SWAP
	}
	layer := geoparquet.Layer{Name: sc.name, Fields: fields, GeometryColumn: geomCol, IsCRS84: crs.IsCRS84()}
	if !layer.IsCRS84 {
		layer.CRSProjJSON = crs.PROJJSON
	}
	opts := geoparquet.DefaultOptions()
	opts.RowGroupRows = r.RowGroupRows
	opts.Compression = r.ParquetCompression
	opts.WriterVersion = r.ToolVersion
	lineage := r.Lineage()
	lineage.Layer = sc.name
	opts.Lineage = lineage.JSON()
	// Past SpillBytes the writer sorts through temporary files beside the
	// output (the work directory, on the disk sized for the job).
	opts.SpillBytes = budget.SpillBytes(r.MaxMemory)
	opts.TempDir = filepath.Dir(dst)

	os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return recipe.Output{}, fault.Systemic("gdal.GeoParquet: create output", err)
	}
	src := &ogrSource{ctx: ctx, layer: layerHandle(l), fields: read, flags: flags, name: sc.name,
		meter: budget.NewVectorMeter(sc.name, r)}
	// OGR and GEOS report through CPLError (MakeValid notices, read
	// errors); read errors are checked after each feature instead.
	pushQuiet()
	C.OGR_L_ResetReading(src.layer)
	st, err := geoparquet.Write(out, layer, src, opts)
	C.OGR_L_ResetReading(src.layer)
	popQuiet()
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fault.Systemic("gdal.GeoParquet: close output", cerr)
	}
	if err != nil {
		os.Remove(dst)
		return recipe.Output{}, geoParquetError(sc.name, err)
	}
	if st.Rows != sc.features {
		os.Remove(dst)
		return recipe.Output{}, fault.Data(fault.CorruptSource, "layer %q: %d features counted but %d read", sc.name, sc.features, st.Rows)
	}
	if src.repaired > 0 {
		rec.warn(fmt.Sprintf("layer %q: %d invalid geometries repaired (MakeValid)", sc.name, src.repaired))
	}
	info := recipe.Formats[recipe.FormatGeoParquet]
	return recipe.Output{
		Path: dst, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType,
		Kind: recipe.Vector, Layer: sc.name, Warnings: rec.list(),
		Stats: map[string]int64{
			"features": sc.features, "null_geometries": sc.nulls, "invalid_geometries": sc.invalid,
			"repaired": src.repaired, "bytes": st.Bytes, "row_groups": int64(st.RowGroups),
			"spills": int64(st.Spills),
		},
	}, nil
}

// geoParquetError maps a geoparquet.Write error onto the fault taxonomy.
func geoParquetError(layer string, err error) error {
	var d *fault.DataError
	var s *fault.SystemicError
	switch {
	case errors.As(err, &d) && d.Code == fault.BudgetExceeded:
		return d // its message says where; the writer's "reading feature N" adds nothing
	case errors.As(err, &d), errors.As(err, &s):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, geoparquet.ErrInvalidGeometry):
		return fault.DataWrap(fault.InvalidGeometry, err, "layer %q has a geometry that cannot be written as WKB", layer)
	case errors.Is(err, geoparquet.ErrInvalidValue):
		return fault.DataWrap(fault.SchemaMismatch, err,
			"layer %q has an attribute value GeoParquet cannot store (text must be UTF-8: declare the source encoding, e.g. a .cpg file beside a Shapefile, or re-encode it)", layer)
	case errors.Is(err, geoparquet.ErrInvalidLayer):
		return fault.DataWrap(fault.SchemaMismatch, err, "layer %q has a schema GeoParquet cannot store", layer)
	}
	// The output and the external sort's temporary files: a full disk
	// says so (DiskFull), like every other local write.
	if local := fault.FromOS("gdal.GeoParquet", err); fault.TierOf(local) != fault.TierUnknown {
		return local
	}
	return fault.Systemic("gdal.GeoParquet", err)
}

// layerNameOf reads the name through layerHandle (pins godal's layout).
func layerNameOf(l godal.Layer) string { return C.GoString(C.OGR_L_GetName(layerHandle(l))) }
