package benchpair

import (
	"bytes"
	"os"
	"testing"
)

// TestBenchmarksDocIsCurrent: the generated block of docs/benchmarks.md is
// exactly what docs/benchmarks.json renders to, so the figures in the
// document are the ones a make bench run measured. Regenerate with
// make bench-doc.
func TestBenchmarksDocIsCurrent(t *testing.T) {
	r, err := ReadReport("../../docs/benchmarks.json")
	if err != nil {
		t.Fatal(err)
	}
	block, err := r.Generated()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(doc, block)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Fatalf("docs/benchmarks.md's figures are not docs/benchmarks.json's: run make bench-doc (or go run ./tools/benchdoc)\n--- generated ---\n%s", block)
	}
}
