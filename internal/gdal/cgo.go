package gdal

// The few GDAL calls godal does not expose: process-wide configuration,
// driver identification without a full open, PROJ search paths, versions.

/*
#cgo pkg-config: gdal
#define GM_NETWORK_REFUSED "geomigrate refused network access asked for by the source"
#include <stdlib.h>
#include <gdal.h>
#include <cpl_conv.h>
#include <cpl_error.h>
#include <ogr_srs_api.h>
#include <cpl_http.h>
#include <cpl_string.h>

// gm_refuse_fetch replaces GDAL's HTTP client (CPLHTTPFetch, used e.g. by
// OGRSpatialReference::importFromUrl for a GeoJSON "link" CRS): every
// request fails without touching the network, and the refusal is raised as
// a CE_Failure on the calling thread so that the conversion's error
// recorder sees it. GDAL's proxy settings are no guard: libcurl honours
// no_proxy from the environment and would connect directly.
static CPLHTTPResult *gm_refuse_fetch(const char *url, CSLConstList opts,
	GDALProgressFunc p, void *pa, CPLHTTPFetchWriteFunc w, void *wa, void *ud) {
	CPLHTTPResult *r = (CPLHTTPResult *)CPLCalloc(1, sizeof(CPLHTTPResult));
	if (CSLFetchNameValue((char **)opts, "CLOSE_PERSISTENT") != NULL) return r;
	r->nStatus = 1;
	r->pszErrBuf = CPLStrdup("network access is disabled");
	CPLError(CE_Failure, CPLE_AppDefined, "%s: %s", GM_NETWORK_REFUSED, url ? url : "");
	return r;
}

static void gm_disable_http(void) { CPLHTTPSetFetchCallback(gm_refuse_fetch, NULL); }

static const char *gm_identify(const char *path, char **allowed, char **siblings) {
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALDriverH d = GDALIdentifyDriverEx(path, GDAL_OF_RASTER | GDAL_OF_VECTOR,
		(const char *const *)allowed, (const char *const *)siblings);
	CPLPopErrorHandler();
	CPLErrorReset();
	if (d == NULL) return NULL;
	return GDALGetDriverShortName(d);
}

static void gm_push_quiet(void) { CPLPushErrorHandler(CPLQuietErrorHandler); }
static void gm_pop_quiet(void) { CPLPopErrorHandler(); CPLErrorReset(); }

static void gm_set_proj_paths(char **paths) {
	OSRSetPROJSearchPaths((const char *const *)paths);
	OSRSetPROJEnableNetwork(0);
}

static void gm_proj_version(int *maj, int *min, int *patch) {
	OSRGetPROJVersion(maj, min, patch);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// cStrings is a NULL-terminated char** owned by C; free it with free().
type cStrings struct {
	p **C.char
	n int
}

func newCStrings(ss []string) cStrings {
	size := C.size_t(unsafe.Sizeof((*C.char)(nil)))
	p := (**C.char)(C.calloc(C.size_t(len(ss)+1), size))
	arr := unsafe.Slice(p, len(ss)+1)
	for i, s := range ss {
		arr[i] = C.CString(s)
	}
	return cStrings{p, len(ss)}
}

func (c cStrings) free() {
	arr := unsafe.Slice(c.p, c.n+1)
	for i := 0; i < c.n; i++ {
		C.free(unsafe.Pointer(arr[i]))
	}
	C.free(unsafe.Pointer(c.p))
}

// networkRefused starts the CE_Failure message of a refused HTTP request
// (GM_NETWORK_REFUSED in the C code).
const networkRefused = "geomigrate refused network access asked for by the source"

// disableHTTP makes every GDAL HTTP request fail at once (process-wide).
func disableHTTP() { C.gm_disable_http() }

// setConfig sets a process-wide GDAL configuration option.
func setConfig(key, value string) {
	k, v := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(k))
	defer C.free(unsafe.Pointer(v))
	C.CPLSetConfigOption(k, v)
}

func getConfig(key string) string {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	return C.GoString(C.CPLGetConfigOption(k, nil))
}

// identify names the driver, among allowed (nil: any), that recognises path, reading
// only its header (GDALIdentifyDriverEx), or "" when none does. siblings are
// the only other files GDAL is told exist beside it.
func identify(path string, allowed, siblings []string) string {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	ca, cs := newCStrings(allowed), newCStrings(siblings)
	defer ca.free()
	defer cs.free()
	list := ca.p
	if allowed == nil {
		list = nil // every driver (an empty list would allow none)
	}
	name := C.gm_identify(cp, list, cs.p)
	if name == nil {
		return ""
	}
	return C.GoString(name)
}

// hasDriver reports whether GDAL has a driver of that short name.
func hasDriver(name string) bool {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return C.GDALGetDriverByName(c) != nil
}

func setProjPaths(paths []string) {
	c := newCStrings(paths)
	defer c.free()
	C.gm_set_proj_paths(c.p)
}

func releaseName() string {
	k := C.CString("RELEASE_NAME")
	defer C.free(unsafe.Pointer(k))
	return C.GoString(C.GDALVersionInfo(k))
}

func projVersion() string {
	var maj, min, patch C.int
	C.gm_proj_version(&maj, &min, &patch)
	return fmt.Sprintf("%d.%d.%d", maj, min, patch)
}

// pushQuiet silences GDAL errors on the current OS thread until popQuiet;
// the caller holds runtime.LockOSThread in between.
func pushQuiet() { C.gm_push_quiet() }
func popQuiet()  { C.gm_pop_quiet() }

// setCacheMax sizes GDAL's block cache now: GDAL reads GDAL_CACHEMAX only
// once, at the first use of the cache, which may come before New.
func setCacheMax(bytes int64) { C.GDALSetCacheMax64(C.GIntBig(bytes)) }

// cacheMax is the block cache size GDAL uses, in bytes.
func cacheMax() int64 { return int64(C.GDALGetCacheMax64()) }
