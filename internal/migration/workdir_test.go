package migration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Convert keeps its emptied work directory for the next file, removes it
// after a failed conversion, and Close removes the ones it kept.
func TestConvertReusesWorkDirectories(t *testing.T) {
	f := newFixture(t)
	workDirs := func() []string {
		t.Helper()
		ents, err := os.ReadDir(f.cfg.WorkDir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			if inside, err := os.ReadDir(filepath.Join(f.cfg.WorkDir, e.Name())); err != nil || len(inside) != 0 {
				t.Errorf("kept work directory %s holds %d entries (%v)", e.Name(), len(inside), err)
			}
		}
		return names
	}
	f.converted(t, "e1", "a.tif", "one")
	first := workDirs()
	if len(first) != 1 {
		t.Fatalf("work directories after one conversion: %v, want one kept", first)
	}
	f.converted(t, "e2", "b.tif", "two")
	if got := workDirs(); !slices.Equal(got, first) {
		t.Errorf("work directories after a second conversion: %v, want %v reused", got, first)
	}
	f.put(t, "bad.tif", "BAD:CorruptSource")
	hc := f.check(t, "e3", "bad.tif")
	if _, err := f.convert.Handle(context.Background(), ConvertInput{Job: hc.Job, Context: inv("e3", 0)}); err == nil {
		t.Fatal("the refused source converted")
	}
	if got := workDirs(); len(got) != 0 {
		t.Errorf("work directories after a failed conversion: %v, want it removed", got)
	}
	f.converted(t, "e4", "c.tif", "three")
	if got := workDirs(); len(got) != 1 {
		t.Errorf("work directories after another conversion: %v", got)
	}
	if err := f.convert.Close(); err != nil {
		t.Fatal(err)
	}
	if got := workDirs(); len(got) != 0 {
		t.Errorf("work directories after Close: %v", got)
	}
}
