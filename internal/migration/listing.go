package migration

import (
	"context"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Listing is what a run's listing of its source prefixes saw of the
// sidecars in them: HashCheck finds a source's sidecars there instead of
// listing its prefix once per file (docs/decisions/0109). Only objects
// whose name is a sidecar's (or may be one) are kept, so its memory is
// that of the sidecars, not of every key. A run migrates what its listing
// saw: a sidecar written after it is migrated with its main file by the
// next run (or its own event), as a main file written after it is.
type Listing struct {
	mu       sync.Mutex
	prefixes map[string][]string             // bucket → prefixes listed whole
	sidecars map[string][]objectstore.Object // bucket → sidecar-named objects, in key order
}

// NewListing is an empty listing.
func NewListing() *Listing {
	return &Listing{prefixes: map[string][]string{}, sidecars: map[string][]objectstore.Object{}}
}

// Add notes an object seen by a listing of bucket (call in key order).
func (l *Listing) Add(bucket string, o objectstore.Object) {
	if l == nil || (!formats.IsSidecar(o.Key) && !formats.Conditional(o.Key)) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	o.Bucket = bucket
	l.sidecars[bucket] = append(l.sidecars[bucket], o)
}

// Listed notes that every object under prefix in bucket was passed to Add.
func (l *Listing) Listed(bucket, prefix string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prefixes[bucket] = append(l.prefixes[bucket], prefix)
	objs := l.sidecars[bucket]
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
}

// sidecarsOf returns what listSidecars would find beside key, and whether
// the listing covers it (every sidecar name of key lies under a listed
// prefix).
func (l *Listing) sidecarsOf(bucket, key string) ([]objectstore.Object, bool) {
	if l == nil {
		return nil, false
	}
	dir, base := path.Split(key)
	stem := dir + formats.Stem(base)
	l.mu.Lock()
	defer l.mu.Unlock()
	covered := false
	for _, p := range l.prefixes[bucket] {
		if strings.HasPrefix(stem, p) {
			covered = true
			break
		}
	}
	if !covered {
		return nil, false
	}
	objs := l.sidecars[bucket]
	var out []objectstore.Object
	for i := sort.Search(len(objs), func(i int) bool { return objs[i].Key >= stem }); i < len(objs) && strings.HasPrefix(objs[i].Key, stem); i++ {
		rest := strings.TrimPrefix(objs[i].Key, dir)
		if !strings.Contains(rest, "/") && formats.SidecarOf(base, rest) {
			out = append(out, objs[i])
		}
	}
	return out, true
}

// WithListing makes HashCheck take a source's sidecars from l where l
// covers it, instead of listing the source's prefix; returns h.
func (h *HashCheck) WithListing(l *Listing) *HashCheck {
	h.listing = l
	return h
}

// sidecarsOf lists the sidecars of key: from the run's listing when it
// covers key, else from the store.
func (h *HashCheck) sidecarsOf(ctx context.Context, bucket, key string) ([]objectstore.Object, error) {
	if objs, ok := h.listing.sidecarsOf(bucket, key); ok {
		return objs, nil
	}
	return listSidecars(ctx, h.store, bucket, key)
}
