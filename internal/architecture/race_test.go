package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// makeList returns the words of the make variable name in src, its
// continuation lines joined ("NAME ?= a b \" then "\tc").
func makeList(src, name string) []string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, name+" ")
		if !ok {
			continue
		}
		_, val, ok := strings.Cut(rest, "=")
		if !ok {
			continue
		}
		for strings.HasSuffix(strings.TrimSpace(val), `\`) && i+1 < len(lines) {
			i++
			val = strings.TrimSuffix(strings.TrimSpace(val), `\`) + " " + lines[i]
		}
		return strings.Fields(val)
	}
	return nil
}

// covered says whether the package directory dir (module-relative) is
// matched by one of the go test patterns ("./x" or "./x/...").
func covered(dir string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.TrimPrefix(p, "./")
		if tree, ok := strings.CutSuffix(p, "/..."); ok {
			if dir == tree || strings.HasPrefix(dir, tree+"/") {
				return true
			}
		} else if dir == p {
			return true
		}
	}
	return false
}

// startsGoroutines says whether the Go source has a go statement.
func startsGoroutines(src string) (bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return false, err
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if _, ok := n.(*ast.GoStmt); ok {
			found = true
		}
		return !found
	})
	return found, nil
}

// goroutinePackages returns the package directories of the root module
// with a go statement (dirs) and all of them (all).
func goroutinePackages(t *testing.T) (dirs, all []string) {
	t.Helper()
	walkScanned(t, func(name string) bool { return strings.HasSuffix(name, ".go") }, func(rel, src string) {
		if strings.HasPrefix(rel, "infra/") { // its own module, its own tests
			return
		}
		dir := path.Dir(rel)
		if !slices.Contains(all, dir) {
			all = append(all, dir)
		}
		yes, err := startsGoroutines(src)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
		}
		if yes && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	})
	return dirs, all
}

// TestRaceListCoversGoroutines: every package of the root module with a go
// statement in any file (tests and tagged files included) is race-checked by
// make test-race (test/hygiene.mk RACE_PKGS, or RACE_SHORT_PKGS with
// -short), or left out by name in RACE_EXCLUDED; every pattern in either list still names a package.
func TestRaceListCoversGoroutines(t *testing.T) {
	mk, err := os.ReadFile("../../test/hygiene.mk")
	if err != nil {
		t.Fatal(err)
	}
	race := slices.Concat(makeList(string(mk), "RACE_PKGS"), makeList(string(mk), "RACE_SHORT_PKGS"))
	excluded := makeList(string(mk), "RACE_EXCLUDED")
	if len(race) < 5 {
		t.Fatalf("RACE_PKGS in test/hygiene.mk has %d patterns: %q", len(race), race)
	}
	dirs, all := goroutinePackages(t)
	if len(dirs) < 10 {
		t.Fatalf("found goroutines in %d packages; the walk has lost its way", len(dirs))
	}
	for _, dir := range dirs {
		if !covered(dir, race) && !covered(dir, excluded) {
			t.Errorf("%s starts goroutines: add ./%s to RACE_PKGS in test/hygiene.mk (or to RACE_SHORT_PKGS or RACE_EXCLUDED, saying why)", dir, dir)
		}
	}
	for _, p := range slices.Concat(race, excluded) {
		if !slices.ContainsFunc(all, func(dir string) bool { return covered(dir, []string{p}) }) {
			t.Errorf("test/hygiene.mk names %s, which holds no Go package", p)
		}
	}
	for _, p := range excluded {
		if !slices.ContainsFunc(dirs, func(dir string) bool { return covered(dir, []string{p}) }) {
			t.Errorf("RACE_EXCLUDED names %s, which starts no goroutine: drop it", p)
		}
	}
}

func TestCoveredAndMakeList(t *testing.T) {
	src := "X := 1\nRACE_PKGS ?= ./a/... ./b \\\n\t./c/d\nRACE_EXCLUDED := ./e\n"
	if got, want := makeList(src, "RACE_PKGS"), []string{"./a/...", "./b", "./c/d"}; !slices.Equal(got, want) {
		t.Errorf("makeList = %q, want %q", got, want)
	}
	pats := makeList(src, "RACE_PKGS")
	for dir, want := range map[string]bool{"a": true, "a/x/y": true, "b": true, "b/x": false, "c/d": true, "c": false, "ab": false, "e": false} {
		if got := covered(dir, pats); got != want {
			t.Errorf("covered(%q) = %v, want %v", dir, got, want)
		}
	}
	for src, want := range map[string]bool{
		"package p\nfunc f() { go g() }\nfunc g() {}\n":       true,
		"package p\n// go test ./...\nvar s = \"go build\"\n": false,
	} {
		if got, err := startsGoroutines(src); err != nil || got != want {
			t.Errorf("startsGoroutines(%q) = %v, %v; want %v", src, got, err, want)
		}
	}
}
