//go:build integration

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentedCommandsRun runs every `sh` block of the README and of
// docs/cli.md, command by command and in order, as a user would from the
// root of a fresh clone: a directory holding only examples/, with the CLI
// make test built first on PATH. A block it cannot run says why in a
// `readme-test: skip: REASON` comment; an unmarked block that fails, and a
// marker without a reason, fail the test.
func TestDocumentedCommandsRun(t *testing.T) {
	cli := cliBinary(t)
	bin := t.TempDir()
	if err := os.Symlink(cli, filepath.Join(bin, "geomigrate")); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"README.md", "docs/cli.md"} {
		t.Run(doc, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../..", doc))
			if err != nil {
				t.Fatal(err)
			}
			clone := t.TempDir()
			if err := os.CopyFS(filepath.Join(clone, "examples"), os.DirFS("../../examples")); err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, b := range fencedBlocks(string(raw)) {
				if b.lang != "sh" {
					continue
				}
				if reason, skip := b.skipReason(); skip {
					if reason == "" {
						t.Errorf("%s line %d: a skip marker needs a reason", doc, b.line)
					}
					t.Logf("%s line %d: not run: %s", doc, b.line, reason)
					continue
				}
				for _, c := range shellCommands(b.body) {
					cmd := exec.CommandContext(t.Context(), "bash", "-o", "pipefail", "-c", c)
					cmd.Dir = clone
					cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "AWS_EC2_METADATA_DISABLED=true")
					var stdout, stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					if err := cmd.Run(); err != nil {
						t.Errorf("%s line %d: %s: %v\nstdout:\n%s\nstderr:\n%s", doc, b.line, c, err, tail(stdout.String()), tail(stderr.String()))
						continue
					}
					ran++
				}
			}
			if ran == 0 {
				t.Errorf("%s: no command ran", doc)
			}
			t.Logf("%s: %d commands ran", doc, ran)
		})
	}
}

// tail is the end of a command's output, enough to see why it failed.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
