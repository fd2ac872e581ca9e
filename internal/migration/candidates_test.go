package migration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

func TestNotGeospatial(t *testing.T) {
	for _, tc := range []struct {
		key    string
		ignore bool
	}{
		{"README.txt", true},
		{"docs/notes.md", true},
		{"Thumbs.db", true},
		{"photos/Thumbs.db", true},
		{".DS_Store", true},
		{"a/._dem.tif", true}, // macOS resource fork
		{"desktop.ini", true},
		{"Desktop.INI", true},
		{"~$report.docx", true},
		{"dem.tif~", true},
		{"report.docx", true},
		{"dem.tif", false},
		{"DEM.TIFF", false},
		{"roads.shp", false},
		{"roads.shp.zip", false},
		{"city.gpkg", false},
		{"parks.geojson", false},
		{"elevation.asc", false},
		{"scene.jp2", false},
		{"land.img", false},
		{"tracks.kml", false},
		{"grid.nc", false},
		{"survey.csv", false},     // a format GDAL reads: remediation says what to do with it
		{"map.pdf", false},        // GeoPDF: idem
		{"dem", false},            // no extension: GDAL identifies by content
		{"dem.unknownext", false}, // unknown extension: idem
	} {
		reason := NotGeospatial(tc.key)
		if (reason != "") != tc.ignore {
			t.Errorf("NotGeospatial(%q) = %q, want ignored %v", tc.key, reason, tc.ignore)
		}
	}
	// Only the registry's non-geospatial extensions are ignored: never a
	// sidecar, an archive or a format the pipeline converts.
	for _, f := range formats.Table() {
		if r := NotGeospatial("x" + f.Ext); (r != "") != (f.Kind == formats.NotGeospatial) {
			t.Errorf("x%s (%s): NotGeospatial = %q", f.Ext, f.Kind, r)
		}
	}
}

// TestHashCheckIgnoresNonGeospatialFiles: README.txt and Thumbs.db are
// skipped as ignored: no state record, no conversion, no queue message.
func TestHashCheckIgnoresNonGeospatialFiles(t *testing.T) {
	f := newFixture(t)
	for _, key := range []string{"README.txt", "Thumbs.db", "desktop.ini", "sub/.DS_Store"} {
		f.put(t, key, "not geospatial")
		out := f.check(t, "e1", key)
		if out.Decision != DecisionSkip || out.Reason != ReasonNotGeospatial {
			t.Errorf("%s: decision %s/%s, want skip/%s", key, out.Decision, out.Reason, ReasonNotGeospatial)
		}
	}
	n := 0
	_ = f.tracker.List(context.Background(), "", func(statestore.Job) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d state records for ignored files", n)
	}
}

// TestHashCheckRefusesInvalidKeysAsData: a key that could climb out of the
// destination prefix, or holds a control character, is the file's name at
// fault, not the system: a DataError InvalidKey for remediation, before any
// store call (the store holds no object at all here), decoded first when
// it arrives URL-encoded as S3 events carry it.
func TestHashCheckRefusesInvalidKeysAsData(t *testing.T) {
	for _, c := range []struct{ key, encoding, says string }{
		{"x\ny.tif", "plain", "control character"},
		{"x\ry.tif", "plain", "control character"},
		{"a/b\tc.tif", "plain", "control character"},
		{"bell\a.tif", "plain", "control character"},
		{"del\x7f.tif", "plain", "control character"},
		{"in/../../x.tif", "plain", `".."`},
		{"in/%2E%2E/%2E%2E/x.tif", "url", `".."`},
		{"/abs/x.tif", "plain", `starts with "/"`},
		{"%2Fabs%2Fx.tif", "url", `starts with "/"`},
		{"in//x.tif", "plain", "empty path segment"},
		{"in/./x.tif", "plain", `"."`},
		{"in/a%0Ab.tif", "url", "control character"},
	} {
		t.Run(fmt.Sprintf("%q", c.key), func(t *testing.T) {
			f := newFixture(t)
			_, err := f.hash.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: c.key, KeyEncoding: c.encoding}, Context: inv("e1", 0)})
			var d *fault.DataError
			if !errors.As(err, &d) || d.Code != fault.InvalidKey {
				t.Fatalf("err = %v (%T), want a DataError %s", err, err, fault.InvalidKey)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("message %q does not say what is wrong (%s)", err, c.says)
			}
		})
	}
}
