package budget

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// FuzzCheckTIFF: CheckTIFF reads the IFDs of any bytes without a panic or
// a hang, and answers nil (left to GDAL) or BudgetExceeded, nothing else.
// Seeds: the size bombs and a plain tiled header, little- and big-endian
// and BigTIFF prefixes. Run longer with
//
//	go test ./internal/budget -run '^$' -fuzz '^FuzzCheckTIFF$' -fuzztime 60s
func FuzzCheckTIFF(f *testing.F) {
	for _, b := range hostile.SizeBombs() {
		f.Add(b.Data)
	}
	f.Add(classicTIFF([][2]uint32{{tagImageWidth, 1024}, {tagImageLength, 1024}, {tagTileWidth, 256}, {tagTileLength, 256}}))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x00\x00\x04\x00\x00\x00\x01\x00\x00\x10\x00\x00\x00\x00\x00"))
	f.Add([]byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"))
	r := recipe.DefaultRecipe()
	r.MaxMemory = 64 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckTIFF(bytes.NewReader(data), int64(len(data)), r)
		if err != nil && fault.CodeOf(err) != fault.BudgetExceeded {
			t.Fatalf("CheckTIFF: %v, want nil or BudgetExceeded", err)
		}
	})
}

// FuzzCgroupFiles: any /proc/self/cgroup and /proc/self/mountinfo text is
// parsed without a panic, and a cgroup's path never leaves its mount's
// directory (the limit files read are under the mount point). Run longer
// with
//
//	go test ./internal/budget -run '^$' -fuzz '^FuzzCgroupFiles$' -fuzztime 60s
func FuzzCgroupFiles(f *testing.F) {
	f.Add("0::/system.slice/run-u7.service\n", v2Mount)
	f.Add("4:memory:/docker/3f2a\n0::/\n", "610 600 0:32 /docker/3f2a /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n")
	f.Add("0::/../../x\n", `30 23 0:26 / /mnt/cg\040two rw - cgroup2 none rw`+"\n")
	f.Add("3:cpu,memory:/a:b\n", "1 2 3 /a /b - cgroup x rw,cpu,memory\n")
	f.Fuzz(func(t *testing.T, cgroup, mountinfo string) {
		mounts := parseCgroupMounts(mountinfo)
		for _, g := range parseProcCgroup(cgroup) {
			if !strings.HasPrefix(g.path, "/") {
				t.Fatalf("path %q does not start with /", g.path)
			}
			m, ok := mountFor(mounts, g.path, g.hierarchy == "0")
			if !ok {
				continue
			}
			top := filepath.Join("/fake", m.point)
			d, ok := cgroupDir(top, g.path, m.root)
			if !ok {
				continue
			}
			if rel, err := filepath.Rel(top, d); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Fatalf("cgroupDir(%q, %q, %q) = %q, outside the mount", top, g.path, m.root, d)
			}
		}
	})
}
