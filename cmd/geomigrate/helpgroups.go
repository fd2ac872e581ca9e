package main

import (
	"slices"

	"github.com/alecthomas/kong"
)

// flagGroups are the topics --help lists the flags of a command under, in
// this order; every flag of migrate, backfill, replay and plan is in one
// (TestRunCommandFlagsAreGrouped). Ungrouped flags (--help, --version and
// the few of the small commands) come first, under "Flags:".
var flagGroups = []kong.Group{
	{Key: "io", Title: "Sources and destination:", Description: "What is read, where outputs go, and the backend that holds them."},
	{Key: "conversion", Title: "Conversion and recipes:", Description: "Output formats and encoding; a recipe file sets them per glob, these flags override it."},
	{Key: "limits", Title: "Concurrency and limits:", Description: "How much runs at once, scratch space, remote reads, and what goes to the container task."},
	{Key: "state", Title: "State and resume:", Description: "The state store, leases and heartbeats that let a run stop and another take over."},
	{Key: "failures", Title: "Failures, quarantine and remediation:", Description: "How failed files are routed (policy, circuit breakers), their quarantine bundles and the queues."},
	{Key: "output", Title: "Output and progress:", Description: "What is printed while and after the run, and the JSON report."},
	{Key: "cost", Title: "Cost and duration model:", Description: "The AWS settings and quotas plan's estimate assumes."},
	{Key: "aws", Title: "AWS (with --backend aws):", Description: "The deployed resources (table, queues, state machines, buckets) and how the SDK calls them."},
}

// orderFlagsByGroup sorts the flags of every command by their group's
// place in flagGroups (kong lists groups in the order their first flag
// appears, and the structs embed flags of several topics each); flags keep
// their order within a group.
func orderFlagsByGroup(n *kong.Node) {
	rank := func(f *kong.Flag) int {
		if f.Group == nil {
			return -1
		}
		return slices.IndexFunc(flagGroups, func(g kong.Group) bool { return g.Key == f.Group.Key })
	}
	slices.SortStableFunc(n.Flags, func(a, b *kong.Flag) int { return rank(a) - rank(b) })
	for _, c := range n.Children {
		orderFlagsByGroup(c)
	}
}
