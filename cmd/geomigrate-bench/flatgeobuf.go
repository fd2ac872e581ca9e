package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/benchpair"
)

// flatGeobuf: geomigrate's FlatGeobuf output (conversion and its
// value-level fidelity check) against ogr2ogr writing the same file with
// the same spatial index, on one generated GeoJSON set.
func flatGeobuf(name string, n int, write func(string, int) error) func(context.Context, *bench, string) (*setup, error) {
	return func(ctx context.Context, b *bench, dir string) (*setup, error) {
		src, p, what, err := generatedGeoJSON(dir, name, n, write, "FlatGeobuf")
		if err != nil {
			return nil, err
		}
		ogr := func(ctx context.Context, run int) (benchpair.Measurement, error) {
			dst := filepath.Join(dir, fmt.Sprintf("ogr2ogr-%d.fgb", run))
			defer os.Remove(dst)
			m, _, err := child(ctx, nil, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES", dst, p)
			if err != nil {
				return m, err
			}
			out, err := os.Stat(dst)
			if err != nil {
				return m, err
			}
			m.Metrics = map[string]float64{"bytes_out": float64(out.Size())}
			return m, nil
		}
		const anchor = "ogr2ogr -f FlatGeobuf -lco SPATIAL_INDEX=YES"
		return &setup{a: b.migrate(src, dir, "--vector-format", "FlatGeobuf"), b: ogr, figures: func(as, bs []benchpair.Measurement) []benchpair.Figure {
			note := fmt.Sprintf("Outputs: %d and %d bytes.", int64(as[0].Metrics["bytes_out"]), int64(bs[0].Metrics["bytes_out"]))
			return []benchpair.Figure{
				{Key: "flatgeobuf-cpu-" + name, Title: what + ", CPU time", Unit: "s",
					Subject: migrateSubject + " with --vector-format FlatGeobuf, whose fidelity check compares every geometry and attribute value of the output with the source's; user + system CPU of the process and its children (GNU time).",
					Values:  values(as, cpu), Anchor: &benchpair.Anchor{Name: anchor, Values: values(bs, cpu)}, Goal: goalFlatGeobufCPU, Note: note},
				{Key: "flatgeobuf-time-" + name, Title: what + ", wall time", Unit: "s", Subject: "the same runs, wall time.",
					Values: values(as, wall), Anchor: &benchpair.Anchor{Name: anchor, Values: values(bs, wall)}},
			}
		}}, nil
	}
}

// generatedGeoJSON writes n features of write into dir/src/name and says
// what the experiment converts: the source directory, the file, and a
// title such as "1,000,000 points GeoJSON (140 MB) → <to>".
func generatedGeoJSON(dir, name string, n int, write func(string, int) error, to string) (src, file, what string, err error) {
	src = filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", "", "", err
	}
	file = filepath.Join(src, name)
	if err := write(file, n); err != nil {
		return "", "", "", err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", "", "", err
	}
	return src, file, fmt.Sprintf("%s %s GeoJSON (%s) → %s", count(n), strings.TrimSuffix(name, ".geojson"), mb(float64(fi.Size())), to), nil
}
