package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/breaker/breakertest"
)

func TestStatusShowsEachBreaker(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := breakertest.NewMemory()
	for _, r := range []breaker.Record{
		{Dependency: "s3:dest", State: breaker.Open, Failures: 5, OpenUntil: now.Add(42 * time.Second), Opened: 2, LastError: "s3.Head: SlowDown"},
		{Dependency: "s3:raw", State: breaker.HalfOpen, Opened: 1},
		{Dependency: "s3:src", State: breaker.Closed, Opened: 3},
	} {
		if err := s.PutBreaker(ctx, r, 0); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := printBreakers(ctx, &out, s, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"breaker s3:dest              OPEN      files wait; probe in 42s (opened 2 time(s)); last error: s3.Head: SlowDown",
		"breaker s3:raw               HALF_OPEN one probe in flight (opened 1 time(s))",
		"breaker s3:src               CLOSED    0 recent failure(s), opened 3 time(s)",
	}
	if len(lines) != len(want) {
		t.Fatalf("status breaker lines:\n%s", out.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], want[i])
		}
	}
}
