package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/plan"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// planRecipe excludes one glob and gives another its own compression.
const planRecipe = `version: 1
exclude: ["scratch/**"]
defaults:
  raster: {compression: ZSTD, level: 9}
rules:
  - match: "dem/**"
    raster: {compression: DEFLATE, level: 6}
`

// statusOfAction is the run report's status of a file for each plan
// action (a refusal in preflight is a data problem: remediation).
var statusOfAction = map[string]string{
	plan.ActionConvert: localrun.StatusCompleted,
	plan.ActionSkip:    localrun.StatusSkipped,
	plan.ActionIgnore:  localrun.StatusIgnored,
	plan.ActionRefuse:  localrun.StatusRemediation,
}

// TestPlanWithRecipeFilePredictsMigrate: with --recipe, plan's decision and
// recipe hash for every file are the run report's of the migrate that
// follows, with the same --recipe; a second plan then skips exactly the
// files that migrate converted. Without --recipe, plan would predict
// another run (the check that the flag is not ignored).
func TestPlanWithRecipeFilePredictsMigrate(t *testing.T) {
	dir := t.TempDir()
	samples, src, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if _, err := sampledata.Write(samples); err != nil {
		t.Fatal(err)
	}
	// rule: the recipe's part that applies (dem: rule 1, else the
	// defaults; "" where no recipe is resolved).
	files := []struct {
		from, key  string
		action     string // before any run
		reason     string
		rule       string
		afterwards string // plan's action after the migrate
	}{
		{"dem_utm33.tif", "dem/a.tif", plan.ActionConvert, "", "dem", plan.ActionSkip},
		{"temperature_f32.tif", "dem/b.tif", plan.ActionConvert, "", "dem", plan.ActionSkip},
		{"empty.tif", "dem/empty.tif", plan.ActionRefuse, "CorruptSource", "dem", plan.ActionSkip}, // awaiting remediation
		{"landcover_4326.tif", "other/c.tif", plan.ActionConvert, "", "defaults", plan.ActionSkip},
		{"parks.geojson", "parks.geojson", plan.ActionConvert, "", "defaults", plan.ActionSkip},
		{"dem_utm33.tif", "scratch/x.tif", plan.ActionIgnore, migration.ReasonExcluded, "", plan.ActionIgnore},
		{"", "notes.txt", plan.ActionIgnore, "not a geospatial format (.txt)", "", plan.ActionIgnore},
	}
	for _, f := range files {
		to := filepath.Join(src, filepath.FromSlash(f.key))
		mkdirs(t, filepath.Dir(to))
		if f.from == "" {
			if err := os.WriteFile(to, []byte("not data"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		copyFile(t, filepath.Join(samples, f.from), to)
	}
	recipePath := filepath.Join(dir, "recipe.yaml")
	if err := os.WriteFile(recipePath, []byte(planRecipe), 0o644); err != nil {
		t.Fatal(err)
	}
	byKey := func(r plan.Report) map[string]plan.File {
		m := map[string]plan.File{}
		for _, f := range r.Files {
			m[f.Key] = f
		}
		if len(m) != len(files) {
			t.Fatalf("plan lists %d file(s), want %d: %+v", len(m), len(files), r.Files)
		}
		return m
	}

	before := treeState(t, dir)
	planned := byKey(planJSON(t, src, "--dest", dest, "--recipe", recipePath))
	if after := treeState(t, dir); after != before {
		t.Fatalf("plan wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
	without := byKey(planJSON(t, src, "--dest", dest))

	out, stderr, err := run(t, "migrate", src, "--dest", dest, "--recipe", recipePath, "--progress", "plain")
	if err != nil { // the empty TIFF goes to remediation: a data outcome, not a failure
		t.Fatalf("migrate: %v\n%s\n%s", err, out, stderr)
	}
	ran := map[string]localrun.Outcome{}
	for _, o := range lastReport(t, out).Files {
		ran[o.Key] = o
	}
	replanned := byKey(planJSON(t, src, "--dest", dest, "--recipe", recipePath))

	hashOfRule := map[string]string{}
	for _, f := range files {
		t.Run(f.key, func(t *testing.T) {
			p, o := planned[f.key], ran[f.key]
			if p.Action != f.action || !strings.Contains(p.Reason, f.reason) {
				t.Errorf("plan: %s (%s), want %s (%s)", p.Action, p.Reason, f.action, f.reason)
			}
			if want := statusOfAction[p.Action]; o.Status != want {
				t.Errorf("plan said %s (%s), migrate's report says %s (%s %s), want %s", p.Action, p.Reason, o.Status, o.Reason, o.Message, want)
			}
			if p.RecipeHash != o.RecipeHash {
				t.Errorf("plan's recipe %q, migrate's report %q", p.RecipeHash, o.RecipeHash)
			}
			if (f.rule == "") != (p.RecipeHash == "") {
				t.Errorf("recipe hash %q for a file whose recipe part is %q", p.RecipeHash, f.rule)
			}
			if f.rule != "" {
				if h, ok := hashOfRule[f.rule]; ok && h != p.RecipeHash {
					t.Errorf("recipe %s, another file of %s has %s", p.RecipeHash, f.rule, h)
				}
				hashOfRule[f.rule] = p.RecipeHash
			}
			again := replanned[f.key]
			if again.Action != f.afterwards {
				t.Errorf("after the migrate, plan: %s (%s), want %s", again.Action, again.Reason, f.afterwards)
			}
			// Skipped after the run: exactly what the run converted, as
			// already migrated with this recipe.
			if converted := o.Status == localrun.StatusCompleted; converted != (again.Reason == migration.ReasonAlreadyMigrated) {
				t.Errorf("migrate: %s; plan after it: %s (%s)", o.Status, again.Action, again.Reason)
			}
			if again.RecipeHash != o.RecipeHash {
				t.Errorf("after the migrate, plan's recipe %q, the report's %q", again.RecipeHash, o.RecipeHash)
			}
		})
	}
	if hashOfRule["dem"] == hashOfRule["defaults"] {
		t.Errorf("one recipe hash %s for both parts of the recipe", hashOfRule["dem"])
	}
	// Without --recipe the excluded file and the dem rule's files would be
	// converted (under another recipe): what plan used to predict.
	if w := without["scratch/x.tif"]; w.Action != plan.ActionConvert {
		t.Errorf("without --recipe, scratch/x.tif: %s", w.Action)
	}
	if w := without["dem/a.tif"]; w.RecipeHash == planned["dem/a.tif"].RecipeHash {
		t.Errorf("without --recipe, dem/a.tif has the recipe file's recipe %s", w.RecipeHash)
	}

	// The text shows each file's recipe where they differ.
	text, stderr, err := run(t, "plan", src, "--dest", dest, "--recipe", recipePath)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	for _, want := range []string{"recipe(s) by file", "By recipe:", hashOfRule["dem"], hashOfRule["defaults"], "(recipe " + hashOfRule["dem"] + ")"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan's text lacks %q:\n%s", want, text)
		}
	}
}

// TestPlanRecipeFlags: plan refuses what migrate refuses in --recipe and
// --co before hashing anything.
func TestPlanRecipeFlags(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mkdirs(t, src)
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(src, "a.tif"))
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ndefaults:\n  raster: {compression: JPEG}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--recipe", filepath.Join(dir, "missing.yaml")}, "--recipe"},
		{"invalid file", []string{"--recipe", bad}, "JPEG"},
		{"malformed --co", []string{"--co", "BLOCKSIZE"}, "--co BLOCKSIZE"},
		{"--co the COG driver lacks", []string{"--co", "NO_SUCH_OPTION=1"}, "creation option NO_SUCH_OPTION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range []string{"plan", "migrate"} {
				_, stderr, err := run(t, append([]string{cmd, src, "--dest", filepath.Join(dir, "out")}, tt.args...)...)
				if err == nil || !strings.Contains(err.Error()+stderr, tt.want) {
					t.Errorf("%s %v: %v %s, want an error naming %q", cmd, tt.args, err, stderr, tt.want)
				}
			}
		})
	}
	// --co changes every raster's recipe, as in migrate.
	base, co := planJSON(t, src), planJSON(t, src, "--co", "BLOCKSIZE=256")
	if base.Files[0].RecipeHash == "" || base.Files[0].RecipeHash == co.Files[0].RecipeHash {
		t.Errorf("--co BLOCKSIZE=256: recipe %q, without %q", co.Files[0].RecipeHash, base.Files[0].RecipeHash)
	}
}
