// Command convertfloor converts every file of a directory, one after the
// other, with the engine alone (gdal.Engine.Convert under the default
// recipe, configured as `geomigrate migrate --workers 1` configures it),
// into OUTDIR, where the outputs stay as a migration's do, and prints how
// many it converted. It is the floor of make bench's tiny-files figures:
// what the CLI spends per file beyond it (hashing, state, staging,
// promotion, reports, process start) is the CLI's overhead.
//
//	convertfloor DIR OUTDIR
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: convertfloor DIR OUTDIR")
		os.Exit(2)
	}
	n, err := convertAll(context.Background(), os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "convertfloor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// convertAll converts each regular file of dir into out (made if missing)
// and returns how many it converted. Nothing is removed while it runs: on
// ext4 without a journal, removing files makes every file created in the
// next 30 s or so dearer (the allocator skips, one by one, the inodes
// freed that recently), and the CLI it is the floor of removes none.
func convertAll(ctx context.Context, dir, out string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	engine, err := gdal.New(gdal.WithOutputMD5(true), gdal.WithConversions(1))
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	for _, name := range names {
		outputs, err := engine.Convert(ctx, filepath.Join(dir, name), out, recipe.Recipe{})
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if len(outputs) == 0 {
			return 0, fmt.Errorf("%s: no output", name)
		}
	}
	return len(names), nil
}
