package localrun

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestExecutionNamesNameTheirProcess(t *testing.T) {
	name := ExecutionName("k")
	host, pid, ok := LeaseHolder("arn:aws:states:local:000000000000:execution:geomigrate-migrate:" + name)
	if !ok || host != thisHost || pid != os.Getpid() || len(name) > 80 {
		t.Fatalf("%s → %s %d %v", name, host, pid, ok)
	}
	for _, owner := range []string{"arn:aws:states:eu-west-1:1:execution:geomigrate-migrate:0b8f6a52-3c1e-4f7d", "e1", "a_b_c_d", "x_h_-3_y"} {
		if _, _, ok := LeaseHolder(owner); ok {
			t.Errorf("%s parsed as a local holder", owner)
		}
	}
}

func TestHeldByDeadProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	gone := cmd.Process.Pid
	owner := func(host string, pid int) string {
		return "arn:aws:states:local:000000000000:execution:geomigrate-migrate:20261130T090000_" + host + "_" + strconv.Itoa(pid) + "_abcdef"
	}
	if pid, dead := HeldByDeadProcess(owner(thisHost, gone)); !dead || pid != gone {
		t.Errorf("exited process %d: dead=%v", gone, dead)
	}
	if _, dead := HeldByDeadProcess(owner(thisHost, os.Getpid())); dead {
		t.Error("this process is dead?")
	}
	if _, dead := HeldByDeadProcess(owner(thisHost, os.Getppid())); dead {
		t.Error("the parent process is dead?")
	}
	if _, dead := HeldByDeadProcess(owner("another-host", gone)); dead {
		t.Error("a process on another host cannot be judged from here")
	}
}
