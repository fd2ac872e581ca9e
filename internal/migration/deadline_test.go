package migration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
)

type fixedDeadline time.Duration

func (d *fixedDeadline) JobDeadline(context.Context) time.Duration { return time.Duration(*d) }

func TestJobDeadline(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	deadline := fixedDeadline(time.Hour)
	h := (&HashCheck{}).WithJobDeadline(&deadline).WithClock(func() time.Time { return now })
	tests := []struct {
		name    string
		started string
		limit   time.Duration
		want    string // in the SystemicError; "" : none
	}{
		{"no start time", "", time.Hour, ""},
		{"young", "2026-11-30T11:30:00.123Z", time.Hour, ""},
		{"old", "2026-11-30T10:59:59Z", time.Hour, "job deadline of 1h0m0s passed: the execution started 1h0m1s ago"},
		{"deadline lowered since", "2026-11-30T11:30:00Z", 10 * time.Minute, "job deadline of 10m0s passed"},
		{"unreadable start", "yesterday", time.Hour, `execution start time "yesterday"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deadline = fixedDeadline(tt.limit)
			err := h.checkDeadline(context.Background(), Invocation{Started: tt.started})
			var se *fault.SystemicError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (!errors.As(err, &se) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want a SystemicError with %q", err, tt.want)
			}
		})
	}
	if err := (&HashCheck{}).checkDeadline(context.Background(), Invocation{Started: "2000-01-01T00:00:00Z"}); err != nil {
		t.Errorf("without a deadline: %v", err)
	}
}
