package gdal

// glibc's allocator, as GDAL uses it inside geomigrate. GDAL allocates and
// frees megabyte-sized buffers all through a conversion (blocks of its
// cache, tile buffers of the COG writer's threads). gdal_translate does
// that on its main thread, in glibc's main arena, where the allocator's
// dynamic thresholds soon keep such buffers; in geomigrate the conversion
// runs on whichever OS thread its goroutine locked, in arenas it shares
// with GDAL's worker threads and Go's other threads, and there glibc kept
// handing the memory back to the kernel and faulting it in again, zeroed.
// Measured on a 12000² Float32 COG under `geomigrate migrate`: 1.24 M
// minor page faults and 3.4 s of system time, against 0.16 M and 1.2 s
// with the two thresholds below fixed (gdal_translate: 0.2 M). So the
// engine fixes them at the maxima glibc's own adjustment would reach on
// 64-bit (mmap 32 MiB, trim twice that), unless the environment already
// tunes malloc.

/*
#include <malloc.h>
static void gm_malloc_thresholds(int mmap_threshold, int trim_threshold) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
	mallopt(M_MMAP_THRESHOLD, mmap_threshold);
	mallopt(M_TRIM_THRESHOLD, trim_threshold);
#endif
}
*/
import "C"

import (
	"strings"
	"sync"
)

const (
	mallocMmapThreshold = 32 << 20
	mallocTrimThreshold = 64 << 20
)

var mallocOnce sync.Once

// fixMallocThresholds applies the thresholds once per process, unless
// getenv shows malloc tuned by the environment.
func fixMallocThresholds(getenv func(string) string) {
	if !mallocTunable(getenv) {
		return
	}
	mallocOnce.Do(func() { C.gm_malloc_thresholds(C.int(mallocMmapThreshold), C.int(mallocTrimThreshold)) })
}

// mallocTunable: no MALLOC_*_ variable and no glibc.malloc tunable in the
// environment, whose choice stands.
func mallocTunable(getenv func(string) string) bool {
	for _, v := range []string{"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX"} {
		if getenv(v) != "" {
			return false
		}
	}
	return !strings.Contains(getenv("GLIBC_TUNABLES"), "glibc.malloc.")
}
