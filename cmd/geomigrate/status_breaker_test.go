package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/breaker/breakertest"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/faultstore"
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
	tests := []struct {
		width int
		want  []string
	}{
		{0, []string{
			"breaker s3:dest  OPEN       files wait; probe in 42s (opened 2 time(s)); last error: s3.Head: SlowDown",
			"breaker s3:raw   HALF_OPEN  one probe in flight (opened 1 time(s))",
			"breaker s3:src   CLOSED     0 recent failure(s), opened 3 time(s)",
		}},
		{60, []string{
			"breaker s3:dest  OPEN       files wait; probe in 42s (opened",
			"                            2 time(s)); last error: s3.Head:",
			"                            SlowDown",
			"breaker s3:raw   HALF_OPEN  one probe in flight (opened 1",
			"                            time(s))",
			"breaker s3:src   CLOSED     0 recent failure(s), opened 3",
			"                            time(s)",
		}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := printBreakers(ctx, &out, s, now, tt.width); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(tt.want) {
			t.Fatalf("width %d: status breaker lines:\n%s", tt.width, out.String())
		}
		for i := range tt.want {
			if lines[i] != tt.want[i] {
				t.Errorf("width %d line %d:\n got %q\nwant %q", tt.width, i, lines[i], tt.want[i])
			}
		}
	}
}

// TestMigrateWaitsOutADeadDestination runs the CLI on the embedded
// backends with the destination failing its first six HEADs: the fifth
// opens the destination's breaker, the file waits (twice, one probe
// failing) instead of going to the dead-letter queue, completes, and
// `status` shows the breaker closed again after opening twice.
func TestMigrateWaitsOutADeadDestination(t *testing.T) {
	t.Setenv("GEOMIGRATE_RETRY_WAIT_SCALE", "0.01")
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	mkdirs(t, src)
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(src, "dem_utm33.tif"))
	var injected *faultstore.Store
	wrapObjects = func(s objectstore.Store) objectstore.Store {
		injected = faultstore.New(s, faultstore.Rule{Op: faultstore.OpHead, Times: 6, Kind: faultstore.SlowDown,
			Match: func(bucket, _ string) bool { return bucket == destBucket }})
		return injected
	}
	t.Cleanup(func() { wrapObjects = func(s objectstore.Store) objectstore.Store { return s } })

	out, stderr, err := run(t, "migrate", src, "--dest", dest, "--breaker-cooldown", "1s", "--progress", "plain")
	if err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	r := lastReport(t, out)
	if len(r.Files) != 1 || r.Files[0].Status != localrun.StatusCompleted || r.Totals.DeadLetter != 0 {
		t.Fatalf("report %+v, want the file completed and nothing dead-lettered", r.Files)
	}
	if n := injected.Injected(faultstore.OpHead); n != 6 {
		t.Fatalf("%d HEADs of the destination failed, want 6", n)
	}
	status, _, err := run(t, "status", "--dest", dest)
	if err != nil || !strings.Contains(status, "breaker s3:dest") || !strings.Contains(status, "CLOSED") || !strings.Contains(status, "opened 2 time(s)") {
		t.Fatalf("status: %v\n%s", err, status)
	}
}
