package localrun

import (
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/geomigrate/geomigrate/internal/signals"
)

// TestSummaryFitsTheWidth: the run summary of files with long keys,
// non-ASCII among them, and long messages has no line wider than the
// terminal at 60, 80 and 120 columns, and still shows every count, status
// and file name.
func TestSummaryFitsTheWidth(t *testing.T) {
	long := "archive/données/été-2024/orthophotos/département-74/dalle_0412_6524_très_longue_référence.tif"
	cjk := "archive/東京都/測量/標高データ/メッシュ_5339_45_第二版_最終.tif"
	outcomes := []Outcome{
		{Bucket: "src", Key: long, Status: StatusRemediation, Code: "CorruptSource", Message: "the raster cannot be read in full: the file is truncated or damaged: tile 0 is cut short (1502 of its 5274 bytes are in the file); upload a complete copy", Bundle: "/home/user/archive/.geomigrate-state/quarantine/src_f18888800158ac34fd9b1e6c8833cee708600d665769c03191fc6bdf86e0941a_7173aa015e6638f1/20261201T194702_vm_29208_76a3d7177411", BytesIn: 5274},
		{Bucket: "src", Key: cjk, Status: StatusCompleted, Warnings: []string{`layer "parks" mixes single and multi geometries: promoted to multi`}, BytesIn: 123456789, BytesOut: 98765432},
		{Bucket: "src", Key: "notes/" + strings.Repeat("readme-", 20) + ".txt", Status: StatusIgnored, Reason: "not geospatial"},
		{Bucket: "src", Key: "stopped.tif", Status: StatusNotStarted, Reason: "the run was interrupted (SIGINT received) before it started"},
		{Bucket: "src", Key: "f.tif", Status: StatusDeadLetter, Error: "SystemicError", Message: "AccessDenied: check permissions, buckets and the table", Retries: 4},
	}
	r := NewReport(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), outcomes)
	r.Signals = &signals.Signals{}
	*r.Signals = signals.Compute([]signals.End{{Key: long, Tier: "data_specific"}, {Key: cjk}}, nil, signals.Thresholds{})
	for _, width := range []int{60, 80, 120} {
		var b strings.Builder
		r.PrintSummary(&b, width)
		out := b.String()
		for _, l := range strings.Split(out, "\n") {
			// The bundle's path stands whole on its line, to be copied.
			if n := runewidth.StringWidth(l); n > width && strings.TrimSpace(l) != "bundle: "+outcomes[0].Bundle {
				t.Errorf("at %d a line of %d columns: %q", width, n, l)
			}
		}
		fields := strings.Fields(out)
		// Wrapped text is read back with its line breaks as spaces.
		prose := strings.Join(fields, " ")
		if bundle := outcomes[0].Bundle; !strings.Contains(out, "\n"+strings.Repeat(" ", 15)+"bundle: "+bundle+"\n") {
			t.Errorf("at %d the bundle path %s is not whole on its line under the key:\n%s", width, bundle, out)
		}
		for _, want := range []string{"completed", "remediation", "dlq", "not started", "bytes in", "117.7 MiB", "94.2 MiB",
			"CorruptSource:", "SystemicError:", "ABOVE THRESHOLD:", "data_specific", "Not started: 1 file(s)", "src/f.tif", "ABOVE THRESHOLD: investigate the source data", "Not started: 1 file(s), the run was interrupted"} {
			if !strings.Contains(prose, want) {
				t.Errorf("at %d the summary lacks %q:\n%s", width, want, out)
			}
		}
		// The totals row: every count a cell of its own.
		for _, n := range []string{"1", "5", "4"} {
			if !contains(fields, n) {
				t.Errorf("at %d the count %s is not in the summary:\n%s", width, n, out)
			}
		}
		for _, end := range []string{"référence.tif", "第二版_最終.tif"} {
			if !strings.Contains(out, end) && !strings.Contains(out, end[len(end)-8:]) {
				t.Errorf("at %d the key ending %q lost its end:\n%s", width, end, out)
			}
		}
	}
}

func contains(fields []string, w string) bool {
	for _, f := range fields {
		if f == w {
			return true
		}
	}
	return false
}
