package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertAll: every file of the directory is converted, its files left
// as they were and one output each kept in the output directory, and a file
// the engine refuses fails the floor rather than being skipped, so the
// floor never covers fewer files than the CLI.
func TestConvertAll(t *testing.T) {
	point := func(i int) string {
		return fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":%d},"geometry":{"type":"Point","coordinates":[%d.5,10.25]}}]}`, i, i)
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    int
		wantErr string
	}{
		{"three points", map[string]string{"a.geojson": point(1), "b.geojson": point(2), "c.geojson": point(3)}, 3, ""},
		{"a file the engine refuses", map[string]string{"a.geojson": point(1), "b.geojson": "not json"}, 0, "b.geojson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(t.TempDir(), "out")
			got, err := convertAll(context.Background(), dir, out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("convertAll = %d, %v; want an error naming %s", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("convertAll = %d, %v; want %d", got, err, tc.want)
			}
			left, err := os.ReadDir(dir)
			if err != nil || len(left) != len(tc.files) {
				t.Fatalf("the source directory holds %d entries after the run (%v), want its %d files", len(left), err, len(tc.files))
			}
			kept, err := filepath.Glob(filepath.Join(out, "*.parquet"))
			if err != nil || len(kept) != tc.want {
				t.Fatalf("the output directory holds %d outputs (%v), want %d", len(kept), err, tc.want)
			}
		})
	}
}
