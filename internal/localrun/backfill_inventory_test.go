package localrun_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
)

// inventoryKey encodes a key as S3 Inventory writes it in a CSV: URL
// (form) encoding, a space as "+", the "/" between segments kept (the
// Step Functions guide's inventory example passes "csvDataset/titles.csv"
// to the child as it stands; docs/decisions/0100).
func inventoryKey(k string) string {
	return strings.ReplaceAll(url.QueryEscape(k), "%2F", "/")
}

// TestInventoryBackfillDecodesKeysAndSkipsOldVersions runs
// backfill.asl.json's manifest path in the local executor, the item reader
// emulated as AWS documents it (rows as objects named by the manifest's
// fileSchema, keys as the CSV holds them), with the real migrate workflow
// as the child: keys holding spaces, '+', '%' and non-ASCII reach HashCheck
// URL-encoded with key_encoding "url" and are converted under their own
// names; a delete marker and a non-current version are skipped items in
// the results, never a child, never a remediation message.
func TestInventoryBackfillDecodesKeysAndSkipsOldVersions(t *testing.T) {
	_, ss, _ := samples(t)
	var dem string
	for _, s := range ss {
		if filepath.Base(s.Path) == "dem_utm33.tif" {
			dem = s.Path
		}
	}
	tiny := filepath.Join(t.TempDir(), "tiny.tif")
	if out, err := exec.Command("gdal_translate", "-q", "-outsize", "16", "16", dem, tiny).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v\n%s", err, out)
	}
	body, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	current := []string{"in/a b.tif", "in/a+b.tif", "in/100%.tif", "in/%41.tif", "in/München (1m).tif", "in/plain.tif"}
	for _, k := range current {
		p := filepath.Join(src, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size: an
	// inventory of all versions, as the stack configured it before.
	var csv bytes.Buffer
	row := func(key, version, latest, marker string) {
		csv.WriteString(`"src","` + inventoryKey(key) + `","` + version + `","` + latest + `","` + marker + `","2048"` + "\n")
	}
	for _, k := range current {
		row(k, "v2", "true", "false")
	}
	row("in/plain.tif", "v1", "false", "false") // an older version of a current key
	row("in/gone.tif", "v3", "true", "true")    // the key's current version is a delete marker
	row("in/gone.tif", "v2", "false", "false")  // and what it deleted

	p := newPipeline(t, src)
	results := t.TempDir()
	store, err := dirstore.New("", dirstore.WithBucketDir("src", src), dirstore.WithBucketDir("dest", p.destDir), dirstore.WithBucketDir("ops", results))
	if err != nil {
		t.Fatal(err)
	}
	p.store = store
	ctx := context.Background()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(csv.Bytes())
	_ = zw.Close()
	for key, b := range map[string][]byte{
		"inventory/src/cfg/data/part-0.csv.gz": gz.Bytes(),
		"inventory/src/cfg/manifest.json": []byte(`{"sourceBucket":"src","destinationBucket":"arn:aws:s3:::ops","version":"2016-11-30",` +
			`"fileFormat":"CSV","fileSchema":"Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size",` +
			`"files":[{"key":"inventory/src/cfg/data/part-0.csv.gz","size":1,"MD5checksum":"x"}]}`),
	} {
		if _, err := store.Put(ctx, objectstore.PutRequest{Bucket: "ops", Key: key, Body: bytes.NewReader(b), Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
	}
	bf, err := localrun.NewBackfill(localrun.BackfillConfig{SourceBucket: "src", ResultsBucket: "ops", Store: store, Migrate: p.executor(t, store)})
	if err != nil {
		t.Fatal(err)
	}
	res, outcomes, err := bf.Run(ctx, "inventory-1", json.RawMessage(`{"manifest":{"bucket":"ops","key":"inventory/src/cfg/manifest.json"},"max_concurrency":3,"dataset_id":"inv"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCEEDED" {
		t.Fatalf("backfill %s: %s %s", res.Status, res.Error, res.Cause)
	}

	defer outcomes.Close()
	all, err := outcomes.All()
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, o := range all {
		ran = append(ran, o.Key)
		if o.Status != localrun.StatusCompleted {
			t.Errorf("%q ended %s: %s %s", o.Key, o.Status, o.Error, o.Message)
		}
		if _, err := os.Stat(filepath.Join(p.destDir, filepath.FromSlash(o.Key))); err != nil {
			t.Errorf("%q: no output under its own name: %v", o.Key, err)
		}
	}
	slices.Sort(ran)
	want := slices.Clone(current)
	slices.Sort(want)
	if !slices.Equal(ran, want) {
		t.Errorf("children ran for %q, want %q (each current key once)", ran, want)
	}
	if n := len(p.remediation.messages(t)) + len(p.deadLetter.messages(t)); n != 0 {
		t.Errorf("%d queue messages, want none", n)
	}

	// The result files: every row succeeded; the old versions and the
	// delete marker say why they were skipped and carry the key as the
	// inventory wrote it, with its encoding.
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
		b, err := os.ReadFile(filepath.Join(results, filepath.FromSlash(o.Key)))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(succeeded) != len(current)+3 || len(failed) != 0 {
		t.Fatalf("result files: %d succeeded, %d failed; want %d and 0", len(succeeded), len(failed), len(current)+3)
	}
	skipped := map[string]int{}
	for _, r := range succeeded {
		if r["status"] != "skipped" {
			continue
		}
		if r["key_encoding"] != "url" {
			t.Errorf("skipped item %v has no key_encoding url", r)
		}
		skipped[r["reason"].(string)+" "+r["key"].(string)]++
	}
	wantSkipped := map[string]int{"not the current version in/plain.tif": 1, "a delete marker in/gone.tif": 1, "not the current version in/gone.tif": 1}
	if len(skipped) != len(wantSkipped) {
		t.Errorf("skipped items %v, want %v", skipped, wantSkipped)
	}
	for k, n := range wantSkipped {
		if skipped[k] != n {
			t.Errorf("skipped items %v, want %v", skipped, wantSkipped)
			break
		}
	}
}
