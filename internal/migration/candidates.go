package migration

import (
	"path"
	"strings"
	"unicode"

	"github.com/geomigrate/geomigrate/internal/convert"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// ReasonNotGeospatial: the source is a file no archive of geodata needs
// migrated (README.txt, Thumbs.db, .DS_Store …). It is reported as
// ignored: not converted, not routed, no state record.
const ReasonNotGeospatial = "not_geospatial"

// osFiles are the files operating systems and desktop tools leave in any
// folder.
var osFiles = map[string]bool{"thumbs.db": true, "desktop.ini": true, "ehthumbs.db": true, "icon\r": true, ".ds_store": true}

// nonGeoExts are extensions of documents, text, code and media: never a
// geospatial source. Deliberately a deny-list: a file with an unknown
// extension, or none, may still be a format GDAL identifies by content (a
// GeoTIFF named "dem", a grid named .dat), so it stays a candidate and an
// unreadable one goes to remediation with the driver's verdict. Formats GDAL
// reads but the pipeline refuses (CSV, PDF, XLSX, GPX …) are candidates too:
// remediation says what to do with them. TestNotGeospatial checks that no
// sidecar and no converted format is on this list.
var nonGeoExts = map[string]bool{
	".txt": true, ".md": true, ".rst": true, ".htm": true, ".html": true, ".css": true, ".js": true,
	".doc": true, ".docx": true, ".odt": true, ".rtf": true, ".ppt": true, ".pptx": true, ".odp": true,
	".log": true, ".ini": true, ".cfg": true, ".conf": true, ".yaml": true, ".yml": true, ".toml": true,
	".bak": true, ".tmp": true, ".temp": true, ".swp": true, ".lock": true, ".lnk": true, ".url": true,
	".py": true, ".sh": true, ".bat": true, ".ps1": true, ".exe": true, ".dll": true, ".so": true, ".dylib": true,
	".eml": true, ".msg": true, ".mp3": true, ".wav": true, ".mp4": true, ".mov": true, ".avi": true, ".db": true,
}

// NotGeospatial says why the object at key is no migration candidate, or
// "" when it is one: hidden files (.DS_Store, macOS "._" resource forks),
// operating-system files (Thumbs.db, desktop.ini), editor and Office
// leftovers (name~, ~$name), and documents, text, code and media by
// extension. It judges the name only.
func NotGeospatial(key string) string {
	base := path.Base(key)
	lower := strings.ToLower(base)
	switch {
	case osFiles[lower]:
		return "operating-system file"
	case strings.HasPrefix(base, "."):
		return "hidden file"
	case strings.HasPrefix(base, "~$") || strings.HasSuffix(base, "~"):
		return "editor or office leftover"
	case nonGeoExts[path.Ext(lower)]:
		return "not a geospatial format (" + path.Ext(lower) + ")"
	}
	return ""
}

// checkKeyChars refuses a key holding a control character (a newline, a
// tab …): the file's name is at fault, so it is a data problem the owner
// fixes by renaming, never a failure of the system.
func checkKeyChars(key string) error {
	for _, r := range key {
		if unicode.IsControl(r) {
			return fault.Data(fault.InvalidInput, "source key %q contains a control character (%U); rename the file", key, r)
		}
	}
	return nil
}

// PredictDestKey is the key (under the destination prefix) of the single
// output a source most likely gets with recipe r: the same guess HashCheck
// makes to find an earlier output. Two sources with the same prediction
// would compete for one output key.
func PredictDestKey(key string, r convert.Recipe) string {
	return predictDestKey("", key, r.WithDefaults())
}
