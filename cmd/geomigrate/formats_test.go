package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

// formerDisagreements are names the old extension lists answered
// differently; internal/formats gives one answer and both listers follow it.
var formerDisagreements = []string{
	"land.img", "land.rrd", "land.ige", // .rrd/.ige: sidecars for GDAL, sources for HashCheck
	"dem.tif", "dem.tif.ovr", "dem.tif.msk", "dem.qmd", // known to migration only
	"roads.tif", "roads.dbf", // a .dbf beside a raster is not the raster's
	"orphan.rrd", "README.txt",
	// Satellite metadata is part of its image; an .xml of its own is not.
	"scene.tif", "scene.XML", "scene_RPC.TXT", "scene.IMD", "catalog.xml",
	// A File Geodatabase is one source, never walked into.
	"city.gdb/a00000001.gdbtable", "city.gdb/a00000001.gdbtablx", "city.gdb/gdb",
}

// TestListersFollowTheRegistry: the local walk and the S3 lister list the
// same sources; the local walk reports a sidecar without its main file.
func TestListersFollowTheRegistry(t *testing.T) {
	dir := t.TempDir()
	store := memstore.New("src")
	for _, n := range formerDisagreements {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(context.Background(), objectstore.PutRequest{Bucket: "src", Key: n, Body: strings.NewReader("x"), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"catalog.xml", "city.gdb", "dem.tif", "land.img", "roads.tif", "scene.tif"}

	w := &sourceWalk{bucket: "src", realRoot: dir}
	if err := w.walk(dir, "", []string{dir}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(w.keys)
	if !slices.Equal(w.keys, want) {
		t.Errorf("local walk lists %v, want %v", w.keys, want)
	}
	notes := map[string]string{}
	for _, o := range w.pre {
		notes[o.Key] = o.Status
	}
	for key, status := range map[string]string{"roads.dbf": localrun.StatusIgnored, "orphan.rrd": localrun.StatusIgnored, "README.txt": localrun.StatusIgnored} {
		if notes[key] != status {
			t.Errorf("local walk: %s noted %q, want %q", key, notes[key], status)
		}
	}
	if len(notes) != 3 {
		t.Errorf("local walk notes %v", notes)
	}

	// The S3 lister leaves non-geospatial files to HashCheck (which skips
	// them as ignored) but never lists a sidecar as a source.
	inputs, err := listS3Sources(context.Background(), store, []string{"s3://src/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, in := range inputs {
		keys = append(keys, in.Key)
	}
	slices.Sort(keys)
	if want := append(want, "README.txt"); !slices.Equal(keys, slices.Sorted(slices.Values(want))) {
		t.Errorf("S3 lister lists %v, want %v", keys, want)
	}
}
