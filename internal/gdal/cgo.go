package gdal

// The few GDAL calls godal does not expose: process-wide configuration,
// driver identification without a full open, PROJ search paths, versions.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <gdal.h>
#include <cpl_conv.h>
#include <cpl_error.h>
#include <ogr_srs_api.h>

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

// identify names the driver, among allowed, that recognises path, reading
// only its header (GDALIdentifyDriverEx), or "" when none does. siblings are
// the only other files GDAL is told exist beside it.
func identify(path string, allowed, siblings []string) string {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	ca, cs := newCStrings(allowed), newCStrings(siblings)
	defer ca.free()
	defer cs.free()
	name := C.gm_identify(cp, ca.p, cs.p)
	if name == nil {
		return ""
	}
	return C.GoString(name)
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
