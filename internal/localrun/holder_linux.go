//go:build linux

package localrun

import (
	"os"
	"strconv"
	"strings"
)

// processIdentity reads the kernel's boot ID, the PID namespace of this
// process and the start time of process pid (field 22 of /proc/PID/stat,
// after the parenthesised command, which may hold spaces). What cannot
// be read is "".
func processIdentity(pid int) (boot, pidns, start string) {
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		boot = strings.TrimSpace(string(b))
	}
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		pidns = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 19 {
				start = f[19] // fields after the command start at field 3
			}
		}
	}
	return boot, pidns, start
}
