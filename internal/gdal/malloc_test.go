package gdal

import (
	"strings"
	"testing"
)

// Every C allocation of the process, GDAL's included, goes through
// mimalloc (malloc.go): the malloc the dynamic linker binds process-wide
// is libmimalloc's.
func TestCAllocatorIsMimalloc(t *testing.T) {
	if lib := mallocLibrary(); !strings.Contains(lib, "libmimalloc") {
		t.Fatalf("malloc is %q's, not mimalloc's: is libmimalloc after libc among the executable's DT_NEEDED libraries?", lib)
	}
}

// The arena leaves most of an address-space limit to the rest of the
// process (TestConvertUnderMemoryLimit converts under RLIMIT_AS).
func TestArenaSize(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{0, 0},
		{512 << 20, 128 << 20},
		{3 << 30, 768 << 20},
		{24 << 30, 1 << 30},
	} {
		if got := arenaSize(c.limit); got != c.want {
			t.Errorf("arenaSize(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
