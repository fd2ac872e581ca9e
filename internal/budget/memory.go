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
// cgroup limit (v2 memory.max, v1 memory.limit_in_bytes), physical
// memory (MemTotal) and the address-space limit (RLIMIT_AS). 0 when none
// is known.
func MachineMemory() int64 {
	var limit int64
	take := func(v int64) {
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	if mb, err := strconv.ParseInt(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64); err == nil {
		take(mb << 20)
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		take(readLimitFile(p))
	}
	take(memTotal("/proc/meminfo"))
	var as syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &as) == nil && as.Cur < 1<<62 {
		take(int64(as.Cur))
	}
	return limit
}

// readLimitFile reads a cgroup limit ("max" and the v1 "no limit" value,
// near 2^63, count as none).
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
