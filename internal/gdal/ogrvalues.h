// One feature's attribute values read in the call that reads the feature:
// the feature readers of the GeoParquet writer (geoparquet.go) and of the
// FlatGeobuf check (fgbread.go) include this, so that both read values
// alike, in one cgo call per feature.

#ifndef GM_OGRVALUES_H
#define GM_OGRVALUES_H

#include <ogr_api.h>

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
