package gdal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// TestPreflight: Preflight accepts every good sample, refuses the bad ones
// preflight is there for with the code Convert gives them (a missing CRS is
// found only after the full open: it passes), and writes nothing beside the
// sources. PreflightReader, given the same bytes by range, agrees on the
// single-file samples.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	ss, err := sampledata.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	r := fgbRecipe()
	tests := map[string]fault.Code{ // bad samples: what preflight says
		"truncated.tif":    "", // a valid header: refused by the full open
		"no_crs.tif":       "", // refused by the CRS check after the open
		"vrt_passwd.tif":   fault.UnsafeSource,
		"not_a_raster.tif": fault.UnsupportedFormat,
		"empty.tif":        fault.CorruptSource,
		"pixel_bomb.tif":   fault.BudgetExceeded,
	}
	for _, s := range ss {
		name := filepath.Base(s.Path)
		t.Run(name, func(t *testing.T) {
			want, listed := tests[name]
			if s.Bad && !listed {
				t.Fatalf("bad sample %s not in this test's table", name)
			}
			driver, err := engine.Preflight(context.Background(), s.Path, r)
			if got := fault.CodeOf(err); got != want || (err == nil) != (driver != "") {
				t.Fatalf("Preflight = %q, %v (code %q), want code %q", driver, err, got, want)
			}
			if want != "" && want != fault.Code(s.Expect) {
				t.Fatalf("table says %s, Convert refuses with %s", want, s.Expect)
			}
			if formatsOfOneFile(name) {
				b, err := os.ReadFile(s.Path)
				if err != nil {
					t.Fatal(err)
				}
				rdriver, rerr := engine.PreflightReader(context.Background(), bytes.NewReader(b), int64(len(b)), name, r)
				if fault.CodeOf(rerr) != want || rdriver != driver {
					t.Errorf("PreflightReader = %q, %v; Preflight = %q, %v", rdriver, rerr, driver, err)
				}
			}
		})
	}
	if after := listDir(t, dir); after != before {
		t.Errorf("preflight wrote beside the sources:\nbefore %s\nafter  %s", before, after)
	}
}

// formatsOfOneFile: samples read without sidecars (a ranged read sees the
// object alone).
func formatsOfOneFile(name string) bool {
	return strings.HasSuffix(name, ".tif") || strings.HasSuffix(name, ".geojson")
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		names = append(names, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}
