package main

// The GeoParquet figures: geomigrate against planetlabs/gpq on the same
// GeoJSON file (docs/decisions/0111).

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/geomigrate/geomigrate/internal/benchpair"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// geoParquet: `geomigrate migrate` of a generated GeoJSON set of n
// features (internal/sampledata) to GeoParquet, paired with gpq (planetlabs/gpq
// at 2baf6be, built by make bench-gpq) converting the same file: rows per
// CPU-second and per wall second, bytes, and for a set whose output
// carries the bbox covering (polygons) the bytes without it.
func geoParquet(name string, n int, write func(string, int) error, bytesGoal *benchpair.Goal) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		if _, err := os.Stat(b.gpq); err != nil {
			return nil, fmt.Errorf("the anchor gpq is not built (make bench-gpq with GPQ_ARCHIVE, the planetlabs/gpq archive): %w", err)
		}
		src, p, what, err := generatedGeoJSON(dir, name, n, write, "GeoParquet")
		if err != nil {
			return nil, err
		}
		inspect := func(m *benchpair.Measurement, out string) error { return parquetMetrics(m, out, int64(n)) }
		a := b.migrateThen(src, dir, inspect)
		gpqSide := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			out := filepath.Join(dir, fmt.Sprintf("gpq-%d.parquet", run))
			defer os.Remove(out)
			m, _, err := child(ctx, nil, b.gpq, "convert", p, out)
			if err != nil {
				return m, err
			}
			return m, inspect(&m, out)
		}
		return &setup{a: a, b: gpqSide, figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			perCPU := func(m benchpair.Measurement) float64 { return float64(n) / m.CPU.Seconds() }
			perWall := func(m benchpair.Measurement) float64 { return float64(n) / m.Wall.Seconds() }
			megabytes := func(key string) func(m benchpair.Measurement) float64 {
				return func(m benchpair.Measurement) float64 { return m.Metrics[key] / 1e6 }
			}
			anchor := func(f func(benchpair.Measurement) float64) *benchpair.Anchor {
				return &benchpair.Anchor{Name: "gpq convert", Values: values(bs, f)}
			}
			sides := "Pairs alternated: " + migrateSubject + ", against `bin/bench/gpq convert IN.geojson OUT.parquet` (planetlabs/gpq at 2baf6be, built by make bench-gpq; its defaults: ZSTD, one row group, no covering) on the same file, each a child process under GNU time"
			figs := []benchpair.Figure{
				{Key: "geoparquet-rows-cpu-" + name, Title: what + ", rows per CPU-second", Unit: "rows/s",
					Subject: sides + "; features ÷ (user + system CPU of the process and its children).", Values: values(as, perCPU), Anchor: anchor(perCPU), Goal: goalGPQRows,
					Note: "geomigrate's side does the whole migration, gpq's the conversion alone: GDAL's GeoJSON reader opens the file (a full first pass), the writer reads every feature once, checking it as the preflight scan would (a layer of one declared type, docs/decisions/0114), then the fidelity check reads the output back."},
				{Key: "geoparquet-rows-wall-" + name, Title: what + ", rows per wall second", Unit: "rows/s",
					Subject: "the same runs, features ÷ wall time.", Values: values(as, perWall), Anchor: anchor(perWall)},
				{Key: "geoparquet-bytes-" + name, Title: what + ", bytes", Unit: "MB",
					Subject: "the same runs, the output file's size.", Values: values(as, megabytes("bytes_out")), Anchor: anchor(megabytes("bytes_out")), Goal: bytesGoal},
			}
			if len(as) > 0 && as[0].Metrics["covering_bytes"] > 0 {
				without := func(m benchpair.Measurement) float64 {
					return (m.Metrics["bytes_out"] - m.Metrics["covering_bytes"]) / 1e6
				}
				figs = append(figs, benchpair.Figure{Key: "geoparquet-bytes-without-covering-" + name, Title: what + ", bytes without the bbox covering", Unit: "MB",
					Subject: "the same runs: geomigrate's file less the compressed column chunks of its bbox covering columns (gpq writes none).",
					Values:  values(as, without), Anchor: anchor(megabytes("bytes_out")), Goal: goalGPQBytes,
					Note: fmt.Sprintf("The covering took %s MB (docs/decisions/0025, 0026).", benchpair.Number(benchpair.Summarize(values(as, megabytes("covering_bytes"))).Median))})
			}
			return append(figs, benchpair.Figure{Key: "geoparquet-rss-" + name, Title: what + ", peak RSS", Unit: "MiB",
				Subject: "the same runs, peak resident set of the process.", Values: values(as, rss), Anchor: anchor(rss)})
		}}, nil
	}
}

// parquetMetrics records a GeoParquet file's size and the compressed bytes
// of its bbox covering columns (0 without one), and checks that it holds
// rows rows.
func parquetMetrics(m *benchpair.Measurement, path string, rows int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	info, err := geoparquet.ReadInfo(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if info.Rows != rows {
		return fmt.Errorf("%s holds %d rows, the source %d", path, info.Rows, rows)
	}
	cols, err := columnBytes(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if m.Metrics == nil {
		m.Metrics = map[string]float64{}
	}
	m.Metrics["bytes_out"] = float64(fi.Size())
	if info.CoveringColumn != "" {
		m.Metrics["covering_bytes"] = float64(cols[info.CoveringColumn])
	}
	return nil
}

// columnBytes are the compressed bytes of a Parquet file's column chunks
// over all row groups, by top-level column (a struct's fields summed).
func columnBytes(r io.ReaderAt, size int64) (map[string]int64, error) {
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	md := rdr.MetaData()
	out := map[string]int64{}
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, err
			}
			out[cc.PathInSchema()[0]] += cc.TotalCompressedSize()
		}
	}
	return out, nil
}
