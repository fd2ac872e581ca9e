// Command scaledoc writes docs/scale.md, the paper estimate for a million
// objects, from internal/cost: go run ./tools/scaledoc > docs/scale.md
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/geomigrate/geomigrate/internal/cost"
)

func main() {
	m, err := cost.DefaultModel(context.Background())
	if err == nil {
		err = cost.WriteScaleDoc(os.Stdout, m)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaledoc:", err)
		os.Exit(1)
	}
}
