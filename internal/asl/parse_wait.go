package asl

import (
	"fmt"
	"time"
)

func parseWait(st *State, p *fieldParser) error {
	st.Seconds = p.integer("Seconds")
	st.SecondsPath = p.refPath("SecondsPath")
	st.Timestamp = p.str("Timestamp")
	st.TimestampPath = p.refPath("TimestampPath")
	n := 0
	for _, k := range []string{"Seconds", "SecondsPath", "Timestamp", "TimestampPath"} {
		if p.o.has(k) {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("must have exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
	}
	if st.Seconds != nil && *st.Seconds < 0 {
		return fmt.Errorf("Seconds must not be negative")
	}
	if st.Timestamp != "" {
		if _, err := parseTimestamp(st.Timestamp); err != nil {
			return fmt.Errorf("Timestamp: %w", err)
		}
	}
	return nil
}

// parseTimestamp accepts the RFC 3339 timestamps Step Functions accepts.
func parseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp", s)
	}
	return t, nil
}
