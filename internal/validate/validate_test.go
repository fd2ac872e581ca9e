package validate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

func writeGeoParquet(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// POINT(1 2) as little-endian ISO WKB.
	wkb := []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40}
	layer := geoparquet.Layer{Name: "p", GeometryColumn: "geometry", IsCRS84: true}
	if _, err := geoparquet.Write(f, layer, &geoparquet.SliceSource{Features: []geoparquet.Feature{{WKB: wkb}}}, geoparquet.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	gpq := filepath.Join(dir, "ok.parquet")
	writeGeoParquet(t, gpq)
	junk := filepath.Join(dir, "junk.tif")
	if err := os.WriteFile(junk, []byte("II*\x00junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	notParquet := filepath.Join(dir, "bad.parquet")
	if err := os.WriteFile(notParquet, []byte("PAR1 but not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	fgb := filepath.Join(dir, "bad.fgb")
	if err := os.WriteFile(fgb, []byte("not flatgeobuf at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, format string
		valid        bool
	}{
		{gpq, "", true},
		{notParquet, "", false},
		{fgb, "", false},
		{junk, recipe.FormatCOG, false},
	}
	for _, tt := range tests {
		res, err := File(tt.path, tt.format)
		if err != nil && tt.valid {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		if err == nil && res.Valid != tt.valid {
			t.Errorf("%s: valid = %v (%v), want %v", tt.path, res.Valid, res.Errors, tt.valid)
		}
		if err == nil && !res.Valid && res.Err() == nil {
			t.Errorf("%s: invalid result without an error", tt.path)
		}
	}
	if _, err := File(filepath.Join(dir, "x.csv"), ""); err == nil {
		t.Error("a format without a validator was accepted")
	}
}
