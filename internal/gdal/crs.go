package gdal

// Canonical CRS text for outputs (FlatGeobuf header WKT, GeoParquet PROJJSON).
//
// Why this exists (outputs must be byte-identical run to run,
// docs/decisions/0013; FlatGeobuf's CRS was not): GDAL gives every OS thread
// one PROJ context, and PROJ (9.1.1 here) keeps a cache of database objects
// per context. When a thread has once asked the database for the *datum*
// EPSG:6326 (GDAL does so e.g. while reading GeoTIFF keys or resolving datum
// names), that cache holds the WGS 84 ensemble turned into a plain datum, and
// every later creation of EPSG:4326 from the database on that thread is built
// on it: WKT2_2019 then says DATUM["World Geodetic System 1984"] instead of
// ENSEMBLE["World Geodetic System 1984 ensemble"]. GDAL's own per-thread
// cache of EPSG objects then keeps whichever variant the thread made first.
// So the CRS text GDAL writes depends on the history of the OS thread a
// conversion happens to run on. Reproduced with PROJ alone: on a fresh
// context proj_create_from_database("EPSG","4326") exports ENSEMBLE; after
// proj_create_from_database("EPSG","6326",DATUM) on the same context it
// exports DATUM.
//
// The fix here is to never take output CRS text from GDAL's shared
// per-thread PROJ state: the layer CRS is identified (authority and code),
// rebuilt from proj.db in a PROJ context created for that purpose (an
// empty cache, so always the database's own definition) and exported from
// there, once per process and code (databaseCRS). FlatGeobuf gets that WKT
// through -a_srs, GeoParquet the PROJJSON.

/*
#cgo pkg-config: gdal proj
#include <stdlib.h>
#include <string.h>
#include <proj.h>
#include <ogr_srs_api.h>
#include <cpl_conv.h>
#include <cpl_error.h>

typedef struct {
	char *auth;      // authority of the CRS (malloc), or NULL
	char *code;      // its code (malloc), or NULL
	char *wkt2;      // WKT2_2019, one line (malloc)
	char *projjson;  // PROJJSON, one line (malloc)
	int canonical;   // 1: rebuilt from proj.db in a fresh context
	int swap_xy;     // 1: data x is a northing/latitude axis
	int geographic;
} gm_crs;

static char *gm_dup(const char *s) { return s ? strdup(s) : NULL; }

static void gm_crs_free(gm_crs *c) {
	free(c->auth); free(c->code); free(c->wkt2); free(c->projjson);
}

// gm_identify_crs fills out's auth, code, swap_xy and geographic from in
// (identifying its EPSG code when it names none), and, when export is set,
// its WKT2 and PROJJSON as GDAL's thread state gives them (the fall-back
// for a CRS without an authority code).
static void gm_identify_crs(OGRSpatialReferenceH in, int export, gm_crs *out) {
	memset(out, 0, sizeof(*out));
	CPLPushErrorHandler(CPLQuietErrorHandler);
	OGRSpatialReferenceH sr = OSRClone(in);
	if (sr == NULL) { CPLPopErrorHandler(); return; }
	out->geographic = OSRIsGeographic(sr);

	// Which data axis is x: with the traditional GIS order it is the
	// longitude/easting axis; anything else is swapped on output.
	int n = 0;
	const int *map = OSRGetDataAxisToSRSAxisMapping(sr, &n);
	if (map != NULL && n >= 2) {
		OGRAxisOrientation o = OAO_Other;
		OSRGetAxis(sr, NULL, map[0] > 0 ? map[0] - 1 : 0, &o);
		out->swap_xy = (o == OAO_North || o == OAO_South);
	}

	const char *auth = OSRGetAuthorityName(sr, NULL);
	if (auth == NULL || auth[0] == 0) {
		OSRAutoIdentifyEPSG(sr);
		auth = OSRGetAuthorityName(sr, NULL);
	}
	const char *code = OSRGetAuthorityCode(sr, NULL);
	if (auth && auth[0] && code && code[0]) {
		out->auth = gm_dup(auth);
		out->code = gm_dup(code);
	}
	if (export) {
		const char *wopts[] = {"FORMAT=WKT2_2019", "MULTILINE=NO", NULL};
		const char *jopts[] = {"MULTILINE=NO", NULL};
		char *w = NULL, *j = NULL;
		if (OSRExportToWktEx(sr, &w, wopts) == OGRERR_NONE && w) out->wkt2 = gm_dup(w);
		if (OSRExportToPROJJSON(sr, &j, jopts) == OGRERR_NONE && j) out->projjson = gm_dup(j);
		CPLFree(w);
		CPLFree(j);
	}
	OSRRelease(sr);
	CPLPopErrorHandler();
	CPLErrorReset();
}

// gm_database_crs sets out's WKT2 and PROJJSON to the definition of
// auth:code in proj.db, built in a PROJ context made for this call (an
// empty cache: see the top of this file), and canonical to 1; 0 when proj.db
// cannot build it.
static int gm_database_crs(const char *auth, const char *code, char **search, gm_crs *out) {
	const char *jopts[] = {"MULTILINE=NO", NULL};
	PJ_CONTEXT *ctx = proj_context_create();
	if (ctx == NULL) return 0;
	int k = 0;
	while (search && search[k]) k++;
	if (k > 0) proj_context_set_search_paths(ctx, k, (const char *const *)search);
	proj_context_set_enable_network(ctx, 0);
	proj_log_level(ctx, PJ_LOG_NONE); // a code proj.db lacks is our fall-back, not news
	PJ *crs = proj_create_from_database(ctx, auth, code, PJ_CATEGORY_CRS, 0, NULL);
	if (crs) {
		const char *w = proj_as_wkt(ctx, crs, PJ_WKT2_2019, (const char *const *)jopts);
		const char *j = proj_as_projjson(ctx, crs, (const char *const *)jopts);
		if (w && j) {
			out->wkt2 = gm_dup(w);
			out->projjson = gm_dup(j);
			out->canonical = 1;
		}
		proj_destroy(crs);
	}
	proj_context_destroy(ctx);
	return out->canonical;
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/airbusgeo/godal"
)

// crsInfo is the canonical description of a layer CRS.
type crsInfo struct {
	Auth, Code string // e.g. "EPSG", "4326"; empty when not identified
	WKT2       string // WKT2_2019 on one line
	PROJJSON   []byte
	Canonical  bool // rebuilt from proj.db (Auth:Code), independent of GDAL's thread state
	SwapXY     bool // OGR hands out (northing, easting): swap to (x=lon/easting, y=lat/northing)
	Geographic bool
}

// IsCRS84 reports WGS 84 geographic 2D in its EPSG or OGC identity, which
// GeoParquet writes by omitting "crs" (coordinates are lon/lat either way).
func (c crsInfo) IsCRS84() bool {
	return (c.Auth == "EPSG" && c.Code == "4326") || (c.Auth == "OGC" && c.Code == "CRS84")
}

// spatialRefHandle is the OGRSpatialReferenceH of a godal SpatialRef.
// godal keeps it in a field named "handle"; isNullHandle's test pins that.
func spatialRefHandle(sr *godal.SpatialRef) C.OGRSpatialReferenceH {
	return *(*C.OGRSpatialReferenceH)(unsafe.Pointer(sr))
}

// canonicalCRS describes sr for an output (see the comment at the top of
// this file). The PROJ search path is that of the engine (PROJ_DATA).
func canonicalCRS(sr *godal.SpatialRef) (crsInfo, error) {
	if sr == nil || isNullHandle(sr) {
		return crsInfo{}, fmt.Errorf("no CRS")
	}
	var search []string
	if d := getConfig("PROJ_DATA"); d != "" {
		search = filepath.SplitList(d)
	}
	var id C.gm_crs
	C.gm_identify_crs(spatialRefHandle(sr), 0, &id)
	info := crsInfo{Auth: goStr(id.auth), Code: goStr(id.code), SwapXY: id.swap_xy != 0, Geographic: id.geographic != 0}
	C.gm_crs_free(&id)
	if info.Auth != "" {
		if def, ok := databaseCRS(info.Auth, info.Code, search); ok {
			info.WKT2, info.PROJJSON, info.Canonical = def.wkt2, []byte(def.projjson), true
			return info, nil
		}
	}
	// No authority code, or one proj.db cannot build: GDAL's own export.
	var ex C.gm_crs
	C.gm_identify_crs(spatialRefHandle(sr), 1, &ex)
	defer C.gm_crs_free(&ex)
	info.WKT2, info.PROJJSON = goStr(ex.wkt2), []byte(goStr(ex.projjson))
	if info.WKT2 == "" || len(info.PROJJSON) == 0 {
		return info, fmt.Errorf("the CRS cannot be exported as WKT2/PROJJSON")
	}
	return info, nil
}

// databaseDef is the text of one CRS as proj.db defines it.
type databaseDef struct{ wkt2, projjson string }

// databaseCRSs holds each CRS databaseCRS has built, by authority, code and
// search path. The definition is built in a fresh PROJ context precisely so
// that it is the same every time (it depends on proj.db alone), and building
// it opens proj.db anew: 0.43 ms of CPU per tiny vector file, 11 % of a
// migration of 1,000 one-point GeoJSON files (go tool pprof, six runs).
var databaseCRSs sync.Map // string → databaseDef

// databaseCRS is auth:code as proj.db defines it; ok false when proj.db
// cannot build it (not remembered: the next call tries again).
func databaseCRS(auth, code string, search []string) (databaseDef, bool) {
	key := auth + "\x00" + code + "\x00" + strings.Join(search, "\x00")
	if def, ok := databaseCRSs.Load(key); ok {
		return def.(databaseDef), true
	}
	def, ok := buildDatabaseCRS(auth, code, search)
	if ok {
		databaseCRSs.Store(key, def)
	}
	return def, ok
}

// buildDatabaseCRS is databaseCRS without the memory.
func buildDatabaseCRS(auth, code string, search []string) (databaseDef, bool) {
	ca, cc := C.CString(auth), C.CString(code)
	defer C.free(unsafe.Pointer(ca))
	defer C.free(unsafe.Pointer(cc))
	cs := newCStrings(search)
	defer cs.free()
	var out C.gm_crs
	defer C.gm_crs_free(&out)
	if C.gm_database_crs(ca, cc, cs.p, &out) == 0 {
		return databaseDef{}, false
	}
	return databaseDef{wkt2: goStr(out.wkt2), projjson: goStr(out.projjson)}, true
}

func goStr(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}
