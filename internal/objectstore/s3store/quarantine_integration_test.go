//go:build integration

package s3store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/s3store"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// TestQuarantineBundleOnS3: the AWS path of a bundle (internal/quarantine
// over this adapter, against versitygw) writes it under the quarantine
// prefix of the destination bucket, copies the input and its sidecar from
// the source bucket under the copy limit and references them above it,
// and leaves nothing in staging.
func TestQuarantineBundleOnS3(t *testing.T) {
	c, _ := client(t)
	st := s3store.New(c, s3store.Options{ConditionalCopy: copyMode(t, c)})
	ctx := context.Background()
	src, dest := newBucket(t, c), newBucket(t, c)
	for k, body := range map[string]string{"in/roads.shp": strings.Repeat("s", 100), "in/roads.dbf": strings.Repeat("d", 50)} {
		if _, err := st.Put(ctx, objectstore.PutRequest{Bucket: src, Key: k, Body: strings.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, prefix string
		limit        int64
		copy, copied bool
	}{
		{"default prefix, copied", quarantine.DefaultPrefix, 0, true, true},
		{"configured prefix, above the limit", "ops/quarantine/", 149, true, false},
		{"referenced by default", "quarantine/", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := quarantine.NewWriter(quarantine.Config{Store: st, Bucket: dest, Prefix: tt.prefix, StagingPrefix: "_staging/quarantine/", CopyInput: tt.copy, CopyLimit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			exec := "arn:aws:states:us-east-1:123456789012:execution:geomigrate-migrate:" + strings.ReplaceAll(tt.name, " ", "-")
			ref, err := w.Write(ctx, quarantine.Failure{JobID: "ds:sha:rh:loc", DatasetID: "ds", Execution: exec, SourceBucket: src, SourceKey: "in/roads.shp",
				Recipe: recipe.DefaultRecipe(), FailedAt: time.Now().UTC(),
				Error: quarantine.ErrorChain{Error: "DataError", Code: "InvalidGeometry", Route: "remediation", Tier: "data_specific"}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ref.Prefix, tt.prefix+"ds_sha_rh_loc/") || ref.Location != "s3://"+dest+"/"+ref.Prefix {
				t.Fatalf("ref %+v", ref)
			}
			rc, err := st.Open(ctx, dest, ref.Prefix+quarantine.ManifestFile)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			var m quarantine.Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Copied != tt.copied || m.Bundle != ref.Location || m.Input.Size != 100 || len(m.Sidecars) != 1 {
				t.Errorf("manifest %+v", m)
			}
			// A reference names the object by URI with its digest, read
			// from the store (the sidecar makes HashCheck's digest not the
			// source's own).
			if m.Input.URI != "s3://"+src+"/in/roads.shp" || m.Input.SHA256 != fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Repeat("s", 100)))) || m.Input.LocalPath != "" {
				t.Errorf("input reference %+v", m.Input)
			}
			var keys []string
			err = st.List(ctx, dest, "", func(o objectstore.Object) error {
				keys = append(keys, o.Key)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			inputs := 0
			for _, k := range keys {
				if strings.HasPrefix(k, "_staging/") {
					t.Errorf("staging left: %s", k)
				}
				if strings.HasPrefix(k, ref.Prefix+quarantine.InputDir) {
					inputs++
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tt.copied]; inputs != want {
				t.Errorf("%d input copies, want %d: %v", inputs, want, keys)
			}
			if tt.copied && !strings.HasPrefix(m.Reproduce.Command, "aws s3 cp --recursive 's3://"+dest+"/"+ref.Prefix+"' geomigrate-bundle && geomigrate migrate") &&
				!strings.HasPrefix(m.Reproduce.Command, "aws s3 cp --recursive s3://"+dest+"/"+ref.Prefix+" geomigrate-bundle && geomigrate migrate") {
				t.Errorf("command %q", m.Reproduce.Command)
			}
			if !tt.copied && !strings.Contains(m.Reproduce.Command, "aws s3 cp s3://"+src+"/in/roads.dbf geomigrate-input/") {
				t.Errorf("command %q", m.Reproduce.Command)
			}
		})
	}
}
