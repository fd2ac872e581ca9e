package gdal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// writeVectorBombs writes the vector bombs of internal/hostile into dir
// (about 75 MB in all) and returns their paths by name.
func writeVectorBombs(t testing.TB, dir string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	// 300,000 points: 77 MB held by FlatGeobuf's index, by the declared
	// count; 67 MB of rows the GeoParquet writer spills.
	if err := hostile.WritePointShapefile(dir, "points", 300_000); err != nil {
		t.Fatal(err)
	}
	paths["points"] = filepath.Join(dir, "points.shp")
	// One polygon of 1,000,000 vertices: declares one feature, holds 16 MB
	// of WKB (64 MB by the model).
	if err := hostile.WritePolygonShapefile(dir, "polygon", 1_000_000); err != nil {
		t.Fatal(err)
	}
	paths["polygon"] = filepath.Join(dir, "polygon.shp")
	writeGeoJSON := func(name string, write func(f *os.File) error) {
		p := filepath.Join(dir, name+".geojson")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	// A polygon of 800,000 vertices as GeoJSON (17 MB of text, ~400 MB
	// parsed).
	writeGeoJSON("polygon-json", func(f *os.File) error { return hostile.WritePolygonGeoJSON(f, 800_000) })
	// 2,000 points with 20 KB of text each: 40 MB of text.
	writeGeoJSON("text", func(f *os.File) error { return hostile.WriteTextGeoJSON(f, 2000, 20_000) })
	return paths
}

// Feature and vertex counts are bounded by the memory budget: under a
// 64 MiB max_memory the vector bombs are refused with BudgetExceeded, by
// the declared count (points to FlatGeobuf), the largest geometry
// (polygon) or GDAL's GeoJSON object limit (polygon-json); under the
// default budget the same files convert. GeoParquet holds no more for
// more features or more text (it spills rows to disk): the points and the
// text convert under 64 MiB too, the points through several spills.
func TestVectorBudgets(t *testing.T) {
	paths := writeVectorBombs(t, t.TempDir())
	small := func(format string) recipe.Recipe {
		r := fgbRecipe()
		r.VectorFormat = format
		r.MaxMemory = 64 << 20
		return r
	}
	def := func(format string) recipe.Recipe {
		r := fgbRecipe()
		r.VectorFormat = format
		return r
	}
	gp, fgb := recipe.FormatGeoParquet, recipe.FormatFlatGeobuf
	cases := []struct {
		name   string
		recipe recipe.Recipe
		want   string   // code, or "converted"
		says   []string // in the refusal
	}{
		{"points", small(gp), "converted", nil},
		{"points", small(fgb), string(fault.BudgetExceeded), []string{"declares 300000 features", "48.0 MiB", "FlatGeobuf", "split the layer"}},
		{"polygon", small(gp), string(fault.BudgetExceeded), []string{"feature 1 holds 15.3 MiB of geometry (WKB) and text", "48.0 MiB"}},
		{"polygon", small(fgb), string(fault.BudgetExceeded), []string{"feature 1 holds 15.3 MiB of geometry (WKB);"}},
		{"polygon-json", small(gp), string(fault.BudgetExceeded), []string{"GeoJSON feature would take more than 10 MB once parsed"}},
		{"text", small(gp), "converted", nil},
		{"text", small(fgb), "converted", nil}, // FlatGeobuf streams the text through GDAL
		{"points", def(gp), "converted", nil},
		{"points", def(fgb), "converted", nil},
		{"polygon", def(gp), "converted", nil},
		{"polygon-json", def(gp), "converted", nil},
		{"text", def(gp), "converted", nil},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.recipe.VectorFormat+"/"+budget.FormatBytes(c.recipe.MaxMemory), func(t *testing.T) {
			work := t.TempDir()
			outs, err := engine.Convert(context.Background(), paths[c.name], work, c.recipe)
			if got := codeOf(err); got != c.want {
				t.Fatalf("%s, want %s (%v)", got, c.want, err)
			}
			if err != nil {
				t.Log(err)
				for _, s := range c.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("message does not say %q", s)
					}
				}
				if entries, _ := os.ReadDir(work); len(entries) != 0 {
					t.Errorf("work dir not empty: %v", entries)
				}
				return
			}
			if len(outs) != 1 || outs[0].Stats["features"] == 0 {
				t.Fatalf("outputs %+v", outs)
			}
			// 300,000 points (29 bytes held a row) spill twice at 4 MiB.
			if c.name == "points" && c.recipe.VectorFormat == gp && c.recipe.MaxMemory == 64<<20 && outs[0].Stats["spills"] != 2 {
				t.Errorf("%d spills under 64 MiB", outs[0].Stats["spills"])
			}
		})
	}
}

// A disk that fills up under the external sort's temporary files is
// SystemicError DiskFull, as for any other local write.
func TestGeoParquetErrorDiskFull(t *testing.T) {
	spill := fmt.Errorf("geoparquet.Write: spill: %w", &os.PathError{Op: "write", Path: "/tmp/.geoparquet-run-1", Err: syscall.ENOSPC})
	err := geoParquetError("points", spill)
	var s *fault.SystemicError
	if !errors.As(err, &s) || !strings.Contains(err.Error(), "DiskFull") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%v (%T)", err, err)
	}
	if err := geoParquetError("points", errors.New("arrow: something")); !errors.As(err, &s) {
		t.Fatalf("an unclassified writer error: %v, want SystemicError", err)
	}
}
