//go:build !linux

package localrun_test

import "time"

// CPU times are measured on Linux only; elsewhere the CPU figures read 0.

func threadCPU() time.Duration { return 0 }

func processCPU() time.Duration { return 0 }

func resetPeakRSS() {}

func peakRSS() int64 { return 0 }
