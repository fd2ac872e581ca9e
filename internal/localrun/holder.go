package localrun

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// thisHost is the host part of execution names: the hostname with what an
// execution name may not hold (only letters, digits, - and _) replaced.
var thisHost = func() string {
	h, _ := os.Hostname()
	h = regexp.MustCompile(`[^A-Za-z0-9-]+`).ReplaceAllString(h, "-")
	if h == "" {
		h = "localhost"
	}
	return h[:min(len(h), 32)]
}()

// ExecutionName is unique per run: it is also the lease owner, and a new
// run must not mistake an old run's lease for its own. It names the host
// and process that run the execution (TIME_HOST_PID_RANDOM) for people;
// which run holds a lease, and whether it still runs, is the lease's
// holder and heartbeat (RunHolder).
func ExecutionName(key string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%s_%d_%s", time.Now().UTC().Format("20060102T150405"), thisHost, os.Getpid(), hex.EncodeToString(b[:]))
}

// LeaseHolder reads the host and process ID out of a lease owner written
// by an execution named by ExecutionName (the owner is the execution ARN,
// whose last segment is the name). ok is false for other owners (Step
// Functions on AWS).
func LeaseHolder(owner string) (host string, pid int, ok bool) {
	name := owner[strings.LastIndex(owner, ":")+1:]
	parts := strings.Split(name, "_")
	if len(parts) != 4 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return parts[1], pid, true
}

// Holder identifies one run (one geomigrate process) across hosts,
// reboots, containers and PID reuse: a PID means something only on the
// same host, in the same boot and the same PID namespace, and names the
// same process only while that process's start time is the same. Token is
// random per run, so no other run can mistake a lease for its own (PID 1
// of one container and PID 1 of the next are different runs).
type Holder struct {
	Host  string
	Boot  string // the kernel's boot ID: a reboot ends every run
	PIDNS string // the PID namespace: a PID is only meaningful inside it
	PID   int
	Start string // the process's start time since boot (clock ticks)
	Token string
}

// String is the holder as a lease records it (statestore.Job.Holder).
func (h Holder) String() string {
	return fmt.Sprintf("host=%s;boot=%s;pidns=%s;pid=%d;start=%s;run=%s", h.Host, h.Boot, h.PIDNS, h.PID, h.Start, h.Token)
}

// ParseHolder reads a lease's holder; ok is false for anything String did
// not write.
func ParseHolder(s string) (Holder, bool) {
	var h Holder
	seen := 0
	for _, f := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Holder{}, false
		}
		switch k {
		case "host":
			h.Host = v
		case "boot":
			h.Boot = v
		case "pidns":
			h.PIDNS = v
		case "pid":
			pid, err := strconv.Atoi(v)
			if err != nil {
				return Holder{}, false
			}
			h.PID = pid
		case "start":
			h.Start = v
		case "run":
			h.Token = v
		default:
			return Holder{}, false
		}
		seen++
	}
	return h, seen == 6 && h.Token != ""
}

// ThisRun is this process's holder.
var ThisRun = func() Holder {
	var b [8]byte
	_, _ = rand.Read(b[:])
	h := Holder{Host: thisHost, PID: os.Getpid(), Token: hex.EncodeToString(b[:])}
	h.Boot, h.PIDNS, h.Start = processIdentity(h.PID)
	return h
}()

// HolderGone reports whether the run that wrote holder has ended, as far
// as this process can tell without its heartbeat: a run of this host's
// earlier boot, or one whose process (same boot, same PID namespace) is
// gone or is now another process. why says how it is known. A run on
// another host or in another PID namespace cannot be judged from here:
// its heartbeat decides (statestore.Live).
func HolderGone(holder string) (why string, gone bool) {
	h, ok := ParseHolder(holder)
	me := ThisRun
	switch {
	case !ok || h.Token == me.Token || h.Host != me.Host || h.Boot == "" || me.Boot == "":
		return "", false
	case h.Boot != me.Boot:
		return fmt.Sprintf("run %s on this host ended with its boot %s", h.Token, h.Boot), true
	case h.PIDNS == "" || h.PIDNS != me.PIDNS:
		return "", false
	case processGone(h.PID):
		return fmt.Sprintf("process %d on this host is gone", h.PID), true
	}
	if _, _, start := processIdentity(h.PID); start != "" && h.Start != "" && start != h.Start {
		return fmt.Sprintf("process %d on this host is gone (its PID now names another process)", h.PID), true
	}
	return "", false
}

// HeldByDeadProcess reports whether a lease owner is an execution of a
// process on this host that no longer runs, for a lease without a holder
// (written by an earlier version). This run names every lease it takes,
// so a holderless lease under this process's own PID is an earlier
// process's that had the same PID (PID 1 of a restarted container).
func HeldByDeadProcess(owner string) (pid int, dead bool) {
	host, pid, ok := LeaseHolder(owner)
	if !ok || host != thisHost {
		return pid, false
	}
	return pid, pid == os.Getpid() || processGone(pid)
}
