package architecture

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutEntries returns the first word of each line of the code block under
// README's "## Layout" heading, without a trailing slash.
func layoutEntries(readme string) []string {
	_, after, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return nil
	}
	_, block, ok := strings.Cut(after, "```\n")
	if !ok {
		return nil
	}
	block, _, _ = strings.Cut(block, "```")
	var names []string
	for _, l := range strings.Split(block, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, strings.TrimSuffix(f[0], "/"))
		}
	}
	return names
}

// mapped says what is wrong between the folders and the Layout's entries
// under the given roots: a folder missing, an entry twice, an entry that is
// no folder.
func mapped(entries, folders, roots []string) []string {
	var bad []string
	seen := map[string]int{}
	for _, e := range entries {
		seen[e]++
	}
	for _, f := range folders {
		if seen[f] == 0 {
			bad = append(bad, f+" is not in README's Layout")
		}
	}
	for _, e := range entries {
		under := slices.ContainsFunc(roots, func(r string) bool { return strings.HasPrefix(e, r+"/") })
		if !under {
			continue
		}
		if n := seen[e]; n > 1 {
			bad = append(bad, e+" is in README's Layout "+strings.Repeat("again ", n-1))
			seen[e] = 1
		}
		if !slices.Contains(folders, e) {
			bad = append(bad, e+" in README's Layout is no folder")
		}
	}
	return bad
}

// TestLayoutMatchesTree: README's Layout lists every folder directly under
// internal/, cmd/ and tools/ once, and nothing there that is not a folder.
func TestLayoutMatchesTree(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{"internal", "cmd", "tools"}
	var folders []string
	for _, r := range roots {
		des, err := os.ReadDir(filepath.Join("../..", r))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range des {
			if d.IsDir() {
				folders = append(folders, r+"/"+d.Name())
			}
		}
	}
	entries := layoutEntries(string(readme))
	if len(entries) < 10 {
		t.Fatalf("README's Layout block has %d entries; is the heading still \"## Layout\" with a code block?", len(entries))
	}
	for _, b := range mapped(entries, folders, roots) {
		t.Error(b)
	}
}

func TestMapped(t *testing.T) {
	entries := layoutEntries("x\n## Layout\n\n```\ninternal/a   the a\ninternal/a   again\ninternal/gone  x\ncmd/c/   the CLI\ninfra/ CDK\n```\n")
	got := mapped(entries, []string{"internal/a", "internal/b", "cmd/c"}, []string{"internal", "cmd"})
	want := []string{
		"internal/b is not in README's Layout",
		"internal/a is in README's Layout again ",
		"internal/gone in README's Layout is no folder",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mapped:\ngot  %q\nwant %q", got, want)
	}
}

var decisionRow = regexp.MustCompile(`(?m)^\| \[(\d{4})\]\((\d{4}-[^)]+\.md)\) \|`)

// indexed says what is wrong between the decision records and the rows of
// their index: a record without a row, a row without its file, a row twice.
func indexed(index string, files []string) []string {
	var bad []string
	rows := map[string]int{}
	for _, m := range decisionRow.FindAllStringSubmatch(index, -1) {
		if !strings.HasPrefix(m[2], m[1]+"-") {
			bad = append(bad, "the row ["+m[1]+"] links "+m[2])
		}
		rows[m[2]]++
	}
	for _, f := range files {
		if rows[f] == 0 {
			bad = append(bad, f+" has no row in docs/decisions/README.md")
		}
	}
	for _, m := range decisionRow.FindAllStringSubmatch(index, -1) {
		if !slices.Contains(files, m[2]) {
			bad = append(bad, "docs/decisions/README.md links "+m[2]+", which does not exist")
		}
		if rows[m[2]] > 1 {
			bad = append(bad, m[2]+" has more than one row")
			rows[m[2]] = 1
		}
	}
	return bad
}

// TestDecisionIndexComplete: every docs/decisions/NNNN-*.md has one row in
// the index, and every row's file exists.
func TestDecisionIndexComplete(t *testing.T) {
	dir := "../../docs/decisions"
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "[0-9][0-9][0-9][0-9]-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("%d decision records under %s", len(files), dir)
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	for _, b := range indexed(string(index), files) {
		t.Error(b)
	}
}

func TestIndexed(t *testing.T) {
	index := "| [0001](0001-a.md) | a |\n| [0002](0003-b.md) | b |\n| [0004](0004-gone.md) | c |\n| [0001](0001-a.md) | a |\n"
	got := indexed(index, []string{"0001-a.md", "0003-b.md", "0005-new.md"})
	want := []string{
		"the row [0002] links 0003-b.md",
		"0005-new.md has no row in docs/decisions/README.md",
		"0001-a.md has more than one row",
		"docs/decisions/README.md links 0004-gone.md, which does not exist",
	}
	if !slices.Equal(got, want) {
		t.Errorf("indexed:\ngot  %q\nwant %q", got, want)
	}
}
