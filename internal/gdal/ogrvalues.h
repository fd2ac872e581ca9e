// One feature's geometry and attribute values read in the call that reads
// the feature: the feature readers of the GeoParquet writer (geoparquet.go)
// and of the FlatGeobuf check (fgbread.go) include this, so that both
// export and read alike, in one cgo call per feature.

#ifndef GM_OGRVALUES_H
#define GM_OGRVALUES_H

#include <stdlib.h>
#include <ogr_api.h>

// gm_export_wkb exports g as little-endian ISO WKB into *buf, grown to fit
// (its size in *cap, reused from feature to feature), and sets *len. own,
// when not NULL, is the clone made for the export (g itself or its
// source): it is destroyed here. 0 when the buffer cannot grow or GDAL
// cannot export g.
static int gm_export_wkb(OGRGeometryH g, OGRGeometryH own, unsigned char **buf, size_t *cap, size_t *len) {
	size_t sz = OGR_G_WkbSizeEx(g);
	if (sz > *cap) {
		unsigned char *b = realloc(*buf, sz);
		if (b == NULL) { if (own) OGR_G_DestroyGeometry(own); return 0; }
		*buf = b; *cap = sz;
	}
	OGRErr err = OGR_G_ExportToIsoWkb(g, wkbNDR, *buf);
	if (own) OGR_G_DestroyGeometry(own);
	if (err != OGRERR_NONE) return 0;
	*len = sz;
	return 1;
}

// What a field's value is read as in the same call (FK_OTHER: by Go, with
// fieldValue).
enum { FK_OTHER = 0, FK_INT = 1, FK_INT64 = 2, FK_REAL = 3, FK_STRING = 4 };

typedef struct {
	int set;
	long long i;
	double d;
	const char *s; // the feature's own string, valid until the feature is destroyed
} gm_value;

// gm_read_values reads the n fields index[k] of f, each as kind[k] says,
// into v[k].
static void gm_read_values(OGRFeatureH f, int n, const int *index, const int *kind, gm_value *v) {
	for (int i = 0; i < n; i++) {
		int k = index[i];
		v[i].set = OGR_F_IsFieldSetAndNotNull(f, k);
		if (!v[i].set) continue;
		switch (kind[i]) {
		case FK_INT: v[i].i = OGR_F_GetFieldAsInteger(f, k); break;
		case FK_INT64: v[i].i = OGR_F_GetFieldAsInteger64(f, k); break;
		case FK_REAL: v[i].d = OGR_F_GetFieldAsDouble(f, k); break;
		case FK_STRING: v[i].s = OGR_F_GetFieldAsString(f, k); break;
		}
	}
}

#endif
