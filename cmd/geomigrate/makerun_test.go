package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMakeRunPrintsTheSignalsOnce: the demo (make run) runs one command
// that prints the fallback-rate table, so the deliberately bad samples'
// "ABOVE THRESHOLD" advice is printed once, not by the run's summary and
// again by a status after it.
func TestMakeRunPrintsTheSignalsOnce(t *testing.T) {
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "run:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, line)
		case in:
			in = false
		}
	}
	if len(recipe) == 0 {
		t.Fatal("the Makefile has no run target")
	}
	printing := 0
	for _, line := range recipe {
		l := strings.TrimLeft(strings.TrimSpace(line), "@")
		if strings.HasPrefix(l, "echo") {
			continue
		}
		for _, cmd := range []string{"geomigrate migrate ", "geomigrate backfill ", "geomigrate status ", "geomigrate replay "} {
			if strings.Contains(l, cmd) {
				printing++
			}
		}
	}
	if printing != 1 {
		t.Errorf("make run runs %d commands that print the fallback-rate table, want 1:\n%s", printing, strings.Join(recipe, "\n"))
	}
}

// TestMakeHelpIntoAPipeHasNoColour: `make help` colours the target names
// on a terminal only; into a pipe (this test's stdout) it writes plain
// text, every target listed.
func TestMakeHelpIntoAPipeHasNoColour(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	if strings.Contains(string(out), "\x1b") {
		t.Errorf("make help wrote an escape sequence into a pipe:\n%q", out)
	}
	for _, target := range []string{"  cli ", "  run ", "  test ", "  help "} {
		if !strings.Contains(string(out), target) {
			t.Errorf("make help lists no %q:\n%s", strings.TrimSpace(target), out)
		}
	}
}
