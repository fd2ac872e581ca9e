package migration

import (
	"path"
	"strings"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// ReasonNotGeospatial: the source is a file no archive of geodata needs
// migrated (README.txt, Thumbs.db, .DS_Store …). It is reported as
// ignored: not converted, not routed, no state record.
const ReasonNotGeospatial = "not_geospatial"

// osFiles are the files operating systems and desktop tools leave in any
// folder.
var osFiles = map[string]bool{"thumbs.db": true, "desktop.ini": true, "ehthumbs.db": true, "icon\r": true, ".ds_store": true}

// NotGeospatial says why the object at key is no migration candidate, or
// "" when it is one: hidden files (.DS_Store, macOS "._" resource forks),
// operating-system files (Thumbs.db, desktop.ini), editor and Office
// leftovers (name~, ~$name), and documents, text, code and media by
// extension (formats.NotGeospatial). It judges the name only.
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
	case formats.KindOf(lower) == formats.NotGeospatial:
		return "not a geospatial format (" + formats.Lookup(lower).Ext + ")"
	}
	return ""
}

// PredictDestKey is the key (under the destination prefix) of the single
// output a source most likely gets with recipe r: the same guess HashCheck
// makes to find an earlier output. Two sources with the same prediction
// would compete for one output key.
func PredictDestKey(key string, r recipe.Recipe) string {
	return predictDestKey("", key, r.WithDefaults())
}
