// Package budget is the memory model of a conversion, in pure Go: every
// size a source declares (bands, tile and strip sizes, dimensions, feature
// counts) and what reading it holds are bounded against the memory a
// conversion may use, before GDAL allocates anything for it. A file of a
// few KiB can declare 60,000 bands, and the COG writer then asks for one
// 512 x 512 x 60,000 tile buffer (15 GB): under Lambda's or a cgroup's
// limit the process is killed and the job never reaches a final state.
//
// internal/gdal applies it: the declared sizes it reads through GDAL, and
// the TIFF headers internal/preflight reads in Go, are checked here.
package budget

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// BlockShare: one block may take 1/BlockShare of the memory budget. GDAL
// holds a block cache (GDAL_CACHEMAX), each compression thread a tile, and
// overview building a few more blocks at once.
const BlockShare = 8

// MachineMemory is the memory available to this process, the smallest of:
// Lambda's memory setting (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, MB), the
// limit of the process's own cgroup and of each cgroup above it (v2
// memory.max, v1 memory.limit_in_bytes; see docs/decisions/0098),
// physical memory (MemTotal) and the address-space limit (RLIMIT_AS).
// 0 when none is known.
func MachineMemory() int64 {
	return machineMemory("/", os.Getenv)
}

// machineMemory is MachineMemory with /proc and /sys read under root.
func machineMemory(root string, getenv func(string) string) int64 {
	var limit int64
	take := func(v int64) {
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	if mb, err := strconv.ParseInt(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64); err == nil {
		take(mb << 20)
	}
	take(cgroupMemoryLimit(root))
	take(memTotal(filepath.Join(root, "proc/meminfo")))
	var as syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &as) == nil && as.Cur < 1<<62 {
		take(int64(as.Cur))
	}
	return limit
}

// cgroupMemoryLimit is the smallest memory limit on the path from the
// process's own cgroup up to the root of the hierarchy as mounted, in
// every hierarchy that holds the memory controller (cgroup v2, or the v1
// memory hierarchy on a v1 or hybrid host). Without /proc/self/cgroup or
// /proc/self/mountinfo it reads the usual mount roots. 0 when no limit.
func cgroupMemoryLimit(root string) int64 {
	groups, ok := memoryCgroups(root)
	if !ok {
		return min0(
			readLimitFile(filepath.Join(root, "sys/fs/cgroup/memory.max")),
			readLimitFile(filepath.Join(root, "sys/fs/cgroup/memory/memory.limit_in_bytes")))
	}
	var limit int64
	for _, g := range groups {
		limit = min0(limit, walkLimits(g.dir, g.top, g.v2))
	}
	return limit
}

// memoryCgroup is the directory of the process's cgroup in a hierarchy
// with the memory controller, and the directory of that mount's root.
type memoryCgroup struct {
	dir, top string
	v2       bool
}

// memoryCgroups finds the process's memory cgroups under root; false
// when /proc/self/cgroup or /proc/self/mountinfo cannot be read.
func memoryCgroups(root string) ([]memoryCgroup, bool) {
	groups, err1 := readProcCgroup(filepath.Join(root, "proc/self/cgroup"))
	mounts, err2 := readCgroupMounts(filepath.Join(root, "proc/self/mountinfo"))
	if err1 != nil || err2 != nil {
		return nil, false
	}
	var out []memoryCgroup
	for _, g := range groups {
		v2 := g.hierarchy == "0"
		if !v2 && !slices.Contains(g.controllers, "memory") {
			continue
		}
		m, ok := mountFor(mounts, g.path, v2)
		if !ok {
			continue
		}
		top := filepath.Join(root, m.point)
		dir := top
		// The path in /proc/self/cgroup is relative to the hierarchy's
		// root; a mount shows the subtree under its root field. A path
		// outside it (a cgroup namespace entered from elsewhere), or one
		// gone, is read at the mount point: the nearest cgroup in view.
		if d, ok := cgroupDir(top, g.path, m.root); ok && isDir(d) {
			dir = d
		}
		out = append(out, memoryCgroup{dir: dir, top: top, v2: v2})
	}
	return out, true
}

// walkLimits takes the smallest limit from dir up to top: a cgroup's
// limit binds every cgroup below it (a systemd slice's MemoryMax= over
// the scope the process runs in). In v1, a parent with use_hierarchy 0
// does not count its children's memory, so its limit and those above it
// do not bind them.
func walkLimits(dir, top string, v2 bool) int64 {
	file := "memory.limit_in_bytes"
	if v2 {
		file = "memory.max"
	}
	var limit int64
	for d := dir; ; {
		limit = min0(limit, readLimitFile(filepath.Join(d, file)))
		if d == top || len(d) <= len(top) {
			return limit
		}
		d = filepath.Dir(d)
		if !v2 {
			if b, err := os.ReadFile(filepath.Join(d, "memory.use_hierarchy")); err == nil && strings.TrimSpace(string(b)) == "0" {
				return limit
			}
		}
	}
}

// procCgroup is one line of /proc/self/cgroup:
// hierarchy-ID:controller-list:cgroup-path ("0::/path" for v2).
type procCgroup struct {
	hierarchy   string
	controllers []string
	path        string
}

func readProcCgroup(p string) ([]procCgroup, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return parseProcCgroup(string(b)), nil
}

func parseProcCgroup(text string) []procCgroup {
	var out []procCgroup
	for line := range strings.Lines(text) {
		// The path may itself hold colons: split at the first two.
		parts := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		out = append(out, procCgroup{hierarchy: parts[0], controllers: strings.Split(parts[1], ","), path: parts[2]})
	}
	return out
}

// cgroupMount is a cgroup or cgroup2 line of /proc/self/mountinfo.
type cgroupMount struct {
	root, point string
	v2          bool
	options     []string // super options: the v1 controllers are among them
}

// readCgroupMounts reads the cgroup mounts of a mountinfo file:
//
//	36 35 98:0 /root /mount/point rw,noatime master:1 - cgroup cgroup rw,memory
//
// (ID, parent ID, device, root within the hierarchy, mount point,
// options, optional fields up to "-", type, source, super options).
func readCgroupMounts(p string) ([]cgroupMount, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return parseCgroupMounts(string(b)), nil
}

func parseCgroupMounts(text string) []cgroupMount {
	var out []cgroupMount
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(f) {
			continue
		}
		switch f[sep+1] {
		case "cgroup2":
			out = append(out, cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), v2: true})
		case "cgroup":
			out = append(out, cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), options: strings.Split(f[sep+3], ",")})
		}
	}
	return out
}

// mountFor picks the mount of the hierarchy: v2, or the v1 mount with the
// memory controller. A mount whose root holds the path is preferred (a
// container may see a subtree only); else the first.
func mountFor(mounts []cgroupMount, path string, v2 bool) (cgroupMount, bool) {
	var first *cgroupMount
	for i, m := range mounts {
		if m.v2 != v2 || (!v2 && !slices.Contains(m.options, "memory")) {
			continue
		}
		if _, under := underRoot(path, m.root); under {
			return m, true
		}
		if first == nil {
			first = &mounts[i]
		}
	}
	if first == nil {
		return cgroupMount{}, false
	}
	return *first, true
}

// cgroupDir is the directory of the cgroup path under a mount's
// directory top, whose root field is root; false when the path is not
// under that root or would lead out of top.
func cgroupDir(top, path, root string) (string, bool) {
	rel, under := underRoot(path, root)
	if !under {
		return "", false
	}
	d := filepath.Join(top, rel)
	if d != top && !strings.HasPrefix(d, strings.TrimSuffix(top, "/")+"/") {
		return "", false
	}
	return d, true
}

// underRoot is path relative to a mount's root, when it lies inside it.
func underRoot(path, root string) (string, bool) {
	if root == "/" {
		return path, true
	}
	if path == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(path, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 space, \011 tab,
// \012 newline, \134 backslash).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// min0 is the smaller of two limits, 0 meaning none.
func min0(a, b int64) int64 {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// readLimitFile reads a cgroup limit ("max" and the v1 "no limit" value,
// near 2^63 rounded down to a page, count as none).
func readLimitFile(p string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}

func memTotal(p string) int64 {
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// Effective is the budget of one conversion: the recipe's MaxMemory,
// lowered to what the machine has (machine: 0 when unknown).
func Effective(recipeMax, machine int64) int64 {
	m := recipeMax
	if machine > 0 && (m <= 0 || machine < m) {
		m = machine
	}
	return m
}
