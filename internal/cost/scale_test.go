package cost

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestScaleDocIsCurrent: docs/scale.md is exactly what WriteScaleDoc
// writes with the embedded tables, so the document cannot drift from the
// code, the prices, the measurements or the state machine. Regenerate with
// go run ./tools/scaledoc > docs/scale.md
func TestScaleDocIsCurrent(t *testing.T) {
	m, err := DefaultModel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteScaleDoc(&want, m); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("docs/scale.md is stale: run go run ./tools/scaledoc > docs/scale.md\n--- generated ---\n%s", want.String())
	}
}

// TestScaleWorkload pins the archive the document describes and the
// million-object headline figures' inputs.
func TestScaleWorkload(t *testing.T) {
	var files, bytes int64
	for _, g := range ScaleWorkload() {
		files += g.Files
		bytes += g.Bytes
	}
	if files != 1_000_000 || bytes != 36_100_200_000_000 {
		t.Errorf("workload: %d files, %d bytes", files, bytes)
	}
	for _, g := range Rerun(ScaleWorkload()) {
		if g.Path != Skipped || g.RangeRead {
			t.Errorf("rerun group %+v", g)
		}
	}
	var b strings.Builder
	m := testModel(t)
	m.Throughput.MeasuredAt, m.Throughput.Command = "then", "measure"
	m.Throughput.Formats[".shp"] = Rate{MBPerSecond: 5, OverheadMS: 200, OutputRatio: 0.25}
	m.Throughput.Formats[".geojson"] = Rate{MBPerSecond: 5, OverheadMS: 200, OutputRatio: 0.25}
	if err := WriteScaleDoc(&b, m); err != nil {
		t.Fatal(err)
	}
	e, err := Calculate(m, ScaleWorkload())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| **per 1,000 files** | **"+usd(e.PerThousandStandard)+"** | **"+usd(e.PerThousandExpress)+"** |") {
		t.Errorf("the document does not carry Calculate's cost per 1,000 files (%s, %s)", usd(e.PerThousandStandard), usd(e.PerThousandExpress))
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{num(0), "0"}, {num(999), "999"}, {num(1000), "1,000"}, {num(1234567), "1,234,567"}, {num(-1234), "-1,234"},
		{usd(0), "$0"}, {usd(0.00123), "$0.0012"}, {usd(12.345), "$12.35"}, {usd(12345.6), "$12,346"},
		{hours(1800), "30 min"}, {hours(5400), "1.5 h"}, {mbytes(50_000_000), "50 MB"}, {mbytes(10_000), "10 kB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
