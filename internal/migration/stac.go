package migration

// Size: both sides of one catalogue: the STAC staging in Convert and the tree Promote reconciles.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/stac"
)

// STAC: every output gets an Item beside it (OUTPUT.stac.json), every
// dataset a Collection (collections/<dataset>/collection.json under the
// destination prefix) and the destination a root Catalog (catalog.json).
// Convert builds the item with the output and hands it on in its payload;
// Promote writes it once its output is final (a conditional Put, the same
// lineage rules as an output's copy) and then links it into the tree
// (Tree), unless the run does that once at its end (Config.CatalogByRun).

// OutputDescriber is implemented by engines that can say what an output
// holds (gdal.Engine.Describe): CRS, grid, bands and their statistics,
// columns and rows. Without it an item still names the file, its checksum,
// size and lineage, but has no footprint.
type OutputDescriber interface {
	Describe(ctx context.Context, path, format string) (stac.Description, error)
}

// StagedItem is the STAC Item of one output on its way to its final key,
// with what Promote needs to widen the collection. Its document travels
// in Body: Promote writes it at DestKey with one conditional Put after
// the output is final, so no staged copy is written, copied and deleted
// for it (docs/decisions/0109). StagingKey is set instead of Body in
// payloads of earlier versions, whose items were staged.
type StagedItem struct {
	StagingKey string    `json:"staging_key,omitempty"`
	Body       string    `json:"body,omitempty"`
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

// sourceModified is the source object's Last-Modified, the datetime of
// the items of a source whose files declare none. The items then hold no
// clock reading: converting the same source again gives the same bytes,
// and so does a retried or replayed job. A failed look is the store's
// error (a transient one is retried); only a store that keeps no time
// falls back to now.
func (c *Convert) sourceModified(ctx context.Context, job Job) (time.Time, error) {
	if !job.SourceModified.IsZero() {
		return job.SourceModified.UTC(), nil // HashCheck's HEAD said
	}
	obj, err := headSource(ctx, c.store, job.SourceBucket, job.SourceKey)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return time.Time{}, fault.Data(fault.SourceNotFound, "s3://%s/%s disappeared during conversion", job.SourceBucket, job.SourceKey)
	case err != nil:
		return time.Time{}, fmt.Errorf("migration.Convert: head source: %w", err)
	case obj.Modified.IsZero():
		return time.Now().UTC(), nil
	}
	return obj.Modified.UTC(), nil
}

// collectionStagingSuffix named the staged copy of a collection update
// of earlier versions, beside the job's staged outputs (removeStaged
// still recognises one they left).
const collectionStagingSuffix = ".stac-collection.json"

// stageItem builds the item of a staged output, for Promote to write.
func (c *Convert) stageItem(ctx context.Context, job Job, o recipe.Output, a Artifact, when time.Time) (*StagedItem, error) {
	var desc *stac.Description
	if d, ok := c.engine.(OutputDescriber); ok {
		got, err := d.Describe(ctx, o.Path, o.Format)
		if err != nil {
			return nil, fmt.Errorf("migration.Convert: describe %s: %w", a.DestKey, err)
		}
		desc = &got
	}
	// The recipe's datetime (set per glob) wins over what the file
	// declares; the source's Last-Modified is the fallback of both.
	if job.Recipe.Datetime != "" {
		t, err := time.Parse(time.RFC3339Nano, job.Recipe.Datetime)
		if err != nil {
			return nil, fault.Data(fault.InvalidInput, "recipe datetime %q: %v", job.Recipe.Datetime, err)
		}
		if desc == nil {
			desc = &stac.Description{}
		}
		desc.Datetime = &t
	}
	itemKey := a.DestKey + stac.ItemSuffix
	it, err := stac.NewItem(stac.ItemInput{
		ID:             strings.TrimPrefix(a.DestKey, c.cfg.DestPrefix),
		Collection:     job.DatasetID,
		CollectionHref: stac.RelativeHref(itemKey, CollectionKey(c.cfg.DestPrefix, job.DatasetID)),
		RootHref:       stac.RelativeHref(itemKey, CatalogKey(c.cfg.DestPrefix)),
		SelfHref:       "./" + path.Base(itemKey),
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
		return nil, fault.Systemic("migration.Convert: STAC item", err)
	}
	body, err := it.JSON()
	if err != nil {
		return nil, fault.Systemic("migration.Convert: STAC item", err)
	}
	sum := sha256.Sum256(body)
	staged := &StagedItem{
		Body: string(body), DestKey: itemKey,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(body)),
		BBox: it.BBox, Datetime: when,
	}
	if desc != nil && desc.Datetime != nil {
		staged.Datetime = desc.Datetime.UTC()
	}
	return staged, nil
}

// maxCollectionAttempts bounds the optimistic updates of a tree document
// that other writers keep changing; then the update fails transient and
// is retried (by the state machine, or by the next run).
const maxCollectionAttempts = 8

// CatalogKey is where the root catalog of the tree is written.
func CatalogKey(destPrefix string) string { return destPrefix + stac.CatalogFileName }

// TreeEntry is one published item as the tree needs it: its key, its
// dataset and its extent.
type TreeEntry struct {
	Key      string
	Dataset  string
	BBox     []float64 // WGS 84; nil without a footprint
	Datetime time.Time
}

// includeInCollection widens the dataset's collection to cover the items
// just promoted, writing it only when its extent grows (most promotions
// write nothing), and links a new collection into the root catalog. It
// does not link each item: that would rewrite the collection for every
// job. A run links its items once at its end (Tree.Include, and
// Config.CatalogByRun leaves the collection to it entirely).
func (p *Promote) includeInCollection(ctx context.Context, job Job, items []*StagedItem) error {
	if len(items) == 0 || p.cfg.CatalogByRun {
		return nil
	}
	entries := make([]TreeEntry, len(items))
	for i, it := range items {
		entries[i] = TreeEntry{Key: it.DestKey, Dataset: job.DatasetID, BBox: it.BBox, Datetime: it.Datetime}
	}
	t := &Tree{store: p.store, bucket: job.DestBucket, prefix: p.cfg.DestPrefix, stagingRoot: p.cfg.StagingPrefix}
	return t.include(ctx, entries, false)
}

// Tree writes the browsable STAC tree of a destination: the root catalog
// (DEST/catalog.json) with a "child" link per collection, each collection
// with an "item" link per item, every href relative. Each document is
// updated by read, merge, and a conditional Put (If-Match the version
// read, If-None-Match when there was none), re-read on a 412: concurrent
// writers (jobs, runs) never lose each other's links or extent, and
// readers never see a partial document.
type Tree struct {
	store          objectstore.Store
	bucket, prefix string
	stagingRoot    string // the destination's staging prefix, not part of the tree
	items          *ItemLog
}

// NewTree is the tree writer of cfg's destination.
func NewTree(cfg Config, store objectstore.Store) *Tree {
	cfg = cfg.withDefaults()
	return &Tree{store: store, bucket: cfg.DestBucket, prefix: cfg.DestPrefix, stagingRoot: cfg.StagingPrefix}
}

// Include links the published items at keys (in the destination bucket)
// into the tree, reading each for its collection and extent: one update
// of each collection and of the root catalog for all of them.
func (t *Tree) Include(ctx context.Context, keys []string) error {
	var entries []TreeEntry
	for _, k := range keys {
		e, err := t.readItem(ctx, k)
		if err != nil {
			return err
		}
		if e.Dataset != "" {
			entries = append(entries, e)
		}
	}
	return t.include(ctx, entries, true)
}

// Reconcile links every item under the destination prefix that its
// collection does not link yet, and every collection into the root
// catalog: one listing of the prefix, a read of each collection, and a
// read of each unlinked item only. A run calls it at its end, so the
// items of its own jobs are linked, and so are those a killed run, a
// failed catalog update or Lambda's Promote (which links no item) left
// unlinked. It returns how many items it linked.
func (t *Tree) Reconcile(ctx context.Context) (int, error) {
	var items, collections []string
	collectionsAt := t.prefix + CollectionsDir
	err := retryTransient(ctx, func() error {
		items, collections = items[:0], collections[:0]
		return t.store.List(ctx, t.bucket, t.prefix, func(o objectstore.Object) error {
			switch {
			case strings.HasPrefix(o.Key, t.stagingPrefix()):
			case strings.HasSuffix(o.Key, stac.ItemSuffix):
				items = append(items, o.Key)
			case strings.HasPrefix(o.Key, collectionsAt) && strings.HasSuffix(o.Key, "/"+stac.CollectionFileName) &&
				strings.Count(strings.TrimPrefix(o.Key, collectionsAt), "/") == 1:
				collections = append(collections, o.Key)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("migration.Tree.Reconcile: list %s: %w", t.prefix, err)
	}
	linked := map[string]bool{}
	var children []TreeEntry
	for _, key := range collections {
		body, _, err := t.read(ctx, key)
		if err != nil {
			return 0, err
		}
		coll, err := stac.ParseCollection(body)
		if err != nil {
			continue // not ours: include refuses to overwrite it
		}
		if CollectionKey(t.prefix, coll.ID) == key {
			children = append(children, TreeEntry{Dataset: coll.ID})
		}
		for _, l := range coll.Links {
			if l.Rel == stac.RelItem {
				linked[path.Join(path.Dir(key), l.Href)] = true
			}
		}
	}
	var unlinked []string
	for _, k := range items {
		if !linked[k] {
			unlinked = append(unlinked, k)
		}
	}
	var entries []TreeEntry
	for _, k := range unlinked {
		if e, ok := t.items.get(k); ok {
			entries = append(entries, e) // written by this process: not read back
			continue
		}
		e, err := t.readItem(ctx, k)
		if err != nil {
			return 0, err
		}
		if e.Dataset != "" {
			entries = append(entries, e)
		}
	}
	if err := t.include(ctx, entries, true); err != nil {
		return 0, err
	}
	return len(entries), t.linkChildren(ctx, children)
}

// stagingPrefix is the staging prefix the tree's staged copies are under.
func (t *Tree) stagingPrefix() string {
	if t.stagingRoot != "" {
		return t.stagingRoot
	}
	return DefaultStagingPrefix
}

// linkChildren links the collections of entries' datasets into the root
// catalog.
func (t *Tree) linkChildren(ctx context.Context, entries []TreeEntry) error {
	if len(entries) == 0 {
		return nil
	}
	root := CatalogKey(t.prefix)
	return t.update(ctx, root, func(body []byte) ([]byte, bool, error) {
		cat := stac.NewCatalog()
		if body != nil {
			var err error
			if cat, err = stac.ParseCatalog(body); err != nil {
				return nil, false, fault.Systemic("migration.Tree: catalog "+root, fmt.Errorf("%s holds no STAC catalog (%v): move it away, or set another destination prefix", root, err))
			}
		}
		changed := body == nil
		for _, e := range entries {
			if cat.AddChild(stac.RelativeHref(root, CollectionKey(t.prefix, e.Dataset)), e.Dataset) {
				changed = true
			}
		}
		out, err := cat.JSON()
		return out, changed, err
	})
}

func (t *Tree) readItem(ctx context.Context, key string) (e TreeEntry, err error) {
	err = retryTransient(ctx, func() error {
		var err error
		e, err = t.readItemOnce(ctx, key)
		return err
	})
	return e, err
}

func (t *Tree) readItemOnce(ctx context.Context, key string) (TreeEntry, error) {
	rc, err := t.store.Open(ctx, t.bucket, key)
	if err != nil {
		return TreeEntry{}, fmt.Errorf("migration.Tree.Include: open %s: %w", key, err)
	}
	defer rc.Close()
	var doc struct {
		Collection string    `json:"collection"`
		BBox       []float64 `json:"bbox"`
		Properties struct {
			Datetime string `json:"datetime"`
		} `json:"properties"`
	}
	if err := json.NewDecoder(io.LimitReader(rc, 16<<20)).Decode(&doc); err != nil {
		return TreeEntry{}, fmt.Errorf("migration.Tree.Include: %s: %w", key, err)
	}
	e := TreeEntry{Key: key, Dataset: doc.Collection, BBox: doc.BBox}
	if when, err := time.Parse(time.RFC3339Nano, doc.Properties.Datetime); err == nil {
		e.Datetime = when
	}
	return e, nil
}

// include merges entries into their collections (with an item link each
// when linkItems) and links every collection it created, or every one
// when linkItems, into the root catalog.
func (t *Tree) include(ctx context.Context, entries []TreeEntry, linkItems bool) error {
	if len(entries) == 0 {
		return nil
	}
	created := false
	byDataset := map[string][]TreeEntry{}
	var datasets []string
	for _, e := range entries {
		if _, ok := byDataset[e.Dataset]; !ok {
			datasets = append(datasets, e.Dataset)
		}
		byDataset[e.Dataset] = append(byDataset[e.Dataset], e)
	}
	sort.Strings(datasets)
	root := CatalogKey(t.prefix)
	for _, ds := range datasets {
		key := CollectionKey(t.prefix, ds)
		merge := func(body []byte) ([]byte, bool, error) {
			coll := stac.NewCollection(ds)
			if body != nil {
				var err error
				if coll, err = stac.ParseCollection(body); err != nil {
					// Not ours to overwrite: someone put something else there.
					return nil, false, fault.Systemic("migration.Tree: collection "+key, fmt.Errorf("%s holds no STAC collection (%v): move it away, or set another destination prefix", key, err))
				}
			}
			changed := body == nil
			created = created || body == nil
			before := len(coll.Links)
			coll.SetNavigation("./"+stac.CollectionFileName, stac.RelativeHref(key, root))
			for _, e := range byDataset[ds] {
				if coll.Include(e.BBox, e.Datetime) {
					changed = true
				}
				if linkItems && coll.AddItem(stac.RelativeHref(key, e.Key)) {
					changed = true
				}
			}
			if len(coll.Links) != before {
				changed = true
			}
			out, err := coll.JSON()
			return out, changed, err
		}
		if !linkItems {
			// Most promotions widen nothing: one GET settles it, without
			// the HEAD for the ETag that only a write needs.
			body, err := t.readBody(ctx, key)
			if err != nil {
				return err
			}
			if body != nil {
				if _, changed, err := merge(body); err == nil && !changed {
					continue
				}
			}
		}
		if err := t.update(ctx, key, merge); err != nil {
			return err
		}
	}
	if !linkItems && !created {
		return nil
	}
	children := make([]TreeEntry, len(datasets))
	for i, ds := range datasets {
		children[i] = TreeEntry{Dataset: ds}
	}
	return t.linkChildren(ctx, children)
}

// update rewrites the document at key with merge(current body, nil when
// there is none) when merge says it changed, conditionally on the version
// read; a concurrent change makes it read and merge again.
func (t *Tree) update(ctx context.Context, key string, merge func([]byte) ([]byte, bool, error)) error {
	for attempt := 0; attempt < maxCollectionAttempts; attempt++ {
		body, etag, err := t.read(ctx, key)
		if err != nil {
			return err
		}
		out, changed, err := merge(body)
		if err != nil {
			var fe *fault.SystemicError
			if errors.As(err, &fe) {
				return err
			}
			return fault.Systemic("migration.Tree: "+key, err)
		}
		if !changed {
			return nil
		}
		// One conditional Put (If-Match the version read, If-None-Match
		// when there was none): a Put is atomic, so readers see the old
		// document or the new one, and no staged copy is written, copied
		// and deleted (docs/decisions/0109). A Put whose answer was lost
		// is retried and then meets its own condition (412): the next
		// round reads it back and finds nothing to change.
		req := objectstore.PutRequest{Bucket: t.bucket, Key: key, Size: int64(len(out)),
			Metadata: map[string]string{MetaOutputSHA256: sha256Hex(out)}}
		if etag == "" {
			req.IfNoneMatch = true
		} else {
			req.IfMatch = etag
		}
		err = retryTransient(ctx, func() error {
			req.Body = bytes.NewReader(out)
			_, err := t.store.Put(ctx, req)
			return err
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			continue // another writer changed it since we read it
		default:
			return fmt.Errorf("migration.Tree: write %s: %w", key, err)
		}
	}
	return fault.Transient("migration.Tree: "+key, fmt.Errorf("changed by other writers %d times in a row", maxCollectionAttempts))
}

// read returns the document at key and its ETag (nil and "" when there is
// none yet).
func (t *Tree) read(ctx context.Context, key string) (body []byte, etag string, err error) {
	// The tree is written once at a run's end, with no state machine retry
	// of its own: each read is retried while it fails transiently.
	err = retryTransient(ctx, func() error {
		var err error
		body, etag, err = t.readOnce(ctx, key)
		return err
	})
	return body, etag, err
}

func (t *Tree) readOnce(ctx context.Context, key string) ([]byte, string, error) {
	head, err := t.store.Head(ctx, t.bucket, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("migration.Tree: head %s: %w", key, err)
	}
	body, err := t.readBodyOnce(ctx, key)
	if body == nil || err != nil {
		return nil, "", err // deleted since the HEAD: none
	}
	return body, head.ETag, nil
}

// readBody returns the document at key (nil when there is none) without
// its ETag: enough to see that nothing needs writing.
func (t *Tree) readBody(ctx context.Context, key string) (body []byte, err error) {
	err = retryTransient(ctx, func() error {
		var err error
		body, err = t.readBodyOnce(ctx, key)
		return err
	})
	return body, err
}

func (t *Tree) readBodyOnce(ctx context.Context, key string) ([]byte, error) {
	rc, err := t.store.Open(ctx, t.bucket, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("migration.Tree: open %s: %w", key, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("migration.Tree: read %s: %w", key, err)
	}
	return body, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
