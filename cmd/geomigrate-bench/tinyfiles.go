package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/geomigrate/geomigrate/internal/benchpair"
)

// tinyFiles: `geomigrate migrate --workers 1` over n one-point GeoJSON
// files in one directory against the conversion floor, convertfloor over
// the same files (gdal.Engine.Convert alone, one process): CPU per file
// of each, the CLI's overhead per file (the difference, run by run) and
// the CLI's peak resident set, each side a child process under GNU time.
// Both sides keep what they write until the experiment ends, and the runs
// start once the file system has forgotten earlier clean-ups
// (experiment.settle).
func tinyFiles(n int) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src := filepath.Join(dir, "src")
		if err := writeTinyFiles(src, n); err != nil {
			return nil, err
		}
		floor := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			m, out, err := child(ctx, nil, b.convertFloor, filepath.Join(src, "incoming"), filepath.Join(dir, fmt.Sprintf("floor-%d", run)))
			if err != nil {
				return m, err
			}
			if got := strings.TrimSpace(string(out)); got != strconv.Itoa(n) {
				return m, fmt.Errorf("convertfloor converted %q files of %d", got, n)
			}
			return m, nil
		}
		perFile := func(f func(benchpair.Measurement) float64) func(benchpair.Measurement) float64 {
			return func(m benchpair.Measurement) float64 { return f(m) * 1000 / float64(n) }
		}
		return &setup{a: b.migrateKeeping(src, dir), b: floor, anchor: "the conversion floor: convertfloor DIR OUTDIR (gdal.Engine.Convert alone over the same files, one process, its outputs kept as the CLI's are)",
			figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
				over := make([]float64, len(as))
				for i := range as {
					over[i] = (as[i].CPU - bs[i].CPU).Seconds() * 1000 / float64(n)
				}
				var rssGoal *benchpair.Goal
				if n >= 10000 {
					rssGoal = goalTinyFilesRSS
				}
				subject := fmt.Sprintf("`geomigrate migrate DIR --workers 1` (bbolt state store, run report written) over %s one-point GeoJSON files in one directory, a child process under GNU time", count(n))
				return []benchpair.Figure{
					{Key: fmt.Sprintf("tiny-%d-overhead-cpu", n), Title: fmt.Sprintf("migrate of %s tiny files, CLI CPU per file over the conversion floor", count(n)), Unit: "ms",
						Subject: subject + "; its CPU time (process tree) less convertfloor's over the same files in the run beside it, per file (process start of both included).",
						Values:  over, Goal: goalTinyOverhead},
					{Key: fmt.Sprintf("tiny-%d-cpu", n), Title: fmt.Sprintf("migrate of %s tiny files, CPU per file", count(n)), Unit: "ms",
						Subject: subject + "; CPU time per file.", Values: values(as, perFile(cpu)),
						Anchor: &benchpair.Anchor{Name: "conversion floor", Values: values(bs, perFile(cpu))},
						Note:   fmt.Sprintf("Wall per file %s ms (floor %s ms).", benchpair.Number(benchpair.Summarize(values(as, perFile(wall))).Median), benchpair.Number(benchpair.Summarize(values(bs, perFile(wall))).Median))},
					{Key: fmt.Sprintf("tiny-%d-peak-rss", n), Title: fmt.Sprintf("migrate of %s tiny files, peak RSS", count(n)), Unit: "MiB",
						Subject: subject + "; peak resident set of the CLI process (GNU time %M), against the floor's.", Values: values(as, rss),
						Anchor: &benchpair.Anchor{Name: "conversion floor", Values: values(bs, rss)}, Goal: rssGoal},
				}
			}}, nil
	}
}

// writeTinyFiles writes n one-point GeoJSON files, distinct content each,
// into dir/incoming, as internal/localrun's BenchmarkBackfillOverhead does.
func writeTinyFiles(dir string, n int) error {
	in := filepath.Join(dir, "incoming")
	if err := os.MkdirAll(in, 0o755); err != nil {
		return err
	}
	for i := range n {
		body := fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"id":%d},"geometry":{"type":"Point","coordinates":[%d.5,%d.25]}}]}`, i, i%359-179, i%179-89)
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("point_%05d.geojson", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
