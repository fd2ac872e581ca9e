package migration

import (
	"testing"
)

// TestSidecarsFollowTheRegistry: the names the former lists disagreed on
// get internal/formats' answer in HashCheck. .rrd/.ige used to be
// converted as sources here while GDAL read them as sidecars; a .dbf used
// to count as a sidecar of a GeoTIFF of the same stem.
func TestSidecarsFollowTheRegistry(t *testing.T) {
	f := newFixture(t)
	f.put(t, "roads.tif", "pixels")
	for _, key := range []string{"land.rrd", "land.ige", "dem.tif.ovr", "dem.tif.msk", "dem.qmd", "dem.tif.aux.xml", "roads.dbf"} {
		f.put(t, key, "sidecar")
		if out := f.check(t, "e-"+key, key); out.Decision != DecisionSkip || out.Reason != ReasonSidecar {
			t.Errorf("%s without its main file: %s/%s, want skip/%s", key, out.Decision, out.Reason, ReasonSidecar)
		}
	}

	// With the main file present, an event for a sidecar migrates it, and
	// every sidecar (read by GDAL or not) is part of its identity.
	f.put(t, "land.img", "pixels")
	first := f.check(t, "e1", "land.rrd")
	if first.Decision != DecisionConvert || first.Job.SourceKey != "land.img" {
		t.Fatalf("land.rrd event: %s/%s for %q, want convert land.img", first.Decision, first.Reason, first.Job.SourceKey)
	}
	for i, key := range []string{"land.ige", "land.img.ovr", "land.qmd"} {
		before := f.check(t, "e-before-"+key, "land.img").Job.SourceSHA256
		f.put(t, key, "edited")
		after := f.check(t, "e-after-"+key, "land.img").Job.SourceSHA256
		if before == "" || before == after {
			t.Errorf("%d: an edit of %s left land.img's identity %q unchanged", i, key, after)
		}
	}
	// roads.dbf is no part of roads.tif.
	if out := f.check(t, "e2", "roads.dbf"); out.Decision != DecisionSkip {
		t.Errorf("roads.dbf beside roads.tif: %s for %q", out.Decision, out.Job.SourceKey)
	}
}
