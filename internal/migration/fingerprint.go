package migration

import (
	"context"

	"github.com/geomigrate/geomigrate/internal/fingerprint"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// StoreFingerprinter fingerprints objects through an object store: the full
// SHA-256 up to Threshold bytes, the fast fingerprint above it
// (docs/decisions/0004).
type StoreFingerprinter struct {
	Store     objectstore.Store
	Threshold int64
	Options   fingerprint.Options
	// Keep, when set, receives the whole bytes of the objects small enough
	// for it, read with one GET and hashed, for Convert to take.
	Keep *objectstore.SourceCache
	// Heads, when set, receives the first bytes (headCacheSize) of the
	// objects hashed without Keep, so that HashCheck measures a TIFF from
	// its header without reading it again (NewHashCheck sets one).
	Heads *objectstore.SourceCache
}

// Fingerprint implements Fingerprinter. The full digest reads only the
// version obj describes (If-Match its ETag): the bytes kept for Convert
// are then of that version, which is what lets Convert use them without
// asking the store again. The fast fingerprint reads the head and tail
// unpinned; Convert's reads of a large source are pinned instead.
func (f StoreFingerprinter) Fingerprint(ctx context.Context, obj objectstore.Object) (string, string, error) {
	bucket, key, size := obj.Bucket, obj.Key, obj.Size
	if f.Threshold > 0 && size > f.Threshold {
		sum, err := fingerprint.FastFingerprint(ctx, f.Store, bucket, key, size)
		return sum, "fast", err
	}
	opts := f.Options
	opts.IfMatch = obj.ETag
	if f.Keep.Fits(size) && size > 0 {
		data, sum, err := fingerprint.ReadWhole(ctx, f.Store, bucket, key, size, opts)
		if err != nil {
			return "", "", err
		}
		f.Keep.Put(bucket, key, sum, data)
		return sum, "sha256", nil
	}
	var head []byte
	if f.Heads != nil {
		head = make([]byte, min(max(size, 0), headCacheSize))
	}
	sum, n, err := fingerprint.SHA256Head(ctx, f.Store, bucket, key, size, opts, head)
	if err == nil && n > 0 {
		f.Heads.Put(bucket, key, sum, head[:n])
	}
	return sum, "sha256", err
}
