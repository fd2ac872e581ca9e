package architecture

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// notInLambdas are packages that no Lambda binary (a main package under
// functions/) may link: they make demo and test inputs, which no
// deployment needs, and internal/sampledata would put a GDAL file writer
// in every function.
var notInLambdas = []string{"internal/sampledata", "internal/hostile"}

// lambdaViolations lists the deps (import paths) of a Lambda binary that it
// must not link.
func lambdaViolations(deps []string) []string {
	var bad []string
	for _, d := range deps {
		rel, ok := strings.CutPrefix(d, modulePath+"/")
		if ok && slices.Contains(notInLambdas, rel) {
			bad = append(bad, d)
		}
	}
	return bad
}

func TestLambdaViolations(t *testing.T) {
	const m = modulePath + "/"
	tests := []struct {
		name string
		deps []string
		want []string
	}{
		{"binding and domain only", []string{m + "internal/gdal", m + "internal/recipe", "fmt"}, nil},
		{"sample generator", []string{m + "internal/gdal", m + "internal/sampledata"}, []string{m + "internal/sampledata"}},
		{"size bombs", []string{m + "internal/hostile"}, []string{m + "internal/hostile"}},
		{"a path that only ends alike", []string{"example.com/x/internal/sampledata"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lambdaViolations(tt.deps); !slices.Equal(got, tt.want) {
				t.Errorf("lambdaViolations = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLambdasLinkNoSampleData: what each function's binary links (the
// main package's transitive imports, tests excluded) holds nothing of
// notInLambdas.
func TestLambdasLinkNoSampleData(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}} {{join .Deps " "}}{{end}}`, modulePath+"/functions/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mains := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		mains++
		for _, bad := range lambdaViolations(fields[1:]) {
			t.Errorf("%s links %s; Lambda binaries must not (notInLambdas)", fields[0], bad)
		}
	}
	if mains < 4 {
		t.Fatalf("go list found %d Lambda main packages under functions/, want at least 4", mains)
	}
}
