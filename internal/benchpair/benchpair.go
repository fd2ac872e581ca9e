// Package benchpair measures geomigrate against an anchor on a shared
// machine: the two commands of a pair run alternately (A, B, A, B …) so
// that both see the same load, and each figure is reported as the median
// of its per-pair ratios with their spread. A figure may instead be
// compared with a published constant (a tool that cannot run here) or
// with a goal alone.
//
// The package holds the arithmetic, the run order, the report and its
// rendering (text for make bench, Markdown for docs/benchmarks.md); what
// is run lives in cmd/geomigrate-bench.
package benchpair

import (
	"context"
	"fmt"
	"time"
)

// Measurement is what one run of one side gave.
type Measurement struct {
	Wall   time.Duration
	CPU    time.Duration // user + system of the process and the descendants it waited for
	MaxRSS int64         // peak resident set of the child process, bytes
	// Metrics are figures the run reported itself (a Go benchmark's
	// custom metrics, an output's size …), by name.
	Metrics map[string]float64
}

// Side runs one side of a pair once; run counts from 0.
type Side func(ctx context.Context, run int) (Measurement, error)

// Alternate runs a and b n times each, in the order A, B, A, B …, so that
// a drifting load falls on both sides alike. With b nil only a runs. The
// first error stops the runs and is returned with what was measured.
func Alternate(ctx context.Context, n int, a, b Side) (as, bs []Measurement, err error) {
	for i := range n {
		for _, s := range []struct {
			name string
			run  Side
			into *[]Measurement
		}{{"A", a, &as}, {"B", b, &bs}} {
			if s.run == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return as, bs, err
			}
			m, err := s.run(ctx, i)
			if err != nil {
				return as, bs, fmt.Errorf("benchpair.Alternate: %s run %d: %w", s.name, i+1, err)
			}
			*s.into = append(*s.into, m)
		}
	}
	return as, bs, nil
}
