package migration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

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
		data, err := readWhole(ctx, f.Store, bucket, key, size)
		if err != nil {
			return "", "", err
		}
		h := sha256.Sum256(data)
		sum := hex.EncodeToString(h[:])
		f.Keep.Put(bucket, key, sum, data)
		return sum, "sha256", nil
	}
	sum, err := fingerprint.SHA256(ctx, f.Store, bucket, key, size, f.Options)
	return sum, "sha256", err
}

// readWhole reads the first size bytes of the object, as SHA256 would hash
// them, with one request.
func readWhole(ctx context.Context, store objectstore.Store, bucket, key string, size int64) ([]byte, error) {
	rc, err := store.OpenRange(ctx, bucket, key, 0, size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data := make([]byte, size)
	if n, err := io.ReadFull(rc, data); err != nil {
		return nil, fmt.Errorf("migration.Fingerprint: s3://%s/%s: read %d of %d bytes: %w", bucket, key, n, size, err)
	}
	return data, nil
}
