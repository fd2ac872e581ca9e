package memstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/objectstoretest"
)

func TestConformance(t *testing.T) {
	objectstoretest.RunStoreTests(t, func(t *testing.T) (objectstore.Store, string) {
		return memstore.New("bucket"), "bucket"
	})
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s := memstore.New("b")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name      string
		call      func() error
		wantTier  fault.Tier
		wantIs    error
		wantInMsg string
	}{
		{"empty key", func() error { _, err := s.Head(ctx, "b", ""); return err }, fault.TierDataSpecific, nil, "memstore.Head: b/"},
		{"negative offset", func() error { _, err := s.OpenRange(ctx, "b", "k", -1, 1); return err }, fault.TierDataSpecific, nil, "negative offset"},
		{"missing bucket", func() error { return s.Delete(ctx, "nob", "k") }, fault.TierSystemic, memstore.ErrNoSuchBucket, "memstore.Delete: nob/k"},
		{"cancelled", func() error {
			_, err := s.Put(cancelled, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("x"), Size: 1})
			return err
		}, fault.TierUnknown, context.Canceled, "memstore.Put: b/k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if got := fault.TierOf(err); got != tc.wantTier {
				t.Errorf("tier of %v = %q, want %q", err, got, tc.wantTier)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("%v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("%q does not mention %q", err, tc.wantInMsg)
			}
		})
	}
}

func TestMetadataKeysLowerCasedAndIsolated(t *testing.T) {
	ctx := context.Background()
	s := memstore.New("b")
	meta := map[string]string{"Src-SHA256": "abc"}
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("x"), Size: 1, Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	meta["Src-SHA256"] = "changed by caller"
	h, err := s.Head(ctx, "b", "k")
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata[objectstore.MetaSourceSHA256] != "abc" || len(h.Metadata) != 1 {
		t.Errorf("metadata = %v", h.Metadata)
	}
	h.Metadata["x"] = "y"
	if h2, _ := s.Head(ctx, "b", "k"); len(h2.Metadata) != 1 {
		t.Errorf("Head returned the stored map: %v", h2.Metadata)
	}
	if got := s.Keys("b"); len(got) != 1 || got[0] != "k" {
		t.Errorf("Keys = %v", got)
	}
}
