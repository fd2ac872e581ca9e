package gdal

import (
	"path/filepath"
	"strings"
	"testing"
)

// databaseCRS remembers what it built: the text a fresh build gives, the
// database's own definition (WGS 84 as its ensemble), for each code apart.
func TestDatabaseCRSRemembersTheDatabasesOwnDefinition(t *testing.T) {
	search := filepath.SplitList(getConfig("PROJ_DATA"))
	for _, tc := range []struct{ code, name string }{
		{"4326", `ENSEMBLE["World Geodetic System 1984 ensemble"`},
		{"32633", `"WGS 84 / UTM zone 33N"`},
	} {
		first, ok := databaseCRS("EPSG", tc.code, search)
		if !ok {
			t.Fatalf("EPSG:%s: not built", tc.code)
		}
		again, _ := databaseCRS("EPSG", tc.code, search)
		fresh, _ := buildDatabaseCRS("EPSG", tc.code, search)
		if again != first || fresh != first {
			t.Errorf("EPSG:%s: remembered %q, again %q, built afresh %q", tc.code, first.wkt2, again.wkt2, fresh.wkt2)
		}
		if !strings.Contains(first.wkt2, tc.name) || !strings.Contains(first.projjson, `"code": `+tc.code) && !strings.Contains(first.projjson, `"code":`+tc.code) {
			t.Errorf("EPSG:%s: %s\n%s", tc.code, first.wkt2, first.projjson)
		}
	}
	if _, ok := databaseCRS("EPSG", "999999", search); ok {
		t.Error("EPSG:999999 built")
	}
	if _, ok := databaseCRSs.Load("EPSG\x00999999\x00" + strings.Join(search, "\x00")); ok {
		t.Error("a code proj.db cannot build is remembered")
	}
}
