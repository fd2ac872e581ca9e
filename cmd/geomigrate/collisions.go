package main

import (
	"fmt"
	"path/filepath"

	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// checkOutputCollisions refuses a run in which two sources would be
// written to the same output key (a/dem.tif and b/dem.tif given as two
// source roots both become dest/dem.tif; so do dem.tif and dem.img side by
// side). Promote never overwrites another source's output, so one of them
// would end in remediation, and which one was a race between workers.
// Refusing before anything is converted is the one outcome that does not
// depend on timing; the error names both sources in one line.
//
// The output key is predicted from the extension (the kind of data a file
// holds decides its format) and the recipe of the key (recipeOf: a recipe
// file may choose another vector format for some globs); a multi-layer
// source's per-layer keys are only known after conversion, and a clash
// there still ends in remediation.
func checkOutputCollisions(inputs []migration.Source, recipeOf func(key string) recipe.Recipe, dest string) error {
	seen := map[string]migration.Source{}
	for _, in := range inputs {
		out := migration.PredictDestKey(in.Key, recipeOf(in.Key))
		prev, ok := seen[out]
		switch {
		case !ok:
			seen[out] = in
		case prev.Bucket == in.Bucket && prev.Key == in.Key:
			// The same file named twice is one source.
		default:
			return fmt.Errorf("%s/%s and %s/%s would both be written to %s: nothing was migrated; rename one of them, or migrate them in separate runs into different --dest directories",
				prev.Bucket, prev.Key, in.Bucket, in.Key, filepath.Join(dest, filepath.FromSlash(out)))
		}
	}
	return nil
}
