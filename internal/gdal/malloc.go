package gdal

// The C allocator of every process that links this package: mimalloc, for
// GDAL, PROJ, GEOS, json-c and SQLite alike (docs/decisions/0118).
//
// GDAL's vector drivers are malloc-bound: reading GeoJSON, json-c builds an
// object per value and GDAL an OGR feature per row, and glibc's malloc and
// free took 15 % of a GeoParquet conversion's CPU (perf, 100,000 polygons).
// Linked here, as a library the executable needs before libc, mimalloc's
// malloc is the one the dynamic linker binds for every library of the
// process (mimalloc's documented dynamic override); TestCAllocatorIsMimalloc
// checks that the malloc bound is mimalloc's.
//
// mimalloc 2 (Debian 12, the hosts) hands a freed segment back to the OS
// at once unless it comes from an arena reserved up front: the COG writer
// allocates and frees megabyte buffers per tile, and without an arena the
// 6000² COG took 50 % more CPU in page faults. reserveArena reserves one of
// a quarter of the engine's memory limit, at most 1 GiB (enough for that
// COG; less than 1 GiB was not): committed address space, which counts
// against an RLIMIT_AS, touched only as used, and never handed back.
// mimalloc 3 (Debian 13, the Lambda layer) allocates from arenas of its
// own and needs none.

/*
#cgo LDFLAGS: -lmimalloc -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <mimalloc.h>

static int gm_mi_reserve(size_t bytes) {
#if MI_MALLOC_VERSION < 300
	return mi_reserve_os_memory(bytes, true, false);
#else
	(void)bytes;
	return 0;
#endif
}

// gm_malloc_library names the library whose malloc the dynamic linker
// binds for the whole process (GDAL's calls included): "" if none is found.
static const char *gm_malloc_library(void) {
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, "malloc");
	if (f == NULL || dladdr(f, &info) == 0 || info.dli_fname == NULL) return "";
	return info.dli_fname;
}
*/
import "C"

import "sync"

var arenaOnce sync.Once

// maxArena bounds the arena reserveArena reserves.
const maxArena = 1 << 30

// arenaSize is the arena for an engine of memory limit: a quarter of it,
// at most maxArena.
func arenaSize(limit int64) int64 { return min(limit/4, maxArena) }

// reserveArena reserves, once per process, an arena of arenaSize(limit)
// for mimalloc 2's large blocks (see the top of this file); nothing on
// mimalloc 3. A failed reservation leaves mimalloc on the OS's memory.
func reserveArena(limit int64) {
	arenaOnce.Do(func() {
		if n := arenaSize(limit); n > 0 {
			C.gm_mi_reserve(C.size_t(n))
		}
	})
}

// mallocLibrary is the file of the library whose malloc the process uses,
// GDAL's calls included.
func mallocLibrary() string { return C.GoString(C.gm_malloc_library()) }
