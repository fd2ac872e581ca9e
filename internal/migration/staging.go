package migration

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/geomigrate/geomigrate/internal/fault"
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
	stemKey := recipe.OutputStem(job.StagingPrefix, job.SourceKey)
	// Retried like the rollback: the routed job's route is taken whatever
	// happens here, so a passing fault must not leave its staging behind.
	var keys []string
	err := retryTransient(ctx, func() error {
		keys = keys[:0]
		return store.List(ctx, bucket, stemKey, func(o objectstore.Object) error {
			if isOutputOf(strings.TrimPrefix(o.Key, stemKey)) {
				keys = append(keys, o.Key)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("migration.removeStaged: list %s: %w", stemKey, err)
	}
	for i, k := range keys {
		if err := retryTransient(ctx, func() error { return store.Delete(ctx, bucket, k) }); err != nil {
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
	if rest == collectionStagingSuffix || rest == outputsListSuffix {
		return true // a collection update of Promote's, not yet copied; Convert's outputs list
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

// rollbackPromoted deletes, before a job is routed to a queue, what
// Promote already published of it: every final key of the job's outputs
// and items whose lineage (source key, source SHA-256, recipe) is the
// job's. A Promote that failed between its copies would otherwise leave a
// COG live without its STAC item, or some layers of a GeoPackage, for a
// job in the dead-letter queue; the job's outputs appear together or not
// at all (docs/decisions/0103). A key holding another source's output, or
// an older conversion of this source, is left alone. Items go first, so
// an item never points at a deleted output. It returns the number of
// objects deleted.
func rollbackPromoted(ctx context.Context, store objectstore.Store, cfg Config, job Job) (int, error) {
	if store == nil || job.SourceKey == "" || job.SourceSHA256 == "" || job.RecipeHash == "" {
		return 0, nil // not claimed: nothing of it can have been promoted
	}
	bucket := job.DestBucket
	if bucket == "" {
		bucket = cfg.DestBucket
	}
	stemKey := cfg.DestPrefix + strings.TrimSuffix(recipe.DestKey(job.SourceKey, recipe.Output{Extension: "."}, false), ".")
	var items, outputs []string
	err := retryTransient(ctx, func() error {
		items, outputs = nil, nil
		return store.List(ctx, bucket, stemKey, func(o objectstore.Object) error {
			rest := strings.TrimPrefix(o.Key, stemKey)
			switch {
			case rest == collectionStagingSuffix || !isOutputOf(rest):
			case strings.HasSuffix(rest, stac.ItemSuffix):
				items = append(items, o.Key)
			default:
				outputs = append(outputs, o.Key)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("migration.rollbackPromoted: list %s: %w", stemKey, err)
	}
	n := 0
	for _, k := range append(items, outputs...) {
		var cur objectstore.Object
		err := retryTransient(ctx, func() (err error) { cur, err = store.Head(ctx, bucket, k); return err })
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			continue
		case err != nil:
			return n, fmt.Errorf("migration.rollbackPromoted: head %s: %w", k, err)
		case !ofJob(cur, job):
			continue
		}
		if err := retryTransient(ctx, func() error { return store.Delete(ctx, bucket, k) }); err != nil {
			return n, fmt.Errorf("migration.rollbackPromoted: delete %s: %w", k, err)
		}
		n++
	}
	return n, nil
}

// ofJob reports whether o was promoted for job: same source, same bytes,
// same recipe.
func ofJob(o objectstore.Object, job Job) bool {
	return o.Metadata[objectstore.MetaSourceKey] == job.SourceBucket+"/"+job.SourceKey &&
		o.Metadata[objectstore.MetaSourceSHA256] == job.SourceSHA256 &&
		o.Metadata[objectstore.MetaRecipe] == job.RecipeHash
}

// housekeepingAttempts bounds retryTransient.
const housekeepingAttempts = 5

// retryTransient runs fn again (50 ms, doubling) while it fails
// transiently: a rollback or a clean-up runs once, when a job is routed,
// and has no state machine retry of its own.
func retryTransient(ctx context.Context, fn func() error) error {
	return fault.Retry(ctx, housekeepingAttempts, fault.IsTransient, fn)
}
