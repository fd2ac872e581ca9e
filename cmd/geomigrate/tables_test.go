package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestDemoFitsTheTerminal runs the demo (sample data, its deliberately bad
// files among them) at 60, 80 and 120 columns: no line plan, migrate's
// summary or status print is wider than the terminal, the counts are still
// there, and the "ABOVE THRESHOLD" advice of the bad files is printed once
// by the run.
func TestDemoFitsTheTerminal(t *testing.T) {
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{60, 80, 120} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			t.Setenv("COLUMNS", strconv.Itoa(width))
			dest := filepath.Join(dir, "out"+strconv.Itoa(width))
			plan, _, err := run(t, "plan", samples, "--dest", dest)
			if err != nil {
				t.Fatal(err)
			}
			out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--progress", "plain")
			if err != nil {
				t.Fatalf("migrate: %v\n%s", err, stderr)
			}
			// Read with its line breaks as spaces: a wrapped column splits it.
			if n := strings.Count(strings.Join(strings.Fields(out+"\n"+stderr), " "), "ABOVE THRESHOLD"); n != 1 {
				t.Errorf("migrate printed ABOVE THRESHOLD %d times, want once:\n%s\n%s", n, out, stderr)
			}
			status, _, err := run(t, "status", "--dest", dest)
			if err != nil {
				t.Fatal(err)
			}
			for name, text := range map[string]string{"plan": plan, "migrate": out, "status": status} {
				for _, l := range strings.Split(text, "\n") {
					if n := runewidth.StringWidth(l); n > width && !onePath(l, width) {
						t.Errorf("%s: a line of %d columns at %d: %q", name, n, width, l)
					}
				}
			}
			r := lastReport(t, out)
			prose := strings.Join(strings.Fields(out), " ")
			for _, want := range []string{"completed", "remediation", "bytes in", strconv.Itoa(r.Totals.Completed), strconv.Itoa(r.Totals.Remediation), strconv.Itoa(r.Totals.Files),
				"CorruptSource:", "UnsafeSource:", "ABOVE THRESHOLD: investigate the source data"} {
				if !strings.Contains(prose, want) {
					t.Errorf("migrate's summary at %d lacks %q:\n%s", width, want, out)
				}
			}
			for _, want := range []string{"REMEDIAL", "COMPLETED", "queue remediation", "queue dead-letter", "CorruptSource:"} {
				if !strings.Contains(status, want) {
					t.Errorf("status at %d lacks %q:\n%s", width, want, status)
				}
			}
			for _, want := range []string{"Would convert 9", "Total, Standard workflow", "By format:", ".tif", "samples/vrt_passwd.tif"} {
				if !strings.Contains(plan, want) {
					t.Errorf("plan at %d lacks %q:\n%s", width, want, plan)
				}
			}
		})
	}
}

// onePath tells whether line is a label and one path wider than the
// width, which is printed whole to be copied (termtable.WriteText).
func onePath(line string, width int) bool {
	f := strings.Fields(line)
	last := f[len(f)-1]
	return strings.Contains(last, "/") && runewidth.StringWidth(strings.TrimSuffix(strings.TrimRight(line, " "), last)) <= width
}
