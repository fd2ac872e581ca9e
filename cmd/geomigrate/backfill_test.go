package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// backfill --progress plain prints one "[i/n]" line per item as it ends,
// and --progress json with --progress-file writes one "file" event per
// item to the file, as migrate does.
func TestBackfillProgress(t *testing.T) {
	src := t.TempDir()
	if err := os.Mkdir(filepath.Join(src, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 4
	for i := range n {
		writeFile(t, filepath.Join(src, "in", fmt.Sprintf("p%d.geojson", i)),
			fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":%d},"geometry":{"type":"Point","coordinates":[%d.5,1.5]}}]}`, i, i))
	}
	writeFile(t, filepath.Join(src, "in", "bad.tif"), "not a raster") // routed: a failed item, still a line
	line := regexp.MustCompile(`^\[\d+/5\] `)

	t.Run("plain", func(t *testing.T) {
		_, stderr, err := run(t, "backfill", src, "--prefix", "in/", "--dest", filepath.Join(t.TempDir(), "out"), "--progress", "plain")
		if err != nil {
			t.Fatalf("backfill: %v\n%s", err, stderr)
		}
		var seen []string
		for l := range strings.Lines(stderr) {
			if line.MatchString(l) {
				seen = append(seen, strings.TrimSpace(l))
			}
		}
		if len(seen) != n+1 {
			t.Fatalf("%d progress lines, want one per item (%d):\n%s", len(seen), n+1, stderr)
		}
		for i, l := range seen {
			if !strings.HasPrefix(l, fmt.Sprintf("[%d/5] ", i+1)) {
				t.Errorf("line %d: %q, want the count %d/5", i, l, i+1)
			}
		}
	})

	t.Run("json file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "progress.jsonl")
		_, stderr, err := run(t, "backfill", src, "--prefix", "in/", "--dest", filepath.Join(t.TempDir(), "out"), "--progress", "json", "--progress-file", file)
		if err != nil {
			t.Fatalf("backfill: %v\n%s", err, stderr)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		events := map[string]int{}
		for l := range strings.Lines(string(b)) {
			var ev struct{ Type string }
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("not JSON: %q: %v", l, err)
			}
			events[ev.Type]++
		}
		if events["file"] != n+1 || events["summary"] != 1 {
			t.Errorf("events %v, want %d file events and a summary", events, n+1)
		}
	})
}
