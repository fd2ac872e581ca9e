package gdal

// GDAL's ZSTD compressor (libzstd, through cpl_compressor.h) for the
// GeoParquet writer's pages: libzstd's level 5 wrote the WKB of 100k
// polygons in about a quarter fewer bytes than the pure-Go encoder arrow-go
// uses, at about its speed (docs/decisions/0086). The GDAL layer already
// ships libzstd for the COG; this adds no library.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <cpl_compressor.h>
#include <cpl_string.h>

static int gm_compress(const CPLCompressor *c, const void *in, size_t n, void *out, size_t *outn, char **opts) {
	void *o = out;
	return c->pfnFunc(in, n, &o, outn, (CSLConstList)opts, c->user_data) ? 1 : 0;
}
*/
import "C"

import (
	"strconv"
	"sync"
	"unsafe"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// gdalZSTD implements geoparquet.ZSTDEncoder with GDAL's "zstd"
// compressor: one ZSTD_compressCCtx call per page, a standard frame.
type gdalZSTD struct {
	c *C.CPLCompressor
	// levels[l] is the option list "LEVEL=l", made once and kept for the
	// process's life (GDAL reads it during each call).
	levels [23]**C.char
}

var (
	zstdOnce    sync.Once
	zstdEncoder *gdalZSTD // nil when GDAL was built without ZSTD
)

// newGDALZSTD returns GDAL's ZSTD encoder, or nil when GDAL has none.
func newGDALZSTD() *gdalZSTD {
	zstdOnce.Do(func() {
		id := C.CString("zstd")
		defer C.free(unsafe.Pointer(id))
		c := C.CPLGetCompressor(id)
		if c == nil {
			return
		}
		z := &gdalZSTD{c: c}
		for l := 1; l < len(z.levels); l++ {
			opt := C.CString("LEVEL=" + strconv.Itoa(l))
			z.levels[l] = C.CSLAddString(nil, opt)
			C.free(unsafe.Pointer(opt))
		}
		zstdEncoder = z
	})
	return zstdEncoder
}

// EncodeZSTD implements geoparquet.ZSTDEncoder.
func (z *gdalZSTD) EncodeZSTD(dst, src []byte, level int) (int, bool) {
	if level < 1 || level >= len(z.levels) || len(src) == 0 || len(dst) == 0 {
		return 0, false
	}
	n := C.size_t(len(dst))
	if C.gm_compress(z.c, unsafe.Pointer(&src[0]), C.size_t(len(src)), unsafe.Pointer(&dst[0]), &n, z.levels[level]) == 0 {
		return 0, false
	}
	return int(n), true
}

var _ geoparquet.ZSTDEncoder = (*gdalZSTD)(nil)
