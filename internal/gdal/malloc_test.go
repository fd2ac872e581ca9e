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
	if v := allocatorVersion(); !strings.HasPrefix(v, "2.") && !strings.HasPrefix(v, "3.") {
		t.Errorf("mimalloc version %q", v)
	}
}
