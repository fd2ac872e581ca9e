package localrun_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

// TestInventoryBackfillKeepsToSourcePrefixes runs backfill.asl.json's
// manifest path with an S3 Inventory that lists the whole bucket: only keys
// under the configured source prefixes start a child execution; the others
// succeed as skipped items, never as failures.
func TestInventoryBackfillKeepsToSourcePrefixes(t *testing.T) {
	keys := []string{
		"incoming/a.tif",
		"incoming/sub/b tif.tif", // a space: URL-encoded in the inventory CSV
		"legacy/gis/e.shp",
		"incoming/folder/", // in scope, but a console folder marker
		"other/c.tif",
		"incomingx/d.tif",
		"legacy/f.shp",
	}
	tests := []struct {
		name     string
		prefixes []string
		children []string
	}{
		{"configured prefixes", []string{"incoming/", "legacy/gis/"}, []string{"incoming/a.tif", "incoming/sub/b tif.tif", "legacy/gis/e.shp"}},
		{"whole bucket by default", nil, []string{"incoming/a.tif", "incoming/sub/b tif.tif", "incomingx/d.tif", "legacy/f.shp", "legacy/gis/e.shp", "other/c.tif"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := memstore.New("src", "ops")
			put := func(key, body string) {
				t.Helper()
				if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "ops", Key: key, Body: strings.NewReader(body), Size: int64(len(body))}); err != nil {
					t.Fatal(err)
				}
			}
			var csv strings.Builder
			for _, k := range keys {
				csv.WriteString(`"src","` + inventoryKey(k) + `"` + "\n")
			}
			put("inventory/data/part-0.csv", csv.String())
			put("inventory/manifest.json", `{"sourceBucket":"src","fileFormat":"CSV","files":[{"key":"inventory/data/part-0.csv"}]}`)

			// The child stands in for the migrate state machine: what matters
			// here is which items reach it.
			child, err := asl.Parse([]byte(`{"StartAt":"Done","States":{"Done":{"Type":"Pass","Result":{"status":"completed"},"End":true}}}`))
			if err != nil {
				t.Fatal(err)
			}
			bf, err := localrun.NewBackfill(localrun.BackfillConfig{
				SourceBucket: "src", ResultsBucket: "ops", SourcePrefixes: tt.prefixes,
				Store: store, Migrate: asl.NewExecutor(child),
			})
			if err != nil {
				t.Fatal(err)
			}
			res, spool, err := bf.Run(ctx, "scope", json.RawMessage(`{"manifest":{"bucket":"ops","key":"inventory/manifest.json"},"max_concurrency":2}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != asl.StatusSucceeded {
				t.Fatalf("backfill %s: %s %s", res.Status, res.Error, res.Cause)
			}
			var ran []string
			for _, o := range allOutcomes(t, spool) {
				ran = append(ran, o.Key)
			}
			slices.Sort(ran)
			if !slices.Equal(ran, tt.children) {
				t.Errorf("children ran for %q, want %q", ran, tt.children)
			}

			// Every item is a success in the result files; out-of-scope ones
			// say why they were skipped.
			var succeeded, failed []map[string]any
			err = store.List(ctx, "ops", "backfill-results/", func(o objectstore.Object) error {
				var dst *[]map[string]any
				switch {
				case strings.HasSuffix(o.Key, "SUCCEEDED_0.json"):
					dst = &succeeded
				case strings.HasSuffix(o.Key, "FAILED_0.json"):
					dst = &failed
				default:
					return nil
				}
				rc, err := store.Open(ctx, "ops", o.Key)
				if err != nil {
					return err
				}
				defer rc.Close()
				return json.NewDecoder(rc).Decode(dst)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(succeeded) != len(keys) || len(failed) != 0 {
				t.Fatalf("result files: %d succeeded, %d failed; want %d and 0", len(succeeded), len(failed), len(keys))
			}
			skipped := 0
			for _, r := range succeeded {
				if r["status"] == "skipped" && r["reason"] == "outside the source prefixes" {
					skipped++
					if slices.Contains(tt.children, r["key"].(string)) {
						t.Errorf("%v was run and also skipped as out of scope", r["key"])
					}
				}
			}
			if want := len(keys) - len(tt.children) - 1; skipped != want { // -1: the folder marker
				t.Errorf("%d items skipped as out of scope, want %d", skipped, want)
			}
		})
	}
}
