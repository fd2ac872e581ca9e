package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// TestStatusShowsTheLatestJobPerSource: a file routed to remediation, fixed
// and replayed is COMPLETED in status (its old REMEDIAL job is history, not
// a current problem), and the remediation queue counts only messages not
// acknowledged.
func TestStatusShowsTheLatestJobPerSource(t *testing.T) {
	dir := t.TempDir()
	all, src, dest := filepath.Join(dir, "all"), filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if _, err := sampledata.Write(all); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(all, "no_crs.tif"), filepath.Join(src, "no_crs.tif"))
	if out, stderr, err := run(t, "migrate", src, "--dest", dest, "--progress", "plain"); err != nil {
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	status := statusOf(t, dest)
	if status.rows["src/no_crs.tif"] != "REMEDIAL" || status.queues["remediation"] != "1" {
		t.Fatalf("before the fix: %+v\n%s", status, status.text)
	}

	copyFile(t, filepath.Join(all, "dem_utm33.tif"), filepath.Join(src, "no_crs.tif")) // the fix
	if out, stderr, err := run(t, "replay", "--dest", dest, "--queue", "remediation", "--progress", "plain"); err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, out, stderr)
	}
	status = statusOf(t, dest)
	if got, listed := status.rows["src/no_crs.tif"]; listed {
		t.Errorf("after the fix and replay, status lists src/no_crs.tif as %q, want it only counted as COMPLETED\n%s", got, status.text)
	}
	if status.counts["REMEDIAL"] != "" || status.counts["COMPLETED"] != "1" {
		t.Errorf("status counts %v, want COMPLETED 1 and no REMEDIAL\n%s", status.counts, status.text)
	}
	if got := status.queues["remediation"]; got != "0" {
		t.Errorf("remediation queue shows %s message(s), want 0 once replay acknowledged it\n%s", got, status.text)
	}
	if out, _, err := run(t, "status", "--dest", dest, "--status", "COMPLETED"); err != nil || !strings.Contains(out, "COMPLETED  src/no_crs.tif") {
		t.Errorf("status --status COMPLETED does not list the fixed file: %v\n%s", err, out)
	}
	if out, _, err := run(t, "status", "--dest", dest, "--status", "REMEDIAL"); err != nil || strings.Contains(out, "no_crs.tif") {
		t.Errorf("status --status REMEDIAL still lists the fixed file: %v\n%s", err, out)
	}
	// --all still shows the superseded job, for lineage.
	out, _, err := run(t, "status", "--dest", dest, "--all")
	if err != nil || !strings.Contains(out, "REMEDIAL") {
		t.Errorf("status --all: %v\n%s", err, out)
	}
}

type statusView struct {
	text   string
	counts map[string]string // status → count
	queues map[string]string // queue → messages
	rows   map[string]string // source → status (every listed row)
}

// statusOf runs `status` and parses it (rows list what is not completed).
func statusOf(t *testing.T, dest string) statusView {
	t.Helper()
	out, stderr, err := run(t, "status", "--dest", dest)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	v := statusView{text: out, counts: map[string]string{}, queues: map[string]string{}, rows: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && strings.ToUpper(f[0]) == f[0]:
			v.counts[f[0]] = f[1]
		case len(f) >= 3 && f[0] == "queue":
			v.queues[f[1]] = f[2]
		case len(f) >= 2 && f[0] != "STATUS" && strings.Contains(f[1], "/") && strings.ToUpper(f[0]) == f[0]:
			v.rows[f[1]] = f[0]
		}
	}
	return v
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
