//go:build unix

package localrun

import (
	"errors"
	"syscall"
)

// processGone: signal 0 checks for existence without sending anything;
// ESRCH means no such process (EPERM: it exists, owned by someone else).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
