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
}

// Fingerprint implements Fingerprinter.
func (f StoreFingerprinter) Fingerprint(ctx context.Context, bucket, key string, size int64) (string, string, error) {
	if f.Threshold > 0 && size > f.Threshold {
		sum, err := fingerprint.FastFingerprint(ctx, f.Store, bucket, key, size)
		return sum, "fast", err
	}
	if f.Keep.Fits(size) && size > 0 {
		data, sum, err := fingerprint.ReadWhole(ctx, f.Store, bucket, key, size, f.Options)
		if err != nil {
			return "", "", err
		}
		f.Keep.Put(bucket, key, sum, data)
		return sum, "sha256", nil
	}
	sum, err := fingerprint.SHA256(ctx, f.Store, bucket, key, size, f.Options)
	return sum, "sha256", err
}
