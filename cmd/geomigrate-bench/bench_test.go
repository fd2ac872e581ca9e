package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/benchpair"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// TestCOGAnchorArgs: the anchor runs with exactly the engine's switches
// and every GDAL setting the engine makes.
func TestCOGAnchorArgs(t *testing.T) {
	cfg := gdal.Config{GDALData: "/g", ProjData: "/p", TmpDir: "/t", CacheMaxMB: 256, NumThreads: 3}
	b := &bench{gdalConfig: cfg}
	args := b.cogArgs("in.tif", "out.tif")
	joined := strings.Join(args, " ")
	if want := strings.Join(gdal.COGOptions(recipe.Recipe{}, false, 3), " "); !strings.Contains(joined, want) {
		t.Fatalf("args %q lack the engine's switches %q", joined, want)
	}
	for k, v := range cfg.Settings() {
		if !strings.Contains(joined, "--config "+k+" "+v+" ") {
			t.Errorf("args lack --config %s %s", k, v)
		}
	}
	if !slices.Equal(args[len(args)-2:], []string{"in.tif", "out.tif"}) {
		t.Fatalf("source and destination not last: %q", args)
	}
}

func TestExperimentsTable(t *testing.T) {
	for _, quick := range []bool{false, true} {
		b := &bench{quick: quick}
		seen := map[string]bool{}
		for _, e := range experiments(b.sizes()) {
			if e.name == "" || e.title == "" || e.setup == nil || e.runs < 1 || e.quick < 1 || seen[e.name] {
				t.Errorf("quick=%v: experiment %+v: a name, a title, a setup and runs are needed, once each", quick, e.name)
			}
			seen[e.name] = true
		}
	}
	full, quick := (&bench{}).sizes(), (&bench{quick: true}).sizes()
	if full.points != 1_000_000 || full.polygons != 100_000 || quick.points != full.points || quick.polygons != full.polygons {
		t.Fatalf("the GeoParquet sets must keep their sizes in quick mode (1,000,000 points, 100,000 polygons): %+v / %+v", full, quick)
	}
	if rasterBytes(full.bigSide) > 1<<31 || rasterBytes(full.bigSide) < 0.99*(1<<31) || full.hashBytes != 2e9 || full.vector != 10_000_000 {
		t.Fatalf("full sizes %+v", full)
	}
}

func TestSelectExperiments(t *testing.T) {
	all := []experiment{{name: "cog"}, {name: "sha256"}, {name: "cog-rss"}}
	for _, tc := range []struct {
		only    string
		want    []string
		wantErr bool
	}{
		{"", []string{"cog", "sha256", "cog-rss"}, false},
		{"sha256,cog", []string{"sha256", "cog"}, false},
		{"cog, cog-rss", []string{"cog", "cog-rss"}, false},
		{"nope", nil, true},
	} {
		got, err := selectExperiments(all, tc.only)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%q: err %v", tc.only, err)
		}
		var names []string
		for _, e := range got {
			names = append(names, e.name)
		}
		if !slices.Equal(names, tc.want) {
			t.Fatalf("%q: %v, want %v", tc.only, names, tc.want)
		}
	}
}

func TestReadFigures(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "list.json")
	os.WriteFile(list, []byte(`[{"key":"e2e","title":"end to end","unit":"s","values":[10,11],"anchor":{"name":"seed","values":[20,21]},"goal":{"of":"ratio","op":"<=","limit":0.333}}]`), 0o644)
	report := filepath.Join(dir, "report.json")
	if err := (benchpair.Report{Experiments: []benchpair.Experiment{{Key: "x"}}, Figures: []benchpair.Figure{{Key: "x", Title: "x", Values: []float64{1}}}}).WriteJSON(report); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		want    string
		pairs   int
		wantErr bool
	}{
		{list, "e2e", 0, false},
		{report, "x", 1, false},
		{filepath.Join(dir, "absent.json"), "", 0, true},
	} {
		exps, figs, err := readFigures(tc.path)
		if (err != nil) != tc.wantErr || (!tc.wantErr && (len(figs) != 1 || figs[0].Key != tc.want || len(exps) != tc.pairs)) {
			t.Fatalf("%s: %+v, %+v, %v", tc.path, exps, figs, err)
		}
	}
	_, figs, _ := readFigures(list)
	if v, ok, err := figs[0].Verdict(); !ok || err != nil || v.Met {
		t.Fatalf("included figure's verdict %+v %v %v: a median ratio of 0.51 misses a goal of ≤ 0.333", v, ok, err)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{count(10_000_000), "10,000,000"}, {count(100), "100"}, {count(1000), "1,000"},
		{gb(2e9), "2 GB"}, {gb(256e6), "0.26 GB"}, {gib(rasterBytes(23170)), "2 GiB"}, {mb(144e6), "144 MB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestChildCountsTheProcessTree: a command's CPU time includes what its
// children spent. The grandchild measures itself with GNU time; the
// benchmark's figure for the shell above it must hold at least that much
// (GNU time prints hundredths, truncated), where the shell alone spends
// next to nothing.
func TestChildCountsTheProcessTree(t *testing.T) {
	if _, err := os.Stat(timeCmd); err != nil {
		t.Skip("GNU time is not installed (apt-get install time)")
	}
	inner := filepath.Join(t.TempDir(), "inner")
	for _, tc := range []struct{ name, script string }{
		{"a child", `/usr/bin/time -f "%U %S" -o "$1" sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'`},
		{"a child in the background, waited for", `/usr/bin/time -f "%U %S" -o "$1" sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' & wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := child(t.Context(), nil, "sh", "-c", tc.script, "sh", inner)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(inner)
			if err != nil {
				t.Fatal(err)
			}
			var user, sys float64
			if _, err := fmt.Sscan(string(raw), &user, &sys); err != nil {
				t.Fatalf("%q: %v", raw, err)
			}
			own := user + sys
			if own < 0.05 {
				t.Fatalf("the grandchild spent %.2f s: too little to tell", own)
			}
			if got := m.CPU.Seconds(); got+0.01 < own {
				t.Fatalf("the tree's CPU time %.3f s is less than the grandchild's own %.2f s", got, own)
			}
			if m.Wall <= 0 || m.MaxRSS <= 0 {
				t.Fatalf("measurement %+v", m)
			}
		})
	}
}
