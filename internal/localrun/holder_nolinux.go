//go:build !linux

package localrun

// processIdentity has no /proc here: without a boot ID no holder is
// judged by its PID, only by its heartbeat.
func processIdentity(int) (boot, pidns, start string) { return "", "", "" }
