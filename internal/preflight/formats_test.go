package preflight

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// driverProbe is fakeProbe with a GDAL build's driver list (HasDriver) and
// what its drivers identify beyond the allow-list.
type driverProbe struct {
	*fakeProbe
	have  map[string]bool
	other map[string]string // extension → a driver outside the allow-list
}

func (p driverProbe) Identify(name string, allowed, siblings []string) string {
	if allowed == nil {
		return p.other[strings.ToLower(filepath.Ext(name))]
	}
	return p.fakeProbe.Identify(name, allowed, siblings)
}

func (p driverProbe) HasDriver(name string) bool { return p.have[name] }

// TestUnidentifiedSaysWhatGDALSays: a file no allowed driver recognises is
// identified by another driver (UnsupportedFormat naming it), needs a
// driver or version this GDAL lacks (DriverUnavailable), or is not known.
func TestUnidentifiedSaysWhatGDALSays(t *testing.T) {
	cases := []struct {
		name, data string
		have       map[string]bool
		want       fault.Code
		says       string
	}{
		{"dem.pix", "PCIDSK  ", nil, fault.UnsupportedFormat, "identifies this file as PCIDSK"},
		{"table.parquet", "PAR1", map[string]bool{}, fault.DriverUnavailable, "Parquet driver"},
		{"table.parquet", "PAR1", map[string]bool{"Parquet": true}, fault.UnsupportedFormat, "mislabelled or damaged"},
		{"planet.osm.pbf", "\x00\x00\x00\x0dOSMHeader", map[string]bool{}, fault.DriverUnavailable, "OSM driver"},
		{"ortho.sid", "msid", map[string]bool{}, fault.DriverUnavailable, "MrSID driver"},
		{"pts.fgb", "fgb\x02fgb\x00", map[string]bool{"FlatGeobuf": true}, fault.DriverUnavailable, "FlatGeobuf version 2"},
		{"notes.xyz", "hello", map[string]bool{}, fault.UnsupportedFormat, "suggests otherwise"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := driverProbe{fakeProbe: newProbe(), have: c.have, other: map[string]string{".pix": "PCIDSK"}}
			_, err := Local(write(t, t.TempDir(), c.name, []byte(c.data)), recipe.Recipe{}, p)
			if fault.CodeOf(err) != c.want || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.want, c.says)
			}
		})
	}
}

// TestZipBudgets: an entry is held to the byte budget whatever its ratio;
// the ratio rule refuses only entries inflating past the floor.
func TestZipBudgets(t *testing.T) {
	zipped := func(t *testing.T, name string, size int) string {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(make([]byte, size))
		zw.Close()
		p := filepath.Join(t.TempDir(), name+".zip")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		size     int
		maxBytes int64
		want     fault.Code
	}{
		{"a tile under the floor at ~1000:1", 3 << 20, 0, ""},
		{"under the floor, over the byte budget", 3 << 20, 1 << 20, fault.BudgetExceeded},
		{"over the floor at ~1000:1", zipRatioFloor + 1<<20, 0, fault.BudgetExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &fakeProbe{byExt: map[string]string{".hgt": "SRTMHGT"}}
			_, err := Local(zipped(t, "N45E006.hgt", c.size), recipe.Recipe{MaxBytes: c.maxBytes}, p)
			if fault.CodeOf(err) != c.want {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestCSVAndTopoJSONNeedTheirOwnChecks: a CSV needs a recipe rule, a
// TopoJSON fits its parse in the memory budget, a CSV's companion must be
// a regular file.
func TestCSVAndTopoJSONNeedTheirOwnChecks(t *testing.T) {
	p := &fakeProbe{byExt: map[string]string{".csv": "CSV", ".topojson": "TopoJSON"}}
	csvRule := recipe.Recipe{CSVGeometry: recipe.CSVGeometryWKT, CSVWKTColumn: "WKT"}
	dir := t.TempDir()
	csv := write(t, dir, "a.csv", []byte("WKT\nPOINT (1 2)\n"))
	if _, err := Local(csv, recipe.Recipe{}, p); fault.CodeOf(err) != fault.UnsupportedFormat || !strings.Contains(err.Error(), "csv: {geometry:") {
		t.Errorf("CSV without a rule: %v", err)
	}
	if _, err := Local(csv, csvRule, p); err != nil {
		t.Errorf("CSV with a rule: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "a.csvt")); err != nil {
		t.Fatal(err)
	}
	if _, err := Local(csv, csvRule, p); fault.CodeOf(err) != fault.UnsafeSource {
		t.Errorf("CSV with a linked .csvt: %v", err)
	}
	topo := write(t, t.TempDir(), "t.topojson", []byte(`{"type":"Topology","objects":{},"arcs":[]}`))
	if _, err := Local(topo, recipe.Recipe{MaxMemory: 24 * 1024}, p); err != nil {
		t.Errorf("small TopoJSON: %v", err)
	}
	if _, err := Local(topo, recipe.Recipe{MaxMemory: 24 * 10}, p); fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("TopoJSON over budget: %v", err)
	}
}
