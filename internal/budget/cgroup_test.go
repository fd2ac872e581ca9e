package budget

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mount lines of the usual layouts.
const (
	v2Mount     = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	v1MemMount  = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
	v1CPUMount  = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:6 - cgroup cgroup rw,cpu\n"
	unifiedLine = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	systemdV1   = "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
	rootMount   = "22 1 8:1 / / rw,relatime - ext4 /dev/root rw\n"
	v1Unlimited = "9223372036854771712\n"
)

// fakeRoot writes files (path relative to the root → content) into a
// temporary directory; a path ending in "/" is an empty directory.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The limit is the smallest on the way from the process's own cgroup up
// to the mount's root, in the hierarchy that holds the memory controller.
func TestCgroupMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 limit on the process's own cgroup (systemd-run -p MemoryMax=160M)", map[string]string{
			"proc/self/cgroup":                                          "0::/system.slice/run-u7.service\n",
			"proc/self/mountinfo":                                       rootMount + v2Mount,
			"sys/fs/cgroup/cgroup.controllers":                          "cpu memory pids\n",
			"sys/fs/cgroup/system.slice/memory.max":                     "max\n",
			"sys/fs/cgroup/system.slice/run-u7.service/memory.max":      "167772160\n",
			"sys/fs/cgroup/system.slice/run-u7.service/memory.high":     "83886080\n",
			"sys/fs/cgroup/system.slice/run-u7.service/memory.swap.max": "0\n",
		}, 160 * mib},
		{"v2 limit on a slice above a scope", map[string]string{
			"proc/self/cgroup":                                  "0::/batch.slice/job-42.scope\n",
			"proc/self/mountinfo":                               rootMount + v2Mount,
			"sys/fs/cgroup/batch.slice/memory.max":              "268435456\n",
			"sys/fs/cgroup/batch.slice/job-42.scope/memory.max": "max\n",
		}, 256 * mib},
		{"v2 nested: the smaller of leaf and ancestor", map[string]string{
			"proc/self/cgroup":               "0::/a/b/c\n",
			"proc/self/mountinfo":            rootMount + v2Mount,
			"sys/fs/cgroup/a/memory.max":     "134217728\n",
			"sys/fs/cgroup/a/b/memory.max":   "max\n",
			"sys/fs/cgroup/a/b/c/memory.max": "536870912\n",
		}, 128 * mib},
		{"v2 unlimited", map[string]string{
			"proc/self/cgroup":                                                 "0::/user.slice/user-0.slice/session-1.scope\n",
			"proc/self/mountinfo":                                              rootMount + v2Mount,
			"sys/fs/cgroup/user.slice/memory.max":                              "max\n",
			"sys/fs/cgroup/user.slice/user-0.slice/memory.max":                 "max\n",
			"sys/fs/cgroup/user.slice/user-0.slice/session-1.scope/memory.max": "max\n",
		}, 0},
		{"v2 container (cgroup namespace): / is the mount point", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"proc/self/mountinfo":      rootMount + "700 699 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1024 * mib},
		{"v2 namespace entered from outside: read at the mount point", map[string]string{
			"proc/self/cgroup":           "0::/../../other.slice\n",
			"proc/self/mountinfo":        rootMount + v2Mount,
			"sys/fs/cgroup/memory.max":   "100663296\n",
			"sys/other.slice/memory.max": "1048576\n",
		}, 96 * mib},
		{"v2 cgroup gone (moved, removed): read at the mount point", map[string]string{
			"proc/self/cgroup":         "0::/gone.scope\n",
			"proc/self/mountinfo":      rootMount + v2Mount,
			"sys/fs/cgroup/memory.max": "100663296\n",
		}, 96 * mib},
		{"v1 (Batch, Slurm, older Docker hosts)", map[string]string{
			"proc/self/cgroup":                                                          "9:name=systemd:/\n4:memory:/slurm/uid_0/job_7/step_0\n1:cpu:/\n0::/\n",
			"proc/self/mountinfo":                                                       rootMount + v1CPUMount + v1MemMount + systemdV1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                                v1Unlimited,
			"sys/fs/cgroup/memory/slurm/memory.limit_in_bytes":                          v1Unlimited,
			"sys/fs/cgroup/memory/slurm/uid_0/memory.limit_in_bytes":                    v1Unlimited,
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/memory.limit_in_bytes":              "2147483648\n",
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/step_0/memory.limit_in_bytes":       v1Unlimited,
			"sys/fs/cgroup/systemd/memory.limit_in_bytes":                               "1\n",
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/step_0/memory.memsw.limit_in_bytes": "1\n",
		}, 2048 * mib},
		{"v1 memory co-mounted with cpu", map[string]string{
			"proc/self/cgroup":    "3:cpu,cpuacct,memory:/job1\n",
			"proc/self/mountinfo": rootMount + "33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct,memory rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct,memory\n",
			"sys/fs/cgroup/cpu,cpuacct,memory/job1/memory.limit_in_bytes": "209715200\n",
		}, 200 * mib},
		{"v1 unlimited (page-rounded 2^63)", map[string]string{
			"proc/self/cgroup":                                            "4:memory:/process_api/9aad\n",
			"proc/self/mountinfo":                                         rootMount + v1MemMount,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  v1Unlimited,
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":      v1Unlimited,
			"sys/fs/cgroup/memory/process_api/9aad/memory.limit_in_bytes": "9223372036854710272\n", // 64 KiB pages
		}, 0},
		{"v1 parent with use_hierarchy 0 does not bind its children", map[string]string{
			"proc/self/cgroup":                                   "4:memory:/old/job\n",
			"proc/self/mountinfo":                                rootMount + v1MemMount,
			"sys/fs/cgroup/memory/old/memory.limit_in_bytes":     "1048576\n",
			"sys/fs/cgroup/memory/old/memory.use_hierarchy":      "0\n",
			"sys/fs/cgroup/memory/old/job/memory.limit_in_bytes": "314572800\n",
		}, 300 * mib},
		{"v1 container without a cgroup namespace: mount root is the container's cgroup", map[string]string{
			"proc/self/cgroup":                           "4:memory:/docker/3f2a\n0::/\n",
			"proc/self/mountinfo":                        rootMount + "610 600 0:32 /docker/3f2a /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n",
		}, 512 * mib},
		{"hybrid: memory on v1, the unified v2 tree without it", map[string]string{
			"proc/self/cgroup":                                          "9:name=systemd:/user.slice\n4:memory:/user.slice/app\n0::/user.slice\n",
			"proc/self/mountinfo":                                       rootMount + v1CPUMount + v1MemMount + systemdV1 + unifiedLine,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                v1Unlimited,
			"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes":     v1Unlimited,
			"sys/fs/cgroup/memory/user.slice/app/memory.limit_in_bytes": "167772160\n",
			"sys/fs/cgroup/unified/user.slice/cgroup.procs":             "1\n",
		}, 160 * mib},
		{"mount point with an escaped space", map[string]string{
			"proc/self/cgroup":          "0::/job\n",
			"proc/self/mountinfo":       rootMount + `30 23 0:26 / /mnt/cg\040two rw - cgroup2 none rw` + "\n",
			"mnt/cg two/job/memory.max": "67108864\n",
		}, 64 * mib},
		{"no memory hierarchy mounted", map[string]string{
			"proc/self/cgroup":                               "4:memory:/job\n",
			"proc/self/mountinfo":                            rootMount + v1CPUMount,
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "1048576\n",
		}, 0},
		{"no /proc/self: the usual mount roots", map[string]string{
			"sys/fs/cgroup/memory.max": "402653184\n",
		}, 384 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cgroupMemoryLimit(fakeRoot(t, c.files)); got != c.want {
				t.Errorf("cgroupMemoryLimit = %d (%d MiB), want %d (%d MiB)", got, got>>20, c.want, c.want>>20)
			}
		})
	}
}

// The smallest of the sources wins: Lambda's setting, the cgroup, MemTotal.
func TestMachineMemorySources(t *testing.T) {
	const mib = 1 << 20
	files := map[string]string{
		"proc/meminfo":        "MemTotal:         262144 kB\nMemFree:          100000 kB\n",
		"proc/self/cgroup":    "0::/job\n",
		"proc/self/mountinfo": rootMount + v2Mount,
	}
	noEnv := func(string) string { return "" }
	if got := machineMemory(fakeRoot(t, files), noEnv); got != 256*mib {
		t.Errorf("MemTotal only: %d, want %d", got, 256*mib)
	}
	files["sys/fs/cgroup/job/memory.max"] = "167772160\n"
	root := fakeRoot(t, files)
	if got := machineMemory(root, noEnv); got != 160*mib {
		t.Errorf("cgroup under MemTotal: %d, want %d", got, 160*mib)
	}
	lambda := func(k string) string {
		if k == "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" {
			return "128"
		}
		return ""
	}
	if got := machineMemory(root, lambda); got != 128*mib {
		t.Errorf("Lambda's setting under the cgroup: %d, want %d", got, 128*mib)
	}
}

const cgroupChildEnv = "GEOMIGRATE_BUDGET_CGROUP_CHILD"

// A process in a cgroup the test makes reads that cgroup's limit, and an
// ancestor's, as its machine memory. Needs a writable memory hierarchy
// (root, or a delegated subtree); skipped otherwise.
func TestMachineMemoryOwnCgroup(t *testing.T) {
	if os.Getenv(cgroupChildEnv) != "" {
		// The child: report what it sees.
		fmt.Printf("machine-memory %d\n", MachineMemory())
		return
	}
	groups, ok := memoryCgroups("/")
	if !ok || len(groups) == 0 {
		t.Skip("no memory cgroup hierarchy in /proc/self/cgroup and /proc/self/mountinfo")
	}
	var base, file string
	var tried []string
	for _, g := range groups {
		file = "memory.limit_in_bytes"
		if g.v2 {
			file = "memory.max"
		}
		// Under the process's own cgroup (a delegated subtree); in v2
		// a cgroup with processes cannot give its children the memory
		// controller, so then under the mount's root.
		for _, parent := range []string{g.dir, g.top} {
			dir, err := os.MkdirTemp(parent, "geomigrate-budget-test-")
			if err != nil {
				tried = append(tried, err.Error())
				continue
			}
			t.Cleanup(func() { removeCgroup(t, dir) })
			if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
				tried = append(tried, fmt.Sprintf("%s: no %s (memory controller not enabled for children)", dir, file))
				continue
			}
			base = dir
			break
		}
		if base != "" {
			break
		}
	}
	if base == "" {
		t.Skipf("cannot make a memory cgroup: %s", strings.Join(tried, "; "))
	}
	inner := filepath.Join(base, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, inner) }) // runs before base's

	limit := int64(160 << 20)
	if m := MachineMemory(); m > 0 && m <= 2*limit {
		limit = m / 4 &^ 0xFFFF
	}
	setLimit := func(dir string, v int64) int64 {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
			t.Fatalf("setting %s of %s: %v", file, dir, err)
		}
		got := readLimitFile(filepath.Join(dir, file)) // v1 rounds to a page
		if got <= 0 {
			t.Fatalf("%s of %s reads %d after writing %d", file, dir, got, v)
		}
		return got
	}
	baseLimit := setLimit(base, limit)
	if got := childMachineMemory(t, base); got != baseLimit {
		t.Errorf("child in %s (%s %d): MachineMemory = %d, want %d", base, file, baseLimit, got, baseLimit)
	}
	if got := childMachineMemory(t, inner); got != baseLimit {
		t.Errorf("child in %s below %s (%s %d): MachineMemory = %d, want the parent's %d", inner, base, file, baseLimit, got, baseLimit)
	}
	innerLimit := setLimit(inner, limit/2)
	if got := childMachineMemory(t, inner); got != innerLimit {
		t.Errorf("child in %s (%s %d): MachineMemory = %d, want %d", inner, file, innerLimit, got, innerLimit)
	}
}

// childMachineMemory runs this test binary in the cgroup dir (the shell
// moves itself there before it execs the binary, so the child never runs
// outside it) and returns the MachineMemory it reports.
func childMachineMemory(t *testing.T, dir string) int64 {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`,
		dir, os.Args[0], "-test.run=^TestMachineMemoryOwnCgroup$", "-test.count=1", "-test.timeout=2m")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, cgroupChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child in %s: %v\n%s%s", dir, err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "machine-memory "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("child in %s: %q", dir, sc.Text())
			}
			t.Logf("child in %s: MachineMemory %d", dir, n)
			return n
		}
	}
	t.Fatalf("child in %s reported nothing:\n%s%s", dir, out, stderr.Bytes())
	return 0
}

// removeCgroup removes a cgroup made by the test (rmdir: a cgroup's
// files cannot be unlinked); the kernel may report it busy for a moment
// after its last process exits.
func removeCgroup(t *testing.T, dir string) {
	for i := 0; ; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			t.Errorf("cgroup %s left behind: %v", dir, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
