package preflight

import (
	"slices"
	"testing"

	"github.com/geomigrate/geomigrate/internal/formats"
)

// namedOnly are drivers the registry names for a format's messages only,
// never allowed to open a source, each with its reason.
var namedOnly = map[string]string{
	"HDF4": ".hdf is HDF4 or HDF5; the layer has no HDF4 library, so an HDF4 file is refused naming the driver it needs",
}

// TestFormatDriversAreAllowed ties the format registry to the driver
// allow-list (CONTRIBUTING.md, "Add an input format"): every driver a
// source format names is one preflight lets GDAL open, for its kind (or is
// in namedOnly, saying why), so a format added to internal/formats without
// its driver here (and, through TestLayerManifestMatchesDriverLists, in
// the Lambda layer) fails.
func TestFormatDriversAreAllowed(t *testing.T) {
	sources := 0
	for _, f := range formats.Table() {
		var allowed []string
		switch f.Kind {
		case formats.Raster:
			allowed = RasterDrivers
		case formats.Vector:
			allowed = VectorDrivers
		default:
			continue
		}
		sources++
		opens := false
		for _, d := range f.Drivers {
			switch {
			case slices.Contains(allowed, d):
				opens = true
			case namedOnly[d] == "":
				t.Errorf("formats: %s names driver %q, which preflight's %s allow-list (RasterDrivers, VectorDrivers) lacks", f.Ext, d, f.Kind)
			}
		}
		if !opens && len(f.Drivers) > 0 {
			t.Errorf("formats: %s names no driver preflight allows (%q)", f.Ext, f.Drivers)
		}
	}
	if sources < 10 {
		t.Fatalf("formats.Table holds %d raster and vector formats", sources)
	}
}
