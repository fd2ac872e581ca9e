package sampledata

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func dirHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:])
	}
	return out
}

func TestSamplesSmallAndDeterministic(t *testing.T) {
	dir := t.TempDir()
	samples, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	first := dirHashes(t, dir)
	for name := range first {
		fi, _ := os.Stat(filepath.Join(dir, name))
		total += fi.Size()
	}
	if total > 1<<20 {
		t.Errorf("samples total %d bytes, want < 1 MiB", total)
	}
	again := t.TempDir()
	if _, err := Write(again); err != nil {
		t.Fatal(err)
	}
	second := dirHashes(t, again)
	if len(first) != len(second) {
		t.Fatalf("file sets differ: %d vs %d", len(first), len(second))
	}
	for name, h := range first {
		if second[name] != h {
			t.Errorf("sample %s differs between two generations", name)
		}
	}
	// The GeoPackage's contents table carries the pinned date, not the clock.
	gpkg, err := os.ReadFile(filepath.Join(dir, "city.gpkg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(gpkg, []byte(sampleDate[:len("2024-01-01T00:00:00")])) {
		t.Errorf("city.gpkg does not hold the pinned date %s", sampleDate)
	}
	var good, bad int
	for _, s := range samples {
		if s.Bad {
			bad++
		} else {
			good++
		}
	}
	if good < 6 || bad < 4 {
		t.Errorf("%d good and %d bad samples", good, bad)
	}
}

// TestWriteLeavesEnvironment: the GeoPackage date is pinned through the
// environment for the duration of Write only.
func TestWriteLeavesEnvironment(t *testing.T) {
	t.Setenv("OGR_CURRENT_DATE", "1999-12-31T00:00:00Z")
	if _, err := Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("OGR_CURRENT_DATE"); v != "1999-12-31T00:00:00Z" {
		t.Errorf("OGR_CURRENT_DATE = %q after Write, want the caller's value back", v)
	}
}

func TestWriterUnknownName(t *testing.T) {
	if err := Writer("no-such-sample.tif")(filepath.Join(t.TempDir(), "x.tif")); err == nil {
		t.Error("Writer of an unknown sample wrote something")
	}
	p := filepath.Join(t.TempDir(), "bomb.tif")
	if err := Writer("pixel_bomb.tif")(p); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() > 1024 {
		t.Errorf("pixel bomb: %v, %v", fi, err)
	}
}
