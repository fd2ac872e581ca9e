// Command benchdoc writes make bench's figures into docs/benchmarks.md,
// between its BEGIN and END marker lines (the rest of the document is
// written by hand and kept), from docs/benchmarks.json; with -from it first
// takes a new run's results (make bench writes bin/bench/results.json):
//
//	go run ./tools/benchdoc [-from bin/bench/results.json]
//
// Run from the repository root (make bench-doc does).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/geomigrate/geomigrate/internal/benchpair"
)

func main() {
	from := flag.String("from", "", "a make bench JSON report to take as docs/benchmarks.json first")
	results := flag.String("results", "docs/benchmarks.json", "the figures the document shows")
	doc := flag.String("doc", "docs/benchmarks.md", "the document to update")
	flag.Parse()
	if err := write(*from, *results, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

func write(from, results, doc string) error {
	if from != "" {
		r, err := benchpair.ReadReport(from)
		if err != nil {
			return err
		}
		if err := r.WriteJSON(results); err != nil {
			return err
		}
	}
	r, err := benchpair.ReadReport(results)
	if err != nil {
		return err
	}
	block, err := r.Generated()
	if err != nil {
		return err
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	updated, err := benchpair.Splice(old, block)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, updated, 0o644)
}
