package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxLines is the length past which a non-test Go file must say, in a
// "// Size:" line near its top, why it is one piece: a long file is either
// split along its seams or carries the reason it is not.
const maxLines = 500

// reasonWindow is how many leading lines may hold the "// Size:" line: after
// the package's doc and clause, before the imports have pushed it out of view.
const reasonWindow = 30

// sizeReason says what is wrong with one file's text: too long and no reason.
func sizeReason(name, text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) <= maxLines {
		return ""
	}
	for _, l := range lines[:min(reasonWindow, len(lines))] {
		if r, ok := strings.CutPrefix(strings.TrimSpace(l), "// Size:"); ok && strings.TrimSpace(r) != "" {
			return ""
		}
	}
	return name + " has " + strconv.Itoa(len(lines)) + " lines and no \"// Size:\" reason in its first " + strconv.Itoa(reasonWindow)
}

func TestLargeFilesGiveAReason(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if msg := sizeReason(filepath.ToSlash(rel), string(b)); msg != "" {
			t.Error(msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSizeReason(t *testing.T) {
	long := func(head string) string {
		return head + strings.Repeat("x := 1\n", maxLines)
	}
	cases := []struct {
		name, text string
		bad        bool
	}{
		{"short", "package p\n", false},
		{"exactly the limit", strings.Repeat("x\n", maxLines), false},
		{"long without reason", long("package p\n"), true},
		{"long with reason after package", long("package p\n\n// Size: one state machine read top to bottom.\n"), false},
		{"long with reason before package", long("// Size: one table.\npackage p\n"), false},
		{"long with empty reason", long("package p\n// Size:\n"), true},
		{"reason too far down", long(strings.Repeat("\n", reasonWindow) + "// Size: late.\n"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sizeReason("f.go", c.text)
			if (got != "") != c.bad {
				t.Errorf("sizeReason = %q, want bad=%v", got, c.bad)
			}
			if c.bad && !strings.Contains(got, "f.go") {
				t.Errorf("sizeReason = %q does not name the file", got)
			}
		})
	}
}
