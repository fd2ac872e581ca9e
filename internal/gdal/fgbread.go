package gdal

// The FlatGeobuf check's reading of a layer: each feature's geometry and
// values come out of one cgo call (fgbReader.next), the geometry exported
// into a buffer reused from feature to feature, the values of the common
// field types read in the same call. Both sides of the check, the source
// (while copyFlatGeobuf writes it, or read again) and the output, go
// through it, so they are read alike; the tests hold it to the GeoParquet
// writer's reading of the same features (ogrSource).

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <ogr_api.h>
#include <cpl_error.h>
#include "ogrvalues.h"

typedef struct {
	OGRFeatureH f; // the feature read last (owned)
	unsigned char *wkb;
	size_t cap, len; // len 0: no geometry
	long long size;  // the source geometry's WKB size (copy only)
	// How the geometry is exported: gm_wkb's FlatGeobuf flags (curves kept).
	int multi, z, m, nogeom;
	int n; // fields
	const int *index, *kind;
	gm_value *v;
	// copy: the output layer each feature is written to, NULL for none,
	// and the geometry type every feature must have.
	OGRLayerH dst;
	OGRwkbGeometryType declared;
} gm_fgb_reader;

// gm_fgb_copy writes source feature f to dst when its geometry is what the
// layer declares (type t, with its Z and M) and valid: 1 written, 0 not as
// declared (nothing written), -1 the write failed. *size is the
// geometry's WKB size.
static int gm_fgb_copy(OGRFeatureH f, OGRLayerH dst, OGRwkbGeometryType t, long long *size) {
	OGRGeometryH g = OGR_F_GetGeometryRef(f);
	*size = 0;
	if (g == NULL || OGR_G_IsEmpty(g)) return 0;
	OGRwkbGeometryType gt = OGR_G_GetGeometryType(g);
	if (OGR_GT_Flatten(gt) != OGR_GT_Flatten(t) || OGR_GT_HasZ(gt) != OGR_GT_HasZ(t) || OGR_GT_HasM(gt) != OGR_GT_HasM(t)) return 0;
	*size = (long long)OGR_G_WkbSizeEx(g);
	if (!OGR_G_IsValid(g)) return 0;
	OGRFeatureH o = OGR_F_Create(OGR_L_GetLayerDefn(dst));
	OGRErr err = OGR_F_SetFrom(o, f, TRUE);
	if (err == OGRERR_NONE) err = OGR_L_CreateFeature(dst, o);
	OGR_F_Destroy(o);
	return err == OGRERR_NONE ? 1 : -1;
}

// gm_fgb_export writes g's ISO WKB, as gm_wkb would with the reader's
// flags, into the reader's buffer: the geometry itself when the flags
// leave it as it is, a changed clone otherwise. 0 on failure.
static int gm_fgb_export(gm_fgb_reader *r, OGRGeometryH g) {
	OGRwkbGeometryType t = wkbFlatten(OGR_G_GetGeometryType(g));
	int multi = r->multi && (t == wkbPoint || t == wkbLineString || t == wkbPolygon);
	OGRGeometryH own = NULL;
	if (multi || !OGR_G_Is3D(g) != !r->z || !OGR_G_IsMeasured(g) != !r->m) {
		own = OGR_G_Clone(g);
		if (own == NULL) return 0;
		if (multi) {
			switch (t) {
			case wkbPoint: own = OGR_G_ForceToMultiPoint(own); break;
			case wkbLineString: own = OGR_G_ForceToMultiLineString(own); break;
			default: own = OGR_G_ForceToMultiPolygon(own); break;
			}
		}
		OGR_G_SetMeasured(own, r->m ? TRUE : FALSE);
		OGR_G_Set3D(own, r->z ? TRUE : FALSE);
		g = own;
	}
	return gm_export_wkb(g, own, &r->wkb, &r->cap, &r->len);
}

// gm_fgb_next reads the next feature (destroying the last): 1 read, 0 at
// the end, -1 a read error (message in CPLGetLastErrorMsg), 2 not as
// declared (copy), 3 the copy's write failed, 4 the geometry cannot be
// exported.
static int gm_fgb_next(gm_fgb_reader *r, OGRLayerH l) {
	if (r->f != NULL) { OGR_F_Destroy(r->f); r->f = NULL; }
	CPLErrorReset();
	OGRFeatureH f = OGR_L_GetNextFeature(l);
	if (f == NULL) return CPLGetLastErrorType() >= CE_Failure ? -1 : 0;
	r->f = f;
	if (r->dst != NULL) {
		int c = gm_fgb_copy(f, r->dst, r->declared, &r->size);
		if (c == 0) return 2;
		if (c < 0) return 3;
	}
	r->len = 0;
	OGRGeometryH g = OGR_F_GetGeometryRef(f);
	if (g != NULL && !OGR_G_IsEmpty(g) && !r->nogeom && !gm_fgb_export(r, g)) return 4;
	gm_read_values(f, r->n, r->index, r->kind, r->v);
	return 1;
}

static void gm_fgb_close(gm_fgb_reader *r) {
	if (r->f != NULL) OGR_F_Destroy(r->f);
	free(r->wkb);
	r->f = NULL; r->wkb = NULL;
}
*/
import "C"

import (
	"context"
	"fmt"
	"strings"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// fgbGeometry is how the check exports a feature's geometry: as
// writeFlatGeobuf has ogr2ogr write it, curves kept, with the layer's
// dimensions (z, m), forced to multi where -nlt asks for it (multi), or
// left out (noGeom) where ogr2ogr repaired some: its MakeValid is not ours
// to repeat.
type fgbGeometry struct{ multi, z, m, noGeom bool }

// fgbGeometries are the exports of a source feature and of an output one.
func fgbGeometries(sc layerScan, repaired bool) (src, out fgbGeometry) {
	out = fgbGeometry{z: sc.hasZ, m: sc.hasM, noGeom: repaired}
	src = out
	src.multi = strings.HasPrefix(sc.targetType(repaired), "MULTI")
	return src, out
}

// fgbCopy is what copyFlatGeobuf hands the reader: the output layer and
// the declared geometry type every feature must have, and the meter.
type fgbCopy struct {
	dst      C.OGRLayerH
	declared C.OGRwkbGeometryType
	meter    *budget.VectorMeter
}

// fgbDigest is the Digest of every feature of l, the geometry exported as
// geom says and the values read as fields says (with the types of types),
// in the layer's order; with cp, each feature is also copied (and must be
// as declared: errNotAsDeclared otherwise). The layer is read from the
// start and reset after. The caller holds a locked OS thread.
func fgbDigest(ctx context.Context, l godal.Layer, fields []ogrField, types []geoparquet.FieldType, geom fgbGeometry, cp *fgbCopy) (geoparquet.Digest, error) {
	var d geoparquet.Digest
	// C memory: the reader keeps it between calls.
	cv := newOGRValues(fields)
	if cv == nil {
		return d, fault.Systemic("gdal.fgbDigest", fmt.Errorf("out of memory"))
	}
	defer cv.free()
	r := (*C.gm_fgb_reader)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gm_fgb_reader{}))))
	if r == nil {
		return d, fault.Systemic("gdal.fgbDigest", fmt.Errorf("out of memory"))
	}
	defer C.free(unsafe.Pointer(r))
	defer C.gm_fgb_close(r)
	r.multi, r.z, r.m, r.nogeom = boolInt(geom.multi), boolInt(geom.z), boolInt(geom.m), boolInt(geom.noGeom)
	r.n, r.index, r.kind, r.v = cv.pointers()
	if cp != nil {
		r.dst, r.declared = cp.dst, cp.declared
	}
	values := make([]any, len(fields))
	h := layerHandle(l)
	C.OGR_L_ResetReading(h)
	defer C.OGR_L_ResetReading(h)
	for rows := int64(0); ; rows++ {
		if rows%4096 == 0 && rows > 0 {
			if err := ctx.Err(); err != nil {
				return d, err
			}
		}
		switch C.gm_fgb_next(r, h) {
		case 0:
			return d, nil
		case -1:
			return d, fault.Data(fault.CorruptSource, "layer %q cannot be read after %d features: %s", l.Name(), rows, lastErrorMsg())
		case 2:
			return d, errNotAsDeclared
		case 3:
			return d, fault.Systemic("gdal.CreateFeature(FlatGeobuf)", fmt.Errorf("layer %q, feature %d: %s", l.Name(), rows+1, lastErrorMsg()))
		case 4:
			return d, fault.Data(fault.InvalidGeometry, "layer %q: the geometry of feature %d cannot be converted to WKB: %s", l.Name(), rows+1, lastErrorMsg())
		}
		if cp != nil {
			if err := cp.meter.Add(int64(r.size)); err != nil {
				return d, err
			}
		}
		for i, fd := range fields {
			x, ok := cv.read(i, fd)
			if !ok {
				x, _ = fieldValue(r.f, fd)
			}
			values[i] = x
		}
		var wkb []byte
		if r.len > 0 {
			wkb = unsafe.Slice((*byte)(unsafe.Pointer(r.wkb)), int(r.len))
		}
		if err := d.Add(wkb, types, values); err != nil {
			return d, fmt.Errorf("feature %d: %w", rows+1, err)
		}
	}
}
