package migration

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
)

// removeStaged deletes what Convert staged for a job that will not be
// promoted (routed by Classify, or closed after its execution failed), so
// staging holds only work in progress on AWS as it does locally. Only this
// job's keys are touched: the staging directory is per content and recipe,
// and another source with the same bytes stages beside it. It returns the
// number of objects deleted.
func removeStaged(ctx context.Context, store objectstore.Store, cfg Config, job Job) (int, error) {
	if store == nil || job.SourceKey == "" || job.StagingPrefix == "" {
		return 0, nil
	}
	root := cfg.withDefaults().StagingPrefix
	if !strings.HasPrefix(job.StagingPrefix, root) || len(job.StagingPrefix) <= len(root) || !strings.HasSuffix(job.StagingPrefix, "/") {
		return 0, fmt.Errorf("migration.removeStaged: staging prefix %q is not a job directory under %q", job.StagingPrefix, root)
	}
	bucket := job.DestBucket
	if bucket == "" {
		bucket = cfg.DestBucket
	}
	// recipe.DestKey: dir/stem + extension, or dir/stem/<layer> + extension
	// for a multi-layer source.
	stemKey := job.StagingPrefix + strings.TrimSuffix(recipe.DestKey(job.SourceKey, recipe.Output{Extension: "."}, false), ".")
	var keys []string
	err := store.List(ctx, bucket, stemKey, func(o objectstore.Object) error {
		if isOutputOf(strings.TrimPrefix(o.Key, stemKey)) {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("migration.removeStaged: list %s: %w", stemKey, err)
	}
	for i, k := range keys {
		if err := store.Delete(ctx, bucket, k); err != nil {
			return i, fmt.Errorf("migration.removeStaged: delete %s: %w", k, err)
		}
	}
	return len(keys), nil
}

// isOutputOf reports whether rest (a staged key after dir/stem) is one of
// the names recipe.DestKey gives: an output extension, or /<layer> plus one;
// either with stac.ItemSuffix (the output's STAC item); or Promote's staged
// collection update.
func isOutputOf(rest string) bool {
	if rest == collectionStagingSuffix {
		return true // a collection update of Promote's, not yet copied
	}
	// An output's STAC item is the output's name plus stac.ItemSuffix.
	rest = strings.TrimSuffix(rest, stac.ItemSuffix)
	if layer, ok := strings.CutPrefix(rest, "/"); ok {
		if strings.Contains(layer, "/") {
			return false
		}
		rest = path.Ext(layer)
	}
	for _, f := range recipe.Formats {
		if rest == f.Extension {
			return true
		}
	}
	return false
}
