package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopiedDestinationIsRecognised migrates into a destination, copies it
// as an operator restores a backup (cp -a; rsync -aX where installed),
// and migrates again into the copy: every file is recognised by its
// content and skipped, none goes to remediation. The copy keeps the
// outputs' bytes, metadata and mtimes but not their inodes.
func TestCopiedDestinationIsRecognised(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "migrate", samples, "--dest", dest, "--progress", "plain")
	if err != nil {
		t.Fatalf("first migrate: %v\n%s\n%s", err, out, stderr)
	}
	first := lastReport(t, out)
	if first.Totals.Completed == 0 {
		t.Fatalf("first run totals %+v: nothing converted", first.Totals)
	}
	copies := []struct {
		name      string
		argv      []string
		dropState bool // the outputs restored without the local state store
	}{
		{"cp -a", []string{"cp", "-a", dest, filepath.Join(dir, "cp-a")}, false},
		{"rsync -aX", []string{"rsync", "-aX", dest + "/", filepath.Join(dir, "rsync-aX") + "/"}, false},
		{"cp -a, outputs only", []string{"cp", "-a", dest, filepath.Join(dir, "cp-a-outputs")}, true},
	}
	for _, c := range copies {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				t.Skipf("%s is not installed", c.argv[0])
			}
			if b, err := exec.Command(c.argv[0], c.argv[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", c.argv, err, b)
			}
			copied := c.argv[len(c.argv)-1]
			if c.dropState {
				if err := os.RemoveAll(filepath.Join(copied, stateDirName)); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, err := run(t, "migrate", samples, "--dest", copied, "--progress", "plain")
			if err != nil {
				t.Fatalf("migrate into the copy: %v\n%s\n%s", err, out, stderr)
			}
			rep := lastReport(t, out)
			// Without the state store the files that went to remediation
			// are judged again (and go there again); the converted ones are
			// recognised by their outputs, but for a multi-layer source,
			// whose outputs HashCheck cannot name before converting it: it
			// is converted again and Promote finds each output in place.
			if !c.dropState && (rep.Totals.Skipped != rep.Totals.Files || rep.Totals.Files != first.Totals.Files || rep.Totals.Completed != 0) {
				t.Errorf("into the copy: totals %+v, want all %d files skipped", rep.Totals, first.Totals.Files)
			}
			if c.dropState && rep.Totals.Skipped+rep.Totals.Completed != first.Totals.Completed {
				t.Errorf("into the copy without its state: totals %+v, want the %d converted files skipped or promoted again", rep.Totals, first.Totals.Completed)
			}
			for _, f := range rep.Files {
				if c.dropState && f.Status == "completed" {
					t.Logf("converted again without the state store: %s", f.Key)
				}
			}
			for _, f := range rep.Files {
				if f.Error == "DataError" && strings.Contains(f.Message, "unknown source") {
					t.Errorf("%s: %s %s: %s", f.Key, f.Status, f.Error, f.Message)
				}
			}
		})
	}
}
