package plan

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// printed is the text of a plan Run made of files, as Print writes it.
func printed(t *testing.T, files []File, runRecipe string) (*Report, string) {
	t.Helper()
	ctx := context.Background()
	model, err := cost.DefaultModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, false)
	r, err := Run(ctx, f.source(nil, files), &contentPreflight{}, model, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.Sources, r.Backend = []string{"samples"}, "local"
	if runRecipe != "" {
		r.RecipeHash = runRecipe
	}
	var sb strings.Builder
	r.Print(&sb, 0)
	return r, sb.String()
}

// TestPlanText: what the text says of a plan's files, by what they are.
func TestPlanText(t *testing.T) {
	skipped := func(n int) []File {
		var fs []File
		for i := range n {
			fs = append(fs, File{Bucket: "src", Key: fmt.Sprintf("s%02d.tif", i), Format: ".tif", Action: ActionSkip, Reason: migration.ReasonAlreadyMigrated, RecipeHash: "r1"})
		}
		return fs
	}
	tests := []struct {
		name      string
		files     []File
		runRecipe string
		want      []string // regular expressions the text matches
		not       []string // and does not
	}{
		{name: "twenty skipped files are listed, more are cut",
			files: skipped(23), runRecipe: "r1",
			want: []string{`(?m)^  src/s19\.tif\s+already_migrated$`, `… and 3 more \(--json lists every file\)`, `Skipped because: already_migrated 23`},
			not:  []string{`s20\.tif`, `By recipe:`}},
		{name: "a key with a newline stays on its line",
			files: []File{{Bucket: "src", Key: "bad\nname.tif", Format: ".tif", Action: ActionRefuse, Stage: "hashcheck", Error: "DataError", Code: "InvalidKey", Reason: "InvalidKey: object key"}},
			want:  []string{`(?m)^  src/"bad\\nname\.tif"  DataError at hashcheck: InvalidKey: object key$`, `\(1 refused by HashCheck: \d+ transitions each\)`}},
		{name: "recipes by file get their table and each line its recipe",
			files: []File{
				{Bucket: "src", Key: "dem/a.tif", Format: ".tif", Action: ActionSkip, Reason: migration.ReasonInProgress, RecipeHash: "r2"},
				{Bucket: "src", Key: "b.tif", Format: ".tif", Action: ActionSkip, Reason: migration.ReasonInProgress, RecipeHash: "r1"},
			}, runRecipe: "r1",
			want: []string{`2 recipe\(s\) by file, see By recipe`, `(?m)^By recipe:$`, `(?m)^  r2\s+1\s+0 B\s+0\s+1\s+0\s+src/dem/a\.tif$`, `src/dem/a\.tif\s+in_progress\s+\(recipe r2\)`, `src/b\.tif\s+in_progress\s+\(recipe r1\)`}},
		{name: "ignored files are listed with why",
			files: []File{{Bucket: "src", Key: "README.txt", Format: ".txt", Action: ActionIgnore, Reason: "not a geospatial format (.txt)"}},
			want:  []string{`(?m)^Ignored:\n  src/README\.txt  not a geospatial format \(\.txt\)$`, `Would convert 0 \(0 B\), skip 0 \(0 B\), refuse 0 \(0 B\); 1 ignored`},
			not:   []string{`refused by HashCheck`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out := printed(t, tt.files, tt.runRecipe)
			for _, w := range tt.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("the text lacks %s:\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if regexp.MustCompile(w).MatchString(out) {
					t.Errorf("the text has %s:\n%s", w, out)
				}
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"}, {2 << 40, "2.0 TiB"}, {7 << 50, "7.0 PiB"}, {2048 << 50, "2048.0 PiB"},
	}
	for _, tt := range tests {
		if got := humanBytes(tt.n); got != tt.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestAmountsAndDurations: dollars and humanSeconds, each amount with
// the precision and unit its size needs.
func TestAmountsAndDurations(t *testing.T) {
	tests := []struct {
		name   string
		format func(float64) string
		v      float64
		want   string
	}{
		{"dollars", dollars, 0, "$0"}, {"dollars", dollars, 12.345, "$12.35"}, {"dollars", dollars, 1, "$1.00"},
		{"dollars", dollars, 0.0123, "$0.0123"}, {"dollars", dollars, 0.01, "$0.0100"}, {"dollars", dollars, 0.000123, "$0.000123"},
		{"humanSeconds", humanSeconds, 0.5, "0.5 s"}, {"humanSeconds", humanSeconds, 119, "119.0 s"}, {"humanSeconds", humanSeconds, 120, "2.0 min"},
		{"humanSeconds", humanSeconds, 7199, "120.0 min"}, {"humanSeconds", humanSeconds, 7200, "2.0 h"}, {"humanSeconds", humanSeconds, 2 * 86400, "2.0 days"},
	}
	for _, tt := range tests {
		if got := tt.format(tt.v); got != tt.want {
			t.Errorf("%s(%g) = %q, want %q", tt.name, tt.v, got, tt.want)
		}
	}
}
