package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateDocs rewrites the documentation blocks the tests generate instead
// of comparing them.
var updateDocs = flag.Bool("update", false, "rewrite the documentation blocks generated from the CLI's output (docs/cli.md's plan example)")

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	lang   string
	marker string // the HTML comment on the line before the fence, without <!-- -->
	body   string
	line   int // of the opening fence, 1-based
	start  int // byte offset of the body
	end    int // byte offset of the closing fence
}

// fencedBlocks lists the ``` blocks of a Markdown document.
func fencedBlocks(doc string) []docBlock {
	var blocks []docBlock
	var open *docBlock
	prev := ""
	off := 0
	for i, line := range strings.SplitAfter(doc, "\n") {
		text := strings.TrimRight(line, "\n")
		switch {
		case open == nil && strings.HasPrefix(text, "```"):
			b := docBlock{lang: strings.TrimSpace(strings.TrimPrefix(text, "```")), line: i + 1, start: off + len(line)}
			if p := strings.TrimSpace(prev); strings.HasPrefix(p, "<!--") && strings.HasSuffix(p, "-->") {
				b.marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(p, "<!--"), "-->"))
			}
			open = &b
		case open != nil && strings.TrimSpace(text) == "```":
			open.end = off
			open.body = doc[open.start:off]
			blocks = append(blocks, *open)
			open = nil
		}
		prev = text
		off += len(line)
	}
	return blocks
}

// skipReason is why a block is not run: a `readme-test: skip: REASON`
// marker. ok is false when the block carries no such marker.
func (b docBlock) skipReason() (reason string, ok bool) {
	r, ok := strings.CutPrefix(b.marker, "readme-test: skip:")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(r), true
}

// shellCommands splits a shell block into its commands: a line ending in
// a backslash continues on the next, blank and comment lines are dropped.
func shellCommands(body string) []string {
	var cmds []string
	cur := ""
	for _, line := range strings.Split(body, "\n") {
		if cur == "" && (strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#")) {
			continue
		}
		if c, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), `\`); ok {
			cur += c + " "
			continue
		}
		cmds = append(cmds, strings.TrimSpace(cur+line))
		cur = ""
	}
	if cur != "" {
		cmds = append(cmds, strings.TrimSpace(cur))
	}
	return cmds
}

func TestFencedBlocksAndCommands(t *testing.T) {
	doc := "text\n\n<!-- readme-test: skip: needs AWS -->\n```sh\ngeomigrate a \\\n   --b c   # one\n\n# a comment\ngeomigrate d\n```\n\n```yaml\nx: 1\n```\n<!-- other -->\n```sh\nmake run\n```\n"
	blocks := fencedBlocks(doc)
	tests := []struct {
		lang, reason string
		skipped      bool
		cmds         []string
		line         int
	}{
		{"sh", "needs AWS", true, []string{"geomigrate a     --b c   # one", "geomigrate d"}, 4},
		{"yaml", "", false, []string{"x: 1"}, 12},
		{"sh", "", false, []string{"make run"}, 16},
	}
	if len(blocks) != len(tests) {
		t.Fatalf("%d blocks, want %d: %+v", len(blocks), len(tests), blocks)
	}
	for i, tt := range tests {
		b := blocks[i]
		reason, skipped := b.skipReason()
		if b.lang != tt.lang || reason != tt.reason || skipped != tt.skipped || b.line != tt.line {
			t.Errorf("block %d: lang %q line %d skip %v %q, want %q line %d skip %v %q", i, b.lang, b.line, skipped, reason, tt.lang, tt.line, tt.skipped, tt.reason)
		}
		if got := shellCommands(b.body); strings.Join(got, "|") != strings.Join(tt.cmds, "|") {
			t.Errorf("block %d commands %q, want %q", i, got, tt.cmds)
		}
		if doc[b.start:b.end] != b.body {
			t.Errorf("block %d offsets do not frame its body", i)
		}
	}
}

// planExampleMarker opens the block of docs/cli.md that shows plan's output.
const planExampleMarker = "plan-example:"

// planExample is the block docs/cli.md shows for `geomigrate plan samples/
// --dest out/` over fresh sample data: the totals line and the estimate with
// its duration bounds; "…" stands for the tables between and the
// throughput line after.
func planExample(out string) (string, error) {
	lines := strings.Split(out, "\n")
	var totals string
	var estimate []string
	for i, l := range lines {
		if strings.HasPrefix(l, "Would convert ") {
			totals = l
		}
		if strings.HasPrefix(l, "Estimated cost on AWS") {
			for _, e := range lines[i:] {
				if strings.HasPrefix(e, "Conversion throughput measured") || e == "" {
					break
				}
				estimate = append(estimate, e)
			}
			break
		}
	}
	if totals == "" || len(estimate) == 0 {
		return "", os.ErrNotExist
	}
	return "$ geomigrate plan samples/ --dest out/      # the 13 sample files, before any run (add --recipe FILE as for migrate)\n" +
		totals + "\n…\n" + strings.Join(estimate, "\n") + "\n…\n", nil
}

// TestPlanExampleIsCurrent: the plan output docs/cli.md shows is what this
// build prints for the sample data; -update writes it.
func TestPlanExampleIsCurrent(t *testing.T) {
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "plan", samples, "--dest", filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := planExample(out)
	if err != nil {
		t.Fatalf("plan's output has no totals line or no estimate:\n%s", out)
	}
	const path = "../../docs/cli.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var found []docBlock
	for _, b := range fencedBlocks(doc) {
		if strings.HasPrefix(b.marker, planExampleMarker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/cli.md has %d blocks marked <!-- %s … -->, want 1", len(found), planExampleMarker)
	}
	b := found[0]
	if b.body == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc[:b.start]+want+doc[b.end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("docs/cli.md line %d: plan example rewritten", b.line)
		return
	}
	t.Errorf("docs/cli.md line %d: the plan example is stale; go test ./cmd/geomigrate -run TestPlanExampleIsCurrent -update rewrites it\ndocs:\n%s\nbinary:\n%s", b.line, b.body, want)
}

// TestREADMERecipeExampleParses: the recipe the README shows is one the CLI
// takes, and its rules resolve the paths they are written for.
func TestREADMERecipeExampleParses(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var yaml []string
	for _, b := range fencedBlocks(string(raw)) {
		if b.lang == "yaml" {
			yaml = append(yaml, b.body)
		}
	}
	if len(yaml) != 1 {
		t.Fatalf("README has %d yaml blocks, want the recipe example alone", len(yaml))
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "recipe.yaml"), yaml[0])
	tests := []struct{ key, rule string }{
		{"dem/alps/tile.tif", "#1 dem/**/*.tif"},
		{"landcover/x.tif", "#2 "},
		{"basemap/a.tif", "#3 basemap/**"},
		{"city.gpkg", "#4 **/*.gpkg"},
		{"stations/s.csv", "#5 stations/**/*.csv"},
	}
	for _, tt := range tests {
		out, _, err := run(t, "recipe", "show", path, tt.key)
		if err != nil {
			t.Fatalf("recipe show README's example %s: %v", tt.key, err)
		}
		if !strings.Contains(out, tt.rule) {
			t.Errorf("%s does not resolve to rule %s:\n%s", tt.key, tt.rule, out)
		}
	}
}
