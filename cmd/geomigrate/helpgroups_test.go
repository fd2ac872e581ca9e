package main

import (
	"io"
	"strings"
	"testing"
)

// TestRunCommandFlagsAreGrouped walks the parsed command line: every flag
// of the commands with many (migrate, backfill, replay, plan) is in one of
// flagGroups, so their --help lists no flag outside a topic.
func TestRunCommandFlagsAreGrouped(t *testing.T) {
	var c cli
	k, err := newParser(&c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, g := range flagGroups {
		known[g.Key] = true
	}
	found := map[string]bool{}
	for _, n := range k.Model.Children {
		found[n.Name] = true
		for _, f := range n.Flags {
			switch {
			case f.Group == nil:
				switch n.Name {
				case "migrate", "backfill", "replay", "plan":
					t.Errorf("%s --%s is in no help group", n.Name, f.Name)
				}
			case !known[f.Group.Key]:
				t.Errorf("%s --%s is in group %q, which flagGroups does not declare", n.Name, f.Name, f.Group.Key)
			}
		}
	}
	for _, name := range []string{"migrate", "backfill", "replay", "plan"} {
		if !found[name] {
			t.Errorf("no %s command in the model", name)
		}
	}
}

// TestHelpListsTheGroupsInOrder: migrate --help shows the topics in
// flagGroups' order, each once, with its description, and a flag under
// the topic it belongs to.
func TestHelpListsTheGroupsInOrder(t *testing.T) {
	out, _, err := run(t, "migrate", "--help")
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, g := range flagGroups {
		if g.Key == "cost" {
			continue // plan's alone
		}
		i := strings.Index(out, "\n"+g.Title+"\n")
		if i < 0 || strings.Count(out, "\n"+g.Title+"\n") != 1 {
			t.Fatalf("migrate --help shows %q %d times, want once:\n%s", g.Title, strings.Count(out, "\n"+g.Title+"\n"), out)
		}
		if i < at {
			t.Errorf("%q comes before the group listed ahead of it in flagGroups", g.Title)
		}
		at = i
		if !strings.Contains(strings.Join(strings.Fields(out[i:]), " "), strings.Join(strings.Fields(g.Description), " ")) {
			t.Errorf("%q is shown without its description", g.Title)
		}
	}
	tests := []struct{ flag, group string }{
		{"--dest=", "Sources and destination:"},
		{"--co=", "Conversion and recipes:"},
		{"--workers=", "Concurrency and limits:"},
		{"--lease=", "State and resume:"},
		{"--quarantine-prefix=", "Failures, quarantine and remediation:"},
		{"--progress=", "Output and progress:"},
		{"--state-table=", "AWS (with --backend aws):"},
	}
	for _, tt := range tests {
		f, g := strings.Index(out, tt.flag), strings.Index(out, "\n"+tt.group+"\n")
		next := len(out)
		for _, other := range flagGroups {
			if j := strings.Index(out, "\n"+other.Title+"\n"); j > g && j < next {
				next = j
			}
		}
		if f < g || f > next {
			t.Errorf("%s is not listed under %q", tt.flag, tt.group)
		}
	}
}
