package migration

import (
	"context"
	"errors"
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

// TestHashCheckRefusesControlCharactersAsData: a key with a newline (or any
// control character) is the file's name at fault, not the system: a
// DataError for remediation, before any store call.
func TestHashCheckRefusesControlCharactersAsData(t *testing.T) {
	for _, key := range []string{"x\ny.tif", "x\ry.tif", "a/b\tc.tif", "bell\a.tif", "del\x7f.tif"} {
		t.Run(strings.ReplaceAll(key, "\n", `\n`), func(t *testing.T) {
			f := newFixture(t)
			f.put(t, key, "II*\x00")
			_, err := f.hash.Handle(context.Background(), HashCheckInput{Source: Source{Bucket: "src", Key: key, KeyEncoding: "plain"}, Context: inv("e1", 0)})
			var d *fault.DataError
			if !errors.As(err, &d) || d.Code != fault.InvalidInput {
				t.Fatalf("err = %v (%T), want a DataError %s", err, err, fault.InvalidInput)
			}
			if !strings.Contains(err.Error(), "control character") {
				t.Errorf("message %q does not say what is wrong", err)
			}
		})
	}
}
