package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scanned says whether a file is code or build logic, where a citation of
// an outside document would have to be followed to understand it. Docs may
// cite; they should prefer decision records.
func scanned(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".mk", ".sh", ".mjs", ".conf":
		return true
	}
	return name == "Makefile" || name == "Dockerfile"
}

// skippedDir: version control, installed tools, build and run outputs, and
// test data (fixtures and fuzz corpora hold arbitrary bytes).
func skippedDir(name string) bool {
	switch name {
	case "node_modules", "testdata", "cdk.out", "bin", "build", "out", "samples":
		return true
	}
	return strings.HasPrefix(name, ".") && name != "."
}

// walkScanned calls visit with every scanned file under the module root
// (module-relative, slash-separated) and its content, except the files of
// this package that hold a rule's own pattern and examples.
func walkScanned(t *testing.T, only func(name string) bool, visit func(rel, src string)) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !only(d.Name()) || strings.HasPrefix(rel, "internal/architecture/") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		visit(rel, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d files under %s; the walk has lost its way", files, root)
	}
}

// TestNoCitationsOfOutsideDocuments: code, Makefiles and scripts state the
// rule they follow, or point to docs/decisions/, instead of citing a
// source document or an issue by number (docs/decisions/0001).
func TestNoCitationsOfOutsideDocuments(t *testing.T) {
	found := map[string][]string{}
	walkScanned(t, scanned, func(rel, src string) {
		if c := citations(src); len(c) > 0 {
			found[rel] = c
		}
	})
	for rel, lines := range found {
		t.Errorf("%s cites a document outside the repository; state the rule or point to docs/decisions/NNNN:\n\t%s",
			rel, strings.Join(lines, "\n\t"))
	}
}

// TestErrorWheresHaveAColon: every "pkg.Func" that starts a message is
// followed by a colon (docs/decisions/0022). Tests are left out: they may
// feed a classifier messages of any shape.
func TestErrorWheresHaveAColon(t *testing.T) {
	code := func(name string) bool { return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") }
	walkScanned(t, code, func(rel, src string) {
		if lines := wheresWithoutColon(src); len(lines) > 0 {
			t.Errorf("%s: a where without its colon (\"pkg.Func: subject: …\", CONTRIBUTING.md):\n\t%s",
				rel, strings.Join(lines, "\n\t"))
		}
	})
}

func TestWheresWithoutColon(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{`return fmt.Errorf("dirstore.New %s: %w", root, err)`, true},
		{`where := "jsonlqueue.Send " + q.path`, true},
		{`return fault.Systemic("gdal.Translate(COG) "+p, err)`, true},
		{`fmt.Errorf("statemachine.TaskTimeouts.Values %s must be positive", n)`, true},
		{`{"missing bucket", f, "memstore.Delete nob/k"},`, true},

		{`return fmt.Errorf("dirstore.New: %s: %w", root, err)`, false},
		{`where := "jsonlqueue.Send: " + q.path`, false},
		{`return fault.Systemic("gdal.Translate(COG)", err)`, false},
		{`fmt.Errorf("statemachine.TaskTimeouts.Values: %s must be positive", n)`, false},
		{`// "dirstore.Put b/k" was the old style`, false},
		{`t.Logf("retrying %s after %v", key, d)`, false},
		{`return errors.New("boltstore: unreadable page")`, false},
		{`log.Info("os.Getenv", "k", v)`, false},
	}
	for _, tt := range tests {
		if got := len(wheresWithoutColon(tt.line)) > 0; got != tt.want {
			t.Errorf("wheresWithoutColon(%q) found = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestCitations(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"// TestRetryPolicy pins seed 000's numbers", true},
		{"// Tier is the routing class of a failure (seed 001).", true},
		{"// as the seeds 004 say", true},
		{"// SEED 4: logs must tell first attempts from retries", true},
		{"// see ../shared/seeds/ for the source", true},
		{"// from 001_1c841815b7b49454.txt", true},
		{"// TestSweep (issue 9): temporaries", true},
		{"// issue 8, point 6", true},
		{"// Issue 9: nothing lost", true},
		{"// (issue #13)", true},
		{"# the ASL of issues 3 and 8", true},

		{"// seed corpora are in testdata/fuzz/<FuzzName>/", false},
		{"// Seeds in testdata/fuzz/FuzzDecodeWKB/.", false},
		{`t.Logf("seed %d", c.seed)`, false},
		{"GEOMIGRATE_CHAOS_SEED=42 replays the random choices", false},
		{"Seed: stateRecord(job),", false},
		{"func seeded(t *testing.T) *memstore.Store {", false},
		{"// docs/decisions/0002: 4 s doubling, capped at 60 s", false},
		{"// a 409 is an issue of the store, not of the data", false},
		{"// tissue 9 of the sample", false},
	}
	for _, tt := range tests {
		if got := len(citations(tt.line)) > 0; got != tt.want {
			t.Errorf("citations(%q) found = %v, want %v", tt.line, got, tt.want)
		}
	}
	src := "package p\n\n// fine\n// retried as seed 000 says\n"
	if got, want := citations(src), []string{"4: // retried as seed 000 says"}; !slices.Equal(got, want) {
		t.Errorf("citations = %q, want %q", got, want)
	}
}
