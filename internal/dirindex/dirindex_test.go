package dirindex

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// truth is what os.ReadDir says now, filtered by prefix.
func truth(t *testing.T, dir, prefix string) []Entry {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, de := range des {
		if strings.HasPrefix(de.Name(), prefix) {
			out = append(out, Entry{Name: de.Name(), Type: de.Type()})
		}
	}
	return out
}

func check(t *testing.T, dir, prefix, when string) {
	t.Helper()
	got, err := Entries(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if want := truth(t, dir, prefix); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: Entries(%q) = %d entries, want %d\n got %v\nwant %v", when, prefix, len(got), len(want), got, want)
	}
}

func fill(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f_%05d.tif", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEntriesStayExact changes a large (kept) directory in every way a
// name can change and compares each answer with a fresh os.ReadDir.
func TestEntriesStayExact(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, minIndexed+10)
	check(t, dir, "f_0001", "first read")
	if kept(dir) && !isKept(dir) {
		t.Fatalf("%s (%d entries) is not kept", dir, minIndexed+10)
	}
	other := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 400 {
		name := fmt.Sprintf("f_%05d%s", rng.IntN(minIndexed+40), []string{".tif", ".tfw", ".tif.aux.xml"}[rng.IntN(3)])
		p := filepath.Join(dir, name)
		var what string
		switch rng.IntN(6) {
		case 0:
			what = "create " + name
			_ = os.WriteFile(p, []byte("x"), 0o644)
		case 1:
			what = "remove " + name
			_ = os.RemoveAll(p)
		case 2:
			what = "mkdir " + name
			_ = os.RemoveAll(p)
			_ = os.Mkdir(p, 0o755)
		case 3:
			what = "symlink " + name
			_ = os.RemoveAll(p)
			_ = os.Symlink("f_00001.tif", p)
		case 4:
			what = "move out " + name
			_ = os.Rename(p, filepath.Join(other, name))
		case 5:
			what = "move in " + name
			_ = os.WriteFile(filepath.Join(other, "in"), nil, 0o644)
			_ = os.RemoveAll(p)
			_ = os.Rename(filepath.Join(other, "in"), p)
		}
		prefix := strings.TrimSuffix(name, filepath.Ext(name))[:7]
		check(t, dir, prefix, fmt.Sprintf("step %d (%s)", step, what))
	}
	check(t, dir, "", "whole directory")
}

// TestEntriesFollowThePath replaces a kept directory by another one under
// the same path: the answer is the new directory's.
func TestEntriesFollowThePath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "src")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fill(t, dir, minIndexed)
	check(t, dir, "f_", "first read")
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root + ".old") })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fill(t, dir, 3)
	check(t, dir, "f_", "parent renamed, path reused")
	if _, err := Entries(filepath.Join(root, "missing"), ""); !os.IsNotExist(err) {
		t.Errorf("missing directory: %v, want not-exist", err)
	}
}

// TestSmallDirectoriesAreNotKept: below minIndexed every call reads.
func TestSmallDirectoriesAreNotKept(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 5)
	check(t, dir, "f_0000", "small")
	if isKept(dir) {
		t.Errorf("a directory of 5 entries is kept")
	}
}
