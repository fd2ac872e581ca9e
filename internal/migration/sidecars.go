package migration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// listSidecars returns the sidecars stored beside key, in key order.
func listSidecars(ctx context.Context, store objectstore.Store, bucket, key string) ([]objectstore.Object, error) {
	dir, base := path.Split(key)
	// Every sidecar name starts with the stem ("dem.tfw",
	// "dem.tif.aux.xml", "dem_RPC.TXT"); SidecarOf sorts out the rest.
	var out []objectstore.Object
	err := store.List(ctx, bucket, dir+formats.Stem(base), func(o objectstore.Object) error {
		rest := strings.TrimPrefix(o.Key, dir)
		if !strings.Contains(rest, "/") && formats.SidecarOf(base, rest) {
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migration.listSidecars: %s/%s: %w", bucket, key, err)
	}
	return out, nil
}

// sidecarKeys are the sidecars of job's source to read with it: those
// HashCheck found and fingerprinted (Job.SidecarsListed), else a new
// listing. A sidecar added since HashCheck is not part of this job's
// content, so it is not read: its own event (or the next run) migrates
// the source again with it.
func sidecarKeys(ctx context.Context, store objectstore.Store, job Job) ([]string, error) {
	if job.SidecarsListed {
		return slices.Sorted(maps.Keys(job.SidecarETags)), nil
	}
	objs, err := listSidecars(ctx, store, job.SourceBucket, job.SourceKey)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, nil
}

// mainOf finds the one source a sidecar belongs to ("roads.dbf" →
// "roads.shp", "image_RPC.TXT" → "image.tif"); the zero Object when there
// is none or it is ambiguous.
func mainOf(ctx context.Context, store objectstore.Store, bucket, sidecar string) (objectstore.Object, error) {
	dir, base := path.Split(sidecar)
	// The main file's name starts with the sidecar's up to its first dot
	// ("dem" of "dem.tif.aux.xml"), or up to its suffix extension ("image"
	// of "image_RPC.TXT"); the main file may have no extension at all.
	first, _, _ := strings.Cut(formats.Stem(base), ".")
	var found []objectstore.Object
	err := store.List(ctx, bucket, dir+first, func(o objectstore.Object) error {
		rest := strings.TrimPrefix(o.Key, dir)
		if !strings.Contains(rest, "/") && formats.SidecarOf(rest, base) {
			found = append(found, o)
		}
		return nil
	})
	if err != nil {
		return objectstore.Object{}, fmt.Errorf("migration.mainOf: %s/%s: %w", bucket, sidecar, err)
	}
	if len(found) != 1 {
		return objectstore.Object{}, nil
	}
	// List carries no metadata; the caller needs size and ETag only.
	return found[0], nil
}

// bundleDigest is the content identity of a source with sidecars: a change
// to roads.dbf alone changes the attributes of roads.shp's output, so it
// must change the idempotency key too. Without sidecars the digest is the
// source's own.
func bundleDigest(main, mainSum string, sidecarSums map[string]string) string {
	if len(sidecarSums) == 0 {
		return mainSum
	}
	names := make([]string, 0, len(sidecarSums))
	for n := range sidecarSums {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "geomigrate-bundle-v1\n%s %s\n", main, mainSum)
	for _, n := range names {
		fmt.Fprintf(h, "%s %s\n", n, sidecarSums[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}
