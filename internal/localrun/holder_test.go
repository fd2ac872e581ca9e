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

// TestHeldByDeadProcess: leases without a holder (earlier versions) are
// judged by PID on this host; one under this process's own PID is an
// earlier process's (this run names every lease it takes).
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
	if _, dead := HeldByDeadProcess(owner(thisHost, os.Getpid())); !dead {
		t.Error("a holderless lease under this PID is taken for this run's")
	}
	if _, dead := HeldByDeadProcess(owner(thisHost, os.Getppid())); dead {
		t.Error("the parent process is dead?")
	}
	if _, dead := HeldByDeadProcess(owner("another-host", gone)); dead {
		t.Error("a process on another host cannot be judged from here")
	}
}

func TestHolderRoundTripsAndIsUniquePerRun(t *testing.T) {
	h, ok := ParseHolder(ThisRun.String())
	if !ok || h != ThisRun {
		t.Fatalf("%s → %+v %v", ThisRun, h, ok)
	}
	for _, s := range []string{"", "e1", "host=a;pid=1", "host=a;boot=b;pidns=1;pid=x;start=1;run=t", "host=a;boot=b;pidns=1;pid=1;start=1;run="} {
		if _, ok := ParseHolder(s); ok {
			t.Errorf("%q parsed as a holder", s)
		}
	}
}

func TestHolderGone(t *testing.T) {
	if ThisRun.Boot == "" || ThisRun.PIDNS == "" || ThisRun.Start == "" {
		t.Skip("no /proc: holders are judged by their heartbeat only")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	parent := ThisRun
	parent.PID, parent.Token = os.Getppid(), "parent"
	_, _, parent.Start = processIdentity(parent.PID)
	with := func(f func(*Holder)) string {
		h := parent
		f(&h)
		return h.String()
	}
	tests := []struct {
		name   string
		holder string
		gone   bool
	}{
		{"this run", ThisRun.String(), false},
		{"a live process", parent.String(), false},
		{"an exited process", with(func(h *Holder) { h.PID = cmd.Process.Pid }), true},
		{"PID 1 of this namespace, a run before it", with(func(h *Holder) { h.PID, h.Start = 1, "1" }), os.Getpid() != 1},
		{"its PID reused by another process", with(func(h *Holder) { h.Start = "1" }), true},
		{"an earlier boot", with(func(h *Holder) { h.Boot = "an-earlier-boot" }), true},
		{"another PID namespace (a container)", with(func(h *Holder) { h.PIDNS, h.PID = "1", cmd.Process.Pid }), false},
		{"another host", with(func(h *Holder) { h.Host, h.PID = "elsewhere", cmd.Process.Pid }), false},
		{"not a holder", "arn:aws:states:eu-west-1:1:execution:m:x", false},
	}
	for _, tt := range tests {
		if why, gone := HolderGone(tt.holder); gone != tt.gone {
			t.Errorf("%s (%s): gone=%v (%s), want %v", tt.name, tt.holder, gone, why, tt.gone)
		}
	}
}
