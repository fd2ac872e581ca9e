package migration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
)

// STAC: every output gets an Item beside it (OUTPUT.stac.json) and every
// dataset a Collection (collections/<dataset>/collection.json under the
// destination prefix). Convert stages the item with the output; Promote
// publishes it the way it publishes outputs (conditional copy from
// staging, after its output) and then widens the dataset's collection.

// OutputDescriber is implemented by engines that can say what an output
// holds (gdal.Engine.Describe): CRS, grid, bands and their statistics,
// columns and rows. Without it an item still names the file, its checksum,
// size and lineage, but has no footprint.
type OutputDescriber interface {
	Describe(ctx context.Context, path, format string) (stac.Description, error)
}

// StagedItem is the STAC Item of one output on its way from staging to its
// final key, with what Promote needs to widen the collection.
type StagedItem struct {
	StagingKey string    `json:"staging_key"`
	DestKey    string    `json:"dest_key"`
	SHA256     string    `json:"sha256"`
	Size       int64     `json:"size"`
	BBox       []float64 `json:"bbox,omitempty"` // WGS 84, nil without a footprint
	Datetime   time.Time `json:"datetime"`
}

// artifact is the item as an Artifact, so that it is promoted, checked and
// cleaned up by the same code as the output it describes.
func (it *StagedItem) artifact() Artifact {
	return Artifact{StagingKey: it.StagingKey, DestKey: it.DestKey, SHA256: it.SHA256, Size: it.Size, ContentType: stac.MediaGeoJSON}
}

// CollectionsDir holds one directory per dataset, under the destination
// prefix, for its collection.
const CollectionsDir = "collections/"

// CollectionKey is where the collection of a dataset is written.
func CollectionKey(destPrefix, dataset string) string {
	return destPrefix + CollectionsDir + recipe.SafeName(dataset) + "/" + stac.CollectionFileName
}

// collectionStaging is where Promote stages a collection update of job.
func collectionStaging(job Job) string {
	return job.StagingPrefix + strings.TrimSuffix(recipe.DestKey(job.SourceKey, recipe.Output{Extension: "."}, false), ".") + collectionStagingSuffix
}

// sourceModified is the source object's Last-Modified, the datetime of
// the items of a source whose files declare none. The items then hold no
// clock reading: converting the same source again gives the same bytes,
// and so does a retried or replayed job. A failed look is the store's
// error (a transient one is retried); only a store that keeps no time
// falls back to now.
func (c *Convert) sourceModified(ctx context.Context, job Job) (time.Time, error) {
	obj, err := headSource(ctx, c.store, job.SourceBucket, job.SourceKey)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return time.Time{}, fault.Data(fault.SourceNotFound, "s3://%s/%s disappeared during conversion", job.SourceBucket, job.SourceKey)
	case err != nil:
		return time.Time{}, fmt.Errorf("convert: head source: %w", err)
	case obj.Modified.IsZero():
		return time.Now().UTC(), nil
	}
	return obj.Modified.UTC(), nil
}

// collectionStagingSuffix names the staged copy of a collection update,
// beside the job's staged outputs (removeStaged recognises it).
const collectionStagingSuffix = ".stac-collection.json"

// stageItem builds the item of a staged output and stages it beside it.
func (c *Convert) stageItem(ctx context.Context, job Job, o recipe.Output, a Artifact, when time.Time) (*StagedItem, error) {
	var desc *stac.Description
	if d, ok := c.engine.(OutputDescriber); ok {
		got, err := d.Describe(ctx, o.Path, o.Format)
		if err != nil {
			return nil, fmt.Errorf("convert: describe %s: %w", a.DestKey, err)
		}
		desc = &got
	}
	itemKey := a.DestKey + stac.ItemSuffix
	it, err := stac.NewItem(stac.ItemInput{
		ID:             strings.TrimPrefix(a.DestKey, c.cfg.DestPrefix),
		Collection:     job.DatasetID,
		CollectionHref: stac.RelativeHref(itemKey, CollectionKey(c.cfg.DestPrefix, job.DatasetID)),
		Asset: stac.Asset{
			Href: stac.RelativeHref(itemKey, a.DestKey), Format: o.Format, Title: o.Layer,
			SHA256: a.SHA256, Size: a.Size,
		},
		Description: desc,
		Datetime:    when,
		Processing: stac.Processing{
			Software:   map[string]string{"geomigrate": job.Recipe.ToolVersion, "GDAL": job.Recipe.EngineVersion},
			RecipeHash: job.RecipeHash, Recipe: job.Recipe.CanonicalJSON(),
			SourceKey: job.SourceBucket + "/" + job.SourceKey, SourceSHA256: job.SourceSHA256,
			AssignedCRS: job.Recipe.AssignCRS,
		},
	})
	if err != nil {
		return nil, fault.Systemic("convert: STAC item", err)
	}
	body, err := it.JSON()
	if err != nil {
		return nil, fault.Systemic("convert: STAC item", err)
	}
	sum := sha256.Sum256(body)
	staged := &StagedItem{
		StagingKey: a.StagingKey + stac.ItemSuffix, DestKey: itemKey,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(body)),
		BBox: it.BBox, Datetime: when,
	}
	if desc != nil && desc.Datetime != nil {
		staged.Datetime = desc.Datetime.UTC()
	}
	_, err = c.store.Put(ctx, objectstore.PutRequest{
		Bucket: job.DestBucket, Key: staged.StagingKey, Body: bytes.NewReader(body), Size: staged.Size,
		Metadata: promotedMetadata(job, staged.artifact()), Scratch: true,
	})
	if err != nil {
		return nil, fmt.Errorf("convert: stage %s: %w", staged.StagingKey, err)
	}
	return staged, nil
}

// maxCollectionAttempts bounds the optimistic updates of a collection that
// other promotions keep changing; then Promote fails transient and the
// state machine retries it.
const maxCollectionAttempts = 8

// includeInCollection widens the dataset's collection to cover the items
// just promoted: read it (with its ETag), widen, and write it back only if
// it changed, by a conditional copy from staging (If-Match the version
// read, or If-None-Match when there was none), so that concurrent
// promotions never lose each other's extent and readers never see a
// partial document. Most promotions change nothing and write nothing.
func (p *Promote) includeInCollection(ctx context.Context, job Job, items []*StagedItem) error {
	if len(items) == 0 {
		return nil
	}
	key := CollectionKey(p.cfg.DestPrefix, job.DatasetID)
	staging := collectionStaging(job)
	for attempt := 0; attempt < maxCollectionAttempts; attempt++ {
		coll, etag, err := p.readCollection(ctx, job, key)
		if err != nil {
			return err
		}
		changed := etag == ""
		for _, it := range items {
			if coll.Include(it.BBox, it.Datetime) {
				changed = true
			}
		}
		if !changed {
			return nil
		}
		body, err := coll.JSON()
		if err != nil {
			return fault.Systemic("promote: collection", err)
		}
		if _, err := p.store.Put(ctx, objectstore.PutRequest{Bucket: job.DestBucket, Key: staging, Body: bytes.NewReader(body), Size: int64(len(body)), Scratch: true}); err != nil {
			return fmt.Errorf("promote: stage collection %s: %w", staging, err)
		}
		req := objectstore.CopyRequest{SrcBucket: job.DestBucket, SrcKey: staging, DstBucket: job.DestBucket, DstKey: key,
			Metadata: map[string]string{MetaOutputSHA256: sha256Hex(body)}}
		if etag == "" {
			req.IfNoneMatch = true
		} else {
			req.IfMatch = etag
		}
		_, err = p.publish(ctx, req)
		// Best effort: Promote deletes it again with the job's other staged
		// objects, and fails (to be retried) if that fails.
		_ = p.store.Delete(ctx, job.DestBucket, staging)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			continue // another promotion changed it since we read it
		default:
			return fmt.Errorf("promote: write collection %s: %w", key, err)
		}
	}
	return fault.Transient("promote: collection "+key, fmt.Errorf("changed by other promotions %d times in a row", maxCollectionAttempts))
}

// readCollection returns the dataset's collection and its ETag ("" when it
// does not exist yet: a new one).
func (p *Promote) readCollection(ctx context.Context, job Job, key string) (*stac.Collection, string, error) {
	head, err := p.store.Head(ctx, job.DestBucket, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return stac.NewCollection(job.DatasetID), "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("promote: head collection %s: %w", key, err)
	}
	rc, err := p.store.Open(ctx, job.DestBucket, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return stac.NewCollection(job.DatasetID), "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("promote: open collection %s: %w", key, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return nil, "", fmt.Errorf("promote: read collection %s: %w", key, err)
	}
	coll, err := stac.ParseCollection(body)
	if err != nil {
		// Not ours to overwrite: someone put something else there.
		return nil, "", fault.Systemic("promote: collection "+key, fmt.Errorf("%s holds no STAC collection (%v): move it away, or set another destination prefix", key, err))
	}
	return coll, head.ETag, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
