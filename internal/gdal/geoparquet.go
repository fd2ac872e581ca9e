package gdal

// Size: the OGR to GeoParquet writer: field mapping, the feature source and the write loop share one layer's schema.

// Vector → GeoParquet 1.1: an OGR layer read through direct OGR calls (one
// cgo call per feature: geometry and the common attribute types; dates,
// lists and binary one more each) and handed to the pure-Go writer of
// internal/geoparquet as a FeatureSource. A layer of one declared linear
// type is written without a scan first, each feature checked as it is
// read (docs/decisions/0114).

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <string.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <cpl_conv.h>
#include <cpl_error.h>
#include "ogrvalues.h"

enum {
	GM_REPAIR = 1,  // MakeValid invalid geometries
	GM_MULTI = 2,   // promote single to multi of the same family
	GM_Z = 4,       // keep (and force) Z; otherwise 2D
	GM_SWAP = 8,    // swap x and y
	GM_LINEAR = 16, // linearise curves (otherwise a curve is refused)
	GM_FAM_POINT = 32, GM_FAM_LINE = 64, GM_FAM_POLYGON = 128, // the layer's family, kept by a repair
	GM_LINEWORK = 2048, // repair with GEOS's default method, as where STRUCTURE is missing
};

// gm_family is the family (GM_FAM_*) of a linear geometry type, 0 for a
// collection or anything else.
static int gm_family(OGRwkbGeometryType t) {
	switch (wkbFlatten(t)) {
	case wkbPoint: case wkbMultiPoint: return GM_FAM_POINT;
	case wkbLineString: case wkbMultiLineString: return GM_FAM_LINE;
	case wkbPolygon: case wkbMultiPolygon: return GM_FAM_POLYGON;
	default: return 0;
	}
}

// gm_keep_family adds to multi the parts of g of family fam (recursing
// into collections) and counts in *dropped the parts of another family.
static void gm_keep_family(OGRGeometryH g, int fam, OGRGeometryH multi, int *dropped) {
	OGRwkbGeometryType t = wkbFlatten(OGR_G_GetGeometryType(g));
	if (OGR_G_IsEmpty(g)) return;
	if (t == wkbPoint || t == wkbLineString || t == wkbPolygon) {
		if (gm_family(t) == fam) OGR_G_AddGeometry(multi, g);
		else (*dropped)++;
		return;
	}
	int n = OGR_G_GetGeometryCount(g);
	for (int i = 0; i < n; i++) gm_keep_family(OGR_G_GetGeometryRef(g, i), fam, multi, dropped);
}

// gm_make_valid makes g valid without changing its family: METHOD=STRUCTURE
// (GDAL 3.4 with GEOS 3.10 or later) keeps polygons polygons, GEOS's
// default method where STRUCTURE is not available; parts of another
// dimension the repair leaves (a line beside the polygons) are dropped and
// counted in *dropped. Takes ownership of g.
static OGRGeometryH gm_make_valid(OGRGeometryH g, int fam, int linework, int *dropped) {
	char *opts[] = {"METHOD=STRUCTURE", NULL};
	OGRGeometryH v = linework ? NULL : OGR_G_MakeValidEx(g, opts);
	if (v == NULL) v = OGR_G_MakeValid(g);
	OGR_G_DestroyGeometry(g);
	if (v == NULL || fam == 0 || gm_family(OGR_G_GetGeometryType(v)) == fam) return v;
	OGRwkbGeometryType mt = fam == GM_FAM_POINT ? wkbMultiPoint : fam == GM_FAM_LINE ? wkbMultiLineString : wkbMultiPolygon;
	OGRGeometryH multi = OGR_G_CreateGeometry(mt);
	if (OGR_G_Is3D(v)) OGR_G_Set3D(multi, TRUE);
	gm_keep_family(v, fam, multi, dropped);
	OGR_G_DestroyGeometry(v);
	return multi;
}

// gm_gp_reader reads the features handed to the GeoParquet writer, one
// cgo call per feature (gm_gp_next): the geometry exported into a buffer
// reused from feature to feature, the values of the common field types
// read in the same call (ogrvalues.h).
typedef struct {
	OGRFeatureH f; // the feature read last (owned)
	unsigned char *wkb;
	size_t cap, len; // len 0: no geometry (null or empty)
	int flags;       // GM_*
	double step;     // GM_LINEAR's arc step, degrees
	int repaired, dropped; // of the last feature: see gm_make_valid
	// The one-read check (docs/decisions/0114): when check is set, every
	// geometry that is not null or empty must be of type declared, its Z
	// and M too, and valid.
	int check;
	OGRwkbGeometryType declared;
	long long size; // the last feature's source geometry WKB size (check only)
	// The largest size the scan's meter accepts: a larger geometry is not
	// validated, the scan refuses it first (check only).
	long long max_size;
	int n;          // fields
	const int *index, *kind;
	gm_value *v;
} gm_gp_reader;

// gm_gp_export writes g's little-endian ISO WKB as the flags say into the
// reader's buffer: linearised (GM_LINEAR), made valid (GM_REPAIR), forced
// to multi (GM_MULTI), with Z as GM_Z says and without M, x and y swapped
// (GM_SWAP). The geometry itself is exported when the flags leave it as it
// is, a changed copy otherwise. Returns 1, 0 on failure, 2 for a curve
// geometry without GM_LINEAR.
static int gm_gp_export(gm_gp_reader *r, OGRGeometryH g0) {
	int flags = r->flags;
	OGRGeometryH own = NULL;
	if (OGR_G_HasCurveGeometry(g0, FALSE)) {
		if (!(flags & GM_LINEAR)) return 2;
		own = OGR_G_GetLinearGeometry(g0, r->step, NULL);
		if (own == NULL) return 0;
	}
	if ((flags & GM_REPAIR) && !OGR_G_IsValid(own ? own : g0)) {
		if (own == NULL && (own = OGR_G_Clone(g0)) == NULL) return 0;
		own = gm_make_valid(own, flags & (GM_FAM_POINT | GM_FAM_LINE | GM_FAM_POLYGON), flags & GM_LINEWORK, &r->dropped);
		if (own == NULL) return 0;
		r->repaired = 1;
	}
	OGRGeometryH g = own ? own : g0;
	OGRwkbGeometryType t = wkbFlatten(OGR_G_GetGeometryType(g));
	int multi = (flags & GM_MULTI) && (t == wkbPoint || t == wkbLineString || t == wkbPolygon);
	if (multi || !OGR_G_Is3D(g) != !(flags & GM_Z) || OGR_G_IsMeasured(g) || (flags & GM_SWAP)) {
		if (own == NULL && (own = OGR_G_Clone(g0)) == NULL) return 0;
		if (multi) {
			switch (t) {
			case wkbPoint: own = OGR_G_ForceToMultiPoint(own); break;
			case wkbLineString: own = OGR_G_ForceToMultiLineString(own); break;
			default: own = OGR_G_ForceToMultiPolygon(own); break;
			}
		}
		OGR_G_SetMeasured(own, FALSE);
		OGR_G_Set3D(own, (flags & GM_Z) ? TRUE : FALSE);
		if (flags & GM_SWAP) OGR_G_SwapXY(own);
		g = own;
	}
	return gm_export_wkb(g, own, &r->wkb, &r->cap, &r->len);
}

// gm_gp_next reads the next feature (destroying the last): 1 read, 0 at
// the end, -1 a read error (message in CPLGetLastErrorMsg), 2 a curve
// geometry without GM_LINEAR, 3 not as declared (check), 4 the geometry
// cannot be exported.
static int gm_gp_next(gm_gp_reader *r, OGRLayerH l) {
	if (r->f != NULL) { OGR_F_Destroy(r->f); r->f = NULL; }
	CPLErrorReset();
	OGRFeatureH f = OGR_L_GetNextFeature(l);
	if (f == NULL) return CPLGetLastErrorType() >= CE_Failure ? -1 : 0;
	r->f = f;
	r->len = 0; r->repaired = 0; r->dropped = 0; r->size = 0;
	OGRGeometryH g = OGR_F_GetGeometryRef(f);
	if (g != NULL && r->check) {
		// As scanLayer counts: an empty geometry's size too.
		r->size = (long long)OGR_G_WkbSizeEx(g);
		if (r->size > r->max_size) return 3;
		if (!OGR_G_IsEmpty(g)) {
			OGRwkbGeometryType gt = OGR_G_GetGeometryType(g), t = r->declared;
			if (OGR_GT_Flatten(gt) != OGR_GT_Flatten(t) || OGR_GT_HasZ(gt) != OGR_GT_HasZ(t) || OGR_GT_HasM(gt) != OGR_GT_HasM(t)) return 3;
			if (!OGR_G_IsValid(g)) return 3;
		}
	}
	if (g != NULL && !OGR_G_IsEmpty(g)) {
		int e = gm_gp_export(r, g);
		if (e != 1) return e == 2 ? 2 : 4;
	}
	gm_read_values(f, r->n, r->index, r->kind, r->v);
	return 1;
}

static void gm_gp_close(gm_gp_reader *r) {
	if (r->f != NULL) OGR_F_Destroy(r->f);
	free(r->wkb);
	r->f = NULL; r->wkb = NULL;
}

// gm_has_curve reports a geometry with arcs (CircularString, CompoundCurve,
// CurvePolygon, MultiCurve, MultiSurface, or a collection holding one).
static int gm_has_curve(OGRGeometryH g) { return OGR_G_HasCurveGeometry(g, FALSE); }

static int gm_datetime(OGRFeatureH f, int i, int *y, int *m, int *d, int *h, int *mi, float *s, int *tz) {
	return OGR_F_GetFieldAsDateTimeEx(f, i, y, m, d, h, mi, s, tz);
}

// gm_string_at is element k of a StringList (OGR returns a
// NULL-terminated char**).
static const char *gm_string_at(char **l, int k) { return l[k]; }

static int gm_string_count(char **l) {
	int n = 0;
	if (l != NULL) while (l[n] != NULL) n++;
	return n;
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
	"reflect"
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

// columnType is the Parquet column an OGR field type and subtype are
// written as (docs/fidelity.md, "Values kept"); note says what of the
// value's type the column does not keep ("" when it keeps everything), for
// a warning; asText marks the (deprecated) types written as OGR's text.
func columnType(t C.OGRFieldType, sub C.OGRFieldSubType) (out geoparquet.FieldType, asText bool, note string) {
	switch t {
	case C.OFTInteger:
		if sub == C.OFSTBoolean {
			return geoparquet.Bool, false, ""
		}
		return geoparquet.Int32, false, "" // Int16 too: the same values
	case C.OFTInteger64:
		return geoparquet.Int64, false, ""
	case C.OFTReal:
		return geoparquet.Float64, false, "" // Float32 too: widening is exact
	case C.OFTString:
		return geoparquet.String, false, "" // JSON and UUID as their text
	case C.OFTDate:
		return geoparquet.Date, false, ""
	case C.OFTTime:
		return geoparquet.Time, false, ""
	case C.OFTDateTime:
		return geoparquet.DateTime, false, ""
	case C.OFTBinary:
		return geoparquet.Binary, false, ""
	case C.OFTIntegerList:
		if sub == C.OFSTBoolean {
			return geoparquet.Int32List, false, "a list of booleans, written as a list of 0/1 integers"
		}
		return geoparquet.Int32List, false, ""
	case C.OFTInteger64List:
		return geoparquet.Int64List, false, ""
	case C.OFTRealList:
		return geoparquet.Float64List, false, ""
	case C.OFTStringList:
		return geoparquet.StringList, false, ""
	}
	// WideString and WideStringList: deprecated, made by no driver.
	return geoparquet.String, true, "no Parquet type: written as OGR's text form"
}

// geoParquetSchema maps the OGR fields of a layer to GeoParquet columns.
// notes names, for a warning, each field whose type the column does not
// keep in full (columnType). The geometry column is "geometry" unless an
// attribute has that name.
func geoParquetSchema(l godal.Layer) (fields []geoparquet.Field, read []ogrField, geomCol string, notes []string) {
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
		var note string
		f.out, f.asText, note = columnType(f.ogrType, C.OGR_Fld_GetSubType(fd))
		if note != "" {
			notes = append(notes, fmt.Sprintf("field %q (%s): %s", name, C.GoString(C.OGR_GetFieldTypeName(f.ogrType)), note))
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
	return fields, read, geomCol, notes
}

// ogrSource is a geoparquet.FeatureSource over an OGR layer. It must be
// used on one locked OS thread (Convert holds one), between open and
// close.
type ogrSource struct {
	ctx      context.Context
	layer    C.OGRLayerH
	fields   []ogrField
	name     string
	rows     int64
	repaired int64
	dropped  int64               // features whose repair dropped parts of another family
	meter    *budget.VectorMeter // what the writer holds, against the budget (nil: nothing is held)
	// digest is the multiset digest of the features as handed to the
	// writer, compared with the file's (geoParquetFidelity).
	digest geoparquet.Digest
	types  []geoparquet.FieldType
	// corrupt, when set (tests only), alters a feature after it was
	// digested: the fidelity check must then fail.
	corrupt func(*geoparquet.Feature)
	// zonedTimes counts, per field, Time values whose time zone flag was
	// not kept (a time of day has no zone in Parquet).
	zonedTimes map[int]int64
	// scanMeter, set in the one-read path (docs/decisions/0114), is the
	// scan's meter: each feature is checked against the layer's declared
	// type as scanLayer would check it, and nulls counts the features
	// without geometry (null or empty).
	scanMeter *budget.VectorMeter
	nulls     int64

	r      *C.gm_gp_reader // C memory: the reader keeps it between calls
	cvals  *ogrValues      // C memory: the reader's field index, kinds and values
	values []any           // handed to the writer, reused: it copies what it keeps
}

// open allocates the reader of s's fields, exporting geometries as flags
// say (step: GM_LINEAR's) and, with declared non-zero, checking each
// feature against it.
func (s *ogrSource) open(flags C.int, step float64, declared C.OGRwkbGeometryType) error {
	s.cvals = newOGRValues(s.fields)
	s.r = (*C.gm_gp_reader)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gm_gp_reader{}))))
	if s.cvals == nil || s.r == nil {
		s.close()
		return fault.Systemic("gdal.GeoParquet", fmt.Errorf("out of memory"))
	}
	s.r.flags, s.r.step = flags, C.double(step)
	if declared != 0 {
		s.r.check, s.r.declared = 1, declared
	}
	s.r.n, s.r.index, s.r.kind, s.r.v = s.cvals.pointers()
	s.values = make([]any, len(s.fields))
	return nil
}

func (s *ogrSource) close() {
	if s.r != nil {
		C.gm_gp_close(s.r)
		C.free(unsafe.Pointer(s.r))
	}
	s.cvals.free()
	s.r, s.cvals = nil, nil
}

func (s *ogrSource) Next() (geoparquet.Feature, error) {
	if s.rows%4096 == 0 && s.rows > 0 {
		if err := s.ctx.Err(); err != nil {
			return geoparquet.Feature{}, err
		}
	}
	var out geoparquet.Feature
	if s.scanMeter != nil {
		s.r.max_size = C.longlong(s.scanMeter.MaxPayload())
	}
	switch C.gm_gp_next(s.r, s.layer) {
	case 0:
		return out, io.EOF
	case -1:
		return out, fault.Data(fault.CorruptSource, "layer %q cannot be read after %d features: %s",
			s.name, s.rows, C.GoString(C.CPLGetLastErrorMsg()))
	case 2:
		return out, curveError(s.name, 1)
	case 3:
		return out, errNotAsDeclared
	case 4:
		return out, fault.Data(fault.InvalidGeometry, "layer %q: the geometry of feature %d cannot be converted to WKB: %s",
			s.name, s.rows+1, C.GoString(C.CPLGetLastErrorMsg()))
	}
	if s.scanMeter != nil {
		if err := s.scanMeter.Add(int64(s.r.size)); err != nil {
			return out, err
		}
		if s.r.len == 0 {
			s.nulls++
		}
	}
	if s.r.dropped != 0 {
		s.dropped++
	}
	if s.r.repaired != 0 {
		s.repaired++
	}
	if s.r.len > 0 {
		out.WKB = unsafe.Slice((*byte)(unsafe.Pointer(s.r.wkb)), int(s.r.len))
	}
	out.Values = s.values
	payload := int64(len(out.WKB))
	for i, fd := range s.fields {
		x, ok := s.cvals.read(i, fd)
		switch str, isText := x.(string); {
		case !ok:
			var tz int
			x, tz = fieldValue(s.r.f, fd)
			if fd.out == geoparquet.Time && tz > 1 {
				if s.zonedTimes == nil {
					s.zonedTimes = map[int]int64{}
				}
				s.zonedTimes[i]++
			}
			payload += heldBytes(x)
		case isText:
			payload += int64(len(str))
		}
		out.Values[i] = x
	}
	// The writer holds rows up to a spill: a feature's text and binary
	// attributes count with its geometry.
	if s.meter != nil {
		if err := s.meter.Add(payload); err != nil {
			if s.scanMeter != nil {
				// The old path's scan may refuse the layer for another
				// reason first: it decides.
				return geoparquet.Feature{}, errNotAsDeclared
			}
			return geoparquet.Feature{}, err
		}
	}
	if err := s.digest.Add(out.WKB, s.types, out.Values); err != nil {
		return geoparquet.Feature{}, fmt.Errorf("feature %d: %w", s.rows+1, err)
	}
	if s.corrupt != nil {
		s.corrupt(&out)
	}
	s.rows++
	return out, nil
}

// heldBytes is what the writer holds of a value read by fieldValue beyond
// its fixed size: text, binary and list elements.
func heldBytes(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case []int32:
		return 8 * int64(len(x))
	case []int64:
		return 8 * int64(len(x))
	case []float64:
		return 8 * int64(len(x))
	case []string:
		var n int64
		for _, e := range x {
			n += 8 + int64(len(e))
		}
		return n
	}
	return 0
}

// fieldValue is the value written for one set, non-null OGR field: the one
// conversion from an OGR value to the writer's (docs/fidelity.md, "Values
// kept"). tz is OGR's time zone flag of a Date, Time or DateTime value
// (0 unknown, 1 local time, 100 UTC, 100±k UTC±k×15 min), 0 otherwise.
//
// A DateTime with a zone (flag 100 or an offset) is its instant, a
// time.Time in that offset (the writer stores it in UTC and counts the
// offsets it normalised); one without (0, 1) is a geoparquet.WallTime,
// its reading as is. Seconds are OGR's float, kept to the millisecond
// OGR resolves.
func fieldValue(f C.OGRFeatureH, fd ogrField) (v any, tz int) {
	if fd.asText {
		return C.GoString(C.OGR_F_GetFieldAsString(f, fd.index)), 0
	}
	switch fd.out {
	case geoparquet.Int32:
		return int32(C.OGR_F_GetFieldAsInteger(f, fd.index)), 0
	case geoparquet.Bool:
		return C.OGR_F_GetFieldAsInteger(f, fd.index) != 0, 0
	case geoparquet.Int64:
		return int64(C.OGR_F_GetFieldAsInteger64(f, fd.index)), 0
	case geoparquet.Float64:
		return float64(C.OGR_F_GetFieldAsDouble(f, fd.index)), 0
	case geoparquet.String:
		// Bytes as stored: the writer refuses text that is not UTF-8.
		return C.GoString(C.OGR_F_GetFieldAsString(f, fd.index)), 0
	case geoparquet.Binary:
		var n C.int
		p := C.OGR_F_GetFieldAsBinary(f, fd.index, &n)
		return C.GoBytes(unsafe.Pointer(p), n), 0
	case geoparquet.Int32List:
		var n C.int
		p := C.OGR_F_GetFieldAsIntegerList(f, fd.index, &n)
		out := make([]int32, int(n))
		for k, e := range unsafe.Slice(p, int(n)) {
			out[k] = int32(e)
		}
		return out, 0
	case geoparquet.Int64List:
		var n C.int
		p := C.OGR_F_GetFieldAsInteger64List(f, fd.index, &n)
		out := make([]int64, int(n))
		for k, e := range unsafe.Slice(p, int(n)) {
			out[k] = int64(e)
		}
		return out, 0
	case geoparquet.Float64List:
		var n C.int
		p := C.OGR_F_GetFieldAsDoubleList(f, fd.index, &n)
		out := make([]float64, int(n))
		for k, e := range unsafe.Slice(p, int(n)) {
			out[k] = float64(e)
		}
		return out, 0
	case geoparquet.StringList:
		l := C.OGR_F_GetFieldAsStringList(f, fd.index)
		out := make([]string, int(C.gm_string_count(l)))
		for k := range out {
			out[k] = C.GoString(C.gm_string_at(l, C.int(k)))
		}
		return out, 0
	case geoparquet.Date, geoparquet.Time, geoparquet.DateTime:
		var y, m, d, h, mi, ctz C.int
		var sec C.float
		if C.gm_datetime(f, fd.index, &y, &m, &d, &h, &mi, &sec, &ctz) == 0 {
			return nil, 0
		}
		tz = int(ctz)
		ms := time.Duration(math.Round(float64(sec)*1000)) * time.Millisecond
		clock := time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + ms
		switch fd.out {
		case geoparquet.Time:
			return clock, tz
		case geoparquet.Date:
			return time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC), tz
		}
		loc := time.UTC
		switch {
		case tz <= 1:
			return geoparquet.WallTime{Wall: time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC).Add(clock)}, tz
		case tz != 100:
			loc = time.FixedZone("", (tz-100)*15*60)
		}
		return time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, loc).Add(clock), tz
	}
	return nil, 0
}

// writeGeoParquet writes one layer as GeoParquet 1.1 to dst.
// repairLinework, set by tests only, repairs as GDAL does where GEOS has
// no STRUCTURE method (older than 3.10): the path that leaves lines beside
// polygons.
var repairLinework bool

// corruptFeature, set by tests only, alters features after they were
// digested, to prove that the fidelity check finds it.
var corruptFeature func(*geoparquet.Feature)

// writeGeoParquet writes one layer as GeoParquet 1.1 to dst and returns the
// digest of the features it handed to the writer. A layer sc takes as
// declared (declaredScan) is proven feature by feature as it is written,
// and sc gets the nulls counted: errNotAsDeclared (dst removed) when a
// feature is not as sc says, or the old path may decide otherwise.
func writeGeoParquet(ctx context.Context, ds *godal.Dataset, sc *layerScan, dst string, r recipe.Recipe, rec *recorder) (recipe.Output, *geoparquet.Digest, error) {
	lp := ds.LayerByName(sc.name)
	if lp == nil {
		return recipe.Output{}, nil, fault.Data(fault.CorruptSource, "layer %q cannot be opened", sc.name)
	}
	l := *lp
	var crs crsInfo
	if !sc.table {
		sr, assigned, err := layerSRS(l, r)
		if err != nil {
			return recipe.Output{}, nil, err
		}
		if assigned {
			defer sr.Close()
		}
		if crs, err = canonicalCRS(sr); err != nil {
			return recipe.Output{}, nil, fault.DataWrap(fault.InvalidCRS, err, "layer %q has a CRS that cannot be written as PROJJSON", sc.name)
		}
	}
	fields, read, geomCol, notes := geoParquetSchema(l)
	for _, n := range notes {
		rec.warn(fmt.Sprintf("layer %q: %s", sc.name, n))
	}
	repair := sc.invalid > 0 && r.GeometryPolicy == recipe.GeometryRepair
	var flags C.int
	if repair {
		flags |= C.GM_REPAIR | familyFlag(sc.family)
		if repairLinework {
			flags |= C.GM_LINEWORK
		}
	}
	if sc.curves > 0 {
		// convertVector refuses curves unless the recipe linearises them.
		flags |= C.GM_LINEAR
		rec.warn(fmt.Sprintf("layer %q: %d curve geometries linearised (arcs in steps of at most %g degrees)", sc.name, sc.curves, r.WithDefaults().CurveStepDegrees))
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
		// GeoParquet 1.1 allows 2D and 3D WKB only (its geometry_types
		// names have no M): docs/decisions/0090.
		rec.warn(fmt.Sprintf("layer %q has M values: dropped (GeoParquet 1.1 allows only 2D and 3D geometries; FlatGeobuf output keeps M)", sc.name))
	}
	if crs.SwapXY {
		flags |= C.GM_SWAP
	}
	layer := geoparquet.Layer{Name: sc.name, Fields: fields, GeometryColumn: geomCol, NoGeometry: sc.table}
	if !sc.table {
		layer.IsCRS84 = crs.IsCRS84()
		if !layer.IsCRS84 {
			layer.CRSProjJSON = crs.PROJJSON
		}
	}
	opts := geoparquet.DefaultOptions()
	opts.RowGroupRows = r.RowGroupRows
	opts.Compression = r.ParquetCompression
	opts.WriterVersion = r.ToolVersion
	lineage := r.Lineage()
	lineage.Layer = sc.name
	if sc.curves > 0 {
		lineage.CurveStepDegrees = r.WithDefaults().CurveStepDegrees
	}
	lineage.NoGeometry = sc.table
	opts.Lineage = lineage.JSON()
	// Past SpillBytes the writer sorts through temporary files beside the
	// output (the work directory, on the disk sized for the job).
	opts.SpillBytes = budget.SpillBytes(r.MaxMemory)
	opts.TempDir = filepath.Dir(dst)

	os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return recipe.Output{}, nil, fault.Systemic("gdal.GeoParquet: create output", err)
	}
	src := &ogrSource{ctx: ctx, layer: layerHandle(l), fields: read, name: sc.name,
		meter: budget.NewVectorMeter(sc.name, r), corrupt: corruptFeature}
	for _, f := range fields {
		src.types = append(src.types, f.Type)
	}
	var declared C.OGRwkbGeometryType
	if sc.declared {
		declared = sc.declaredType()
		src.scanMeter = budget.NewVectorMeter(sc.name, r)
	}
	if err := src.open(flags, r.WithDefaults().CurveStepDegrees, declared); err != nil {
		out.Close()
		os.Remove(dst)
		return recipe.Output{}, nil, err
	}
	defer src.close()
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
	if err == nil && sc.declared && src.nulls == sc.features {
		// No geometry at all: the scan says so (and so a warning).
		err = errNotAsDeclared
	}
	if err != nil {
		os.Remove(dst)
		if errors.Is(err, errNotAsDeclared) {
			return recipe.Output{}, nil, errNotAsDeclared
		}
		return recipe.Output{}, nil, geoParquetError(sc.name, err)
	}
	if sc.declared {
		for t := range sc.types {
			sc.types[t] = sc.features - src.nulls
		}
		sc.nulls = src.nulls
	}
	if st.Rows != sc.features {
		os.Remove(dst)
		return recipe.Output{}, nil, fault.Data(fault.CorruptSource, "layer %q: %d features counted but %d read", sc.name, sc.features, st.Rows)
	}
	if src.repaired > 0 {
		rec.warn(fmt.Sprintf("layer %q: %d invalid geometries repaired (MakeValid, keeping the layer's geometry type)", sc.name, src.repaired))
	}
	if src.dropped > 0 {
		rec.warn(fmt.Sprintf("layer %q: the repair of %d geometries left parts of another dimension (lines or points beside the %ss), which were dropped", sc.name, src.dropped, sc.family))
	}
	valueWarnings(sc.name, fields, st, src.zonedTimes, rec)
	info := recipe.Formats[recipe.FormatGeoParquet]
	if sc.table {
		info = recipe.Formats[recipe.FormatParquet]
	}
	return recipe.Output{
		Path: dst, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType,
		Kind: recipe.Vector, Layer: sc.name, Warnings: rec.list(),
		Stats: map[string]int64{
			"features": sc.features, "null_geometries": sc.nulls, "invalid_geometries": sc.invalid,
			"repaired": src.repaired, "repair_dropped_parts": src.dropped, "curves": sc.curves, "bytes": st.Bytes, "row_groups": int64(st.RowGroups),
			"spills": int64(st.Spills),
		},
	}, &src.digest, nil
}

// familyFlag is the GM_FAM_* flag of a layer family ("" none).
func familyFlag(family string) C.int {
	switch family {
	case "point":
		return C.GM_FAM_POINT
	case "line":
		return C.GM_FAM_LINE
	case "polygon":
		return C.GM_FAM_POLYGON
	}
	return 0
}

// hasCurve reports a geometry with arcs (or a collection holding one).
func hasCurve(g *godal.Geometry) bool {
	h := reflect.ValueOf(g).Elem().FieldByName("handle")
	return C.gm_has_curve(C.OGRGeometryH(unsafe.Pointer(h.Pointer()))) != 0
}

// curveError refuses a layer with n curve geometries for GeoParquet output.
func curveError(layer string, n int64) error {
	return fault.Data(fault.CurveGeometry,
		"layer %q has %d curve geometries (CircularString, CompoundCurve, CurvePolygon, MultiCurve, MultiSurface), which GeoParquet's WKB cannot hold: convert with vector format FlatGeobuf, which keeps curves, or set the recipe's vector option curves: linearize (curve_step_degrees, default 4)",
		layer, n)
}

// valueWarnings names every field whose values were written other than
// as read: DateTime offsets normalised to UTC, DateTimes without a zone
// taken as UTC beside zoned ones, Times whose zone was dropped
// (docs/decisions/0091).
func valueWarnings(layer string, fields []geoparquet.Field, st geoparquet.Stats, zonedTimes map[int]int64, rec *recorder) {
	for _, d := range st.DateTimes {
		if d.Offset > 0 {
			rec.warn(fmt.Sprintf("layer %q: field %q: %d of its DateTime values have a UTC offset other than +00: written as the same instants in UTC (Parquet TIMESTAMP, isAdjustedToUTC=true, holds no offset); the original offsets are not kept", layer, d.Field, d.Offset))
		}
		if d.Wall > 0 && d.Written == geoparquet.DateTime {
			rec.warn(fmt.Sprintf("layer %q: field %q: %d of its DateTime values have no time zone (unknown or local) beside %d with one: written in the UTC column as if they were UTC", layer, d.Field, d.Wall, d.UTC+d.Offset))
		}
	}
	for i := range fields {
		n := zonedTimes[i]
		if n == 0 {
			continue
		}
		rec.warn(fmt.Sprintf("layer %q: field %q: %d Time values carry a time zone: written as the time of day read (Parquet TIME holds no zone), the zone is not kept", layer, fields[i].Name, n))
	}
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

// hasGeometryColumn says a layer has a geometry field (an attribute table
// of a GeoPackage, or a CSV without geometry columns, has none).
func hasGeometryColumn(l godal.Layer) bool {
	return C.OGR_FD_GetGeomFieldCount(C.OGR_L_GetLayerDefn(layerHandle(l))) > 0
}

// layerNameOf reads the name through layerHandle (pins godal's layout).
func layerNameOf(l godal.Layer) string { return C.GoString(C.OGR_L_GetName(layerHandle(l))) }
