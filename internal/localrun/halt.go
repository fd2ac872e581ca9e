package localrun

import (
	"strings"
	"sync"

	"github.com/geomigrate/geomigrate/internal/asl"
)

// Halt stops a run at the first sign that the machine, not a file, ran
// out of something every file needs: a full disk (ENOSPC, quota) or
// exhausted memory. Each remaining file would fail the same way, and the
// state machine's retries (the queue sends retry for up to ~48 s) make
// every one of them slow to fail; instead the run stops at once, the
// files not started are reported as such, and the run exits non-zero.
//
// Observe is an asl history observer (asl.WithHistory): it sees a failed
// task as it happens, not when its execution ends.
type Halt struct {
	mu     sync.Mutex
	reason string
	done   chan struct{}
}

// NewHalt returns an untripped Halt.
func NewHalt() *Halt { return &Halt{done: make(chan struct{})} }

// exhaustion markers, lower case: what fault.FromOS, the GDAL engine and
// the Lambda runtime write when the disk or memory is exhausted.
var exhaustion = []struct{ marker, reason string }{
	{"diskfull", "disk full"},
	{"no space left on device", "disk full"},
	{"disk quota exceeded", "disk quota exceeded"},
	{"out of memory", "out of memory"},
	{"outofmemory", "out of memory"},
	{"cannot allocate memory", "out of memory"},
	{"std::bad_alloc", "out of memory"},
}

// Exhaustion names the exhausted resource behind a failed task, or "" if
// it is something else. A DataError never counts: one whose message
// mentions memory (a budget refusal) is the file's problem. Errors outside
// the taxonomy do (an unclassified state-store write meeting ENOSPC is
// still a full disk).
func Exhaustion(errorName, cause string) string {
	if errorName == "DataError" {
		return ""
	}
	lc := strings.ToLower(errorName + " " + cause)
	for _, e := range exhaustion {
		if strings.Contains(lc, e.marker) {
			return e.reason
		}
	}
	return ""
}

// Observe trips the halt on a task failure caused by exhaustion.
func (h *Halt) Observe(ev asl.Event) {
	if ev.Type != asl.EventTaskFailed {
		return
	}
	reason := Exhaustion(ev.Error, ev.Cause)
	if reason == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reason == "" {
		h.reason = reason + " (" + OneLine(ev.Cause, 200) + ")"
		close(h.done)
	}
}

// Done is closed when the halt trips; nil (never ready) for a nil Halt.
func (h *Halt) Done() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.done
}

// Reason is why the run was halted, "" while it was not.
func (h *Halt) Reason() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}
