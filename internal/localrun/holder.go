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
// and process that run the execution (TIME_HOST_PID_RANDOM), so a later run
// on the same host can tell a lease whose process has died (kill -9) from
// one a live run holds.
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

// HeldByDeadProcess reports whether a lease owner is an execution of a
// process on this host that no longer runs (and is not this process).
func HeldByDeadProcess(owner string) (pid int, dead bool) {
	host, pid, ok := LeaseHolder(owner)
	if !ok || host != thisHost || pid == os.Getpid() {
		return pid, false
	}
	return pid, processGone(pid)
}
