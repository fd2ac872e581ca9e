package gdal

import "testing"

// The engine fixes glibc's thresholds only where the environment leaves
// malloc alone.
func TestMallocTunable(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"GLIBC_TUNABLES": "glibc.rtld.nns=2"}, true},
		{map[string]string{"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, false},
		{map[string]string{"MALLOC_ARENA_MAX": "2"}, false},
		{map[string]string{"MALLOC_TRIM_THRESHOLD_": "100"}, false},
		{map[string]string{"MALLOC_MMAP_THRESHOLD_": "100"}, false},
	}
	for _, c := range cases {
		if got := mallocTunable(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: tunable %v, want %v", c.env, got, c.want)
		}
	}
}
