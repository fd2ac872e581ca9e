package sampledata

import (
	"path/filepath"
	"testing"

	"github.com/airbusgeo/godal"
)

func TestBenchRaster(t *testing.T) {
	// 300 is not a multiple of the 256-row strip: the last strip is short.
	p := filepath.Join(t.TempDir(), "field.tif")
	if err := WriteFloatField(p, 300); err != nil {
		t.Fatal(err)
	}
	ds, err := godal.Open(p, godal.RasterOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	st := ds.Structure()
	if st.SizeX != 300 || st.SizeY != 300 || st.NBands != 1 || st.DataType != godal.Float32 {
		t.Fatalf("structure %+v", st)
	}
	if nd, ok := ds.Bands()[0].NoData(); !ok || nd != -9999 {
		t.Fatalf("nodata %v %v", nd, ok)
	}
	last := make([]float32, 300)
	if err := ds.Bands()[0].Read(0, 299, last, 300, 1); err != nil {
		t.Fatal(err)
	}
	for x, v := range last {
		if v < 400 || v > 1200 {
			t.Fatalf("pixel (%d, 299) = %v: the last, short strip was not written", x, v)
		}
	}
}

func TestBenchVectors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		write func(string, int) error
		geom  godal.GeometryType
	}{
		{"points.geojson", WritePointsGeoJSON, godal.GTPoint},
		{"polygons.geojson", WritePolygonsGeoJSON, godal.GTPolygon},
		{"points.gpkg", WritePointsGPKG, godal.GTPoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := tc.write(p, 1234); err != nil {
				t.Fatal(err)
			}
			ds, err := godal.Open(p, godal.VectorOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			l := ds.Layers()[0]
			n, err := l.FeatureCount()
			if err != nil || n != 1234 {
				t.Fatalf("%d features (%v), want 1234", n, err)
			}
			f := l.NextFeature()
			if f == nil {
				t.Fatal("no first feature")
			}
			defer f.Close()
			g := f.Geometry()
			if g.Type() != tc.geom || !g.Valid() || g.Empty() {
				t.Fatalf("first geometry: type %v (want %v), valid %v, empty %v", g.Type(), tc.geom, g.Valid(), g.Empty())
			}
		})
	}
}
