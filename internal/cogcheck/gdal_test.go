package cogcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gdalFixture is a file made with GDAL's command-line tools.
type gdalFixture struct {
	name  string
	steps [][]string // commands run in the fixture directory; arguments "SRC", "OUT", "TMP" are substituted
	// patch corrupts the result; nil keeps it as GDAL wrote it.
	patch func(t testing.TB, b []byte) []byte
	from  string // name of another fixture to patch instead of running steps
	valid bool   // expected verdict (full check), from the reference script
	exact bool   // messages must match the script's exactly
	check func(t *testing.T, rep Report)
}

func translate(args ...string) []string {
	return append([]string{"gdal_translate", "-q"}, append(args, "SRC", "OUT")...)
}

func gdalFixtures() []gdalFixture {
	wantOvr := func(n, masks int) func(*testing.T, Report) {
		return func(t *testing.T, rep Report) {
			if rep.Details.Overviews != n || len(rep.Details.MaskIFDOffsets) != masks {
				t.Errorf("overviews=%d masks=%v, want %d and %d", rep.Details.Overviews, rep.Details.MaskIFDOffsets, n, masks)
			}
		}
	}
	return []gdalFixture{
		{name: "cog", steps: [][]string{translate("-of", "COG", "-co", "BLOCKSIZE=512")}, valid: true, exact: true,
			check: wantOvr(1, 0)},
		{name: "cog-deflate-3band", steps: [][]string{translate("-b", "1", "-b", "1", "-b", "1", "-of", "COG",
			"-co", "BLOCKSIZE=256", "-co", "COMPRESS=DEFLATE")}, valid: true, exact: true, check: wantOvr(2, 0)},
		{name: "small-cog-256", steps: [][]string{translate("-of", "COG", "-co", "BLOCKSIZE=512", "-outsize", "256", "256")},
			valid: true, exact: true, check: wantOvr(0, 0)},
		{name: "bigtiff-cog", steps: [][]string{translate("-of", "COG", "-co", "BLOCKSIZE=512", "-co", "BIGTIFF=YES")},
			valid: true, exact: true, check: func(t *testing.T, rep Report) {
				if !rep.Details.BigTIFF {
					t.Error("BigTIFF not detected")
				}
			}},
		{name: "cog-with-mask", steps: [][]string{translate("-of", "COG", "-co", "BLOCKSIZE=256", "-mask", "1")},
			valid: true, exact: true, check: func(t *testing.T, rep Report) {
				wantOvr(2, 3)(t, rep)
				if !rep.Details.MaskInterleavedWithImagery {
					t.Error("MASK_INTERLEAVED_WITH_IMAGERY not detected")
				}
			}},
		// The script only calls a file untiled when its block width exceeds
		// 1024: a 1024x1024 strip file passes, with a warning.
		{name: "striped-1024", steps: [][]string{translate("-of", "GTiff", "-co", "TILED=NO")}, valid: true, exact: true},
		{name: "striped-2048", steps: [][]string{translate("-of", "GTiff", "-co", "TILED=NO", "-outsize", "2048", "512")},
			exact: true},
		{name: "tiled-no-overviews", steps: [][]string{translate("-of", "GTiff", "-co", "TILED=YES")}, valid: true, exact: true},
		{name: "tiled-mask-no-overviews", steps: [][]string{translate("--config", "GDAL_TIFF_INTERNAL_MASK", "YES",
			"-of", "GTiff", "-co", "TILED=YES", "-mask", "1")},
			valid: true, exact: true, check: wantOvr(0, 1)},
		{name: "overviews-added-after", steps: [][]string{
			translate("-of", "GTiff", "-co", "TILED=YES"),
			{"gdaladdo", "-q", "OUT", "2", "4"},
		}, exact: true, check: wantOvr(2, 0)},
		{name: "overviews-in-ovr-file", steps: [][]string{
			translate("-of", "GTiff", "-co", "TILED=YES"),
			{"gdaladdo", "-q", "-ro", "OUT", "2", "4"},
		}}, // the script goes on comparing offsets across the two files: verdict only
		{name: "copy-src-overviews-big-endian", steps: [][]string{
			{"gdal_translate", "-q", "-of", "GTiff", "-co", "TILED=YES", "SRC", "TMP"},
			{"gdaladdo", "-q", "TMP", "2", "4"},
			{"gdal_translate", "-q", "-of", "GTiff", "-co", "TILED=YES", "-co", "COPY_SRC_OVERVIEWS=YES",
				"-co", "ENDIANNESS=BIG", "TMP", "OUT"},
		}, valid: true, exact: true, check: func(t *testing.T, rep Report) {
			if !rep.Details.BigEndian || rep.Details.StructuralMetadata == "" {
				t.Errorf("details: %+v", rep.Details)
			}
		}},

		// A source whose overviews are not sorted by size (4, then 2): the
		// COG driver's default reuses them and writes an invalid COG;
		// OVERVIEWS=IGNORE_EXISTING (what the engine passes) rebuilds them.
		{name: "cog-from-unsorted-overviews", steps: [][]string{
			{"gdal_translate", "-q", "-of", "GTiff", "-co", "TILED=YES", "SRC", "TMP"},
			{"gdaladdo", "-q", "TMP", "4"},
			{"gdaladdo", "-q", "TMP", "2"},
			{"gdal_translate", "-q", "-of", "COG", "TMP", "OUT"},
		}, exact: true},
		{name: "cog-from-unsorted-overviews-rebuilt", steps: [][]string{
			{"gdal_translate", "-q", "-of", "GTiff", "-co", "TILED=YES", "SRC", "TMP"},
			{"gdaladdo", "-q", "TMP", "4"},
			{"gdaladdo", "-q", "TMP", "2"},
			{"gdal_translate", "-q", "-of", "COG", "-co", "OVERVIEWS=IGNORE_EXISTING", "TMP", "OUT"},
		}, valid: true, exact: true},

		// Hand-corrupted copies of the COG.
		{name: "cog-tiles-swapped", from: "cog", exact: true,
			patch: func(t testing.TB, b []byte) []byte { swapBlocks(t, b, firstIFD(b), 0, 1); return b }},
		{name: "cog-truncated", from: "cog",
			patch: func(t testing.TB, b []byte) []byte { return b[:len(b)/2] }},
		{name: "cog-wrong-magic", from: "cog",
			patch: func(t testing.TB, b []byte) []byte { b[2] = 0x2C; return b }},
		{name: "cog-ifd-past-eof", from: "cog",
			patch: func(t testing.TB, b []byte) []byte { patchFirstIFD(b, uint64(len(b))+10); return b }},
		{name: "cog-bad-leader", from: "cog", exact: true,
			patch: func(t testing.TB, b []byte) []byte {
				d := checkedDetails(t, b)
				b[d.DataOffsets[0]-2] ^= 0x55
				return b
			}},
		{name: "cog-bigtiff-tiles-swapped", from: "bigtiff-cog", exact: true,
			patch: func(t testing.TB, b []byte) []byte { swapBlocks(t, b, firstIFD(b), 2, 3); return b }},
	}
}

// writePGM writes a w x h 8-bit gradient (with zeros, used as a mask) that
// GDAL reads as a source.
func writePGM(t testing.TB, path string, w, h int) {
	t.Helper()
	data := []byte(fmt.Sprintf("P5\n%d %d\n255\n", w, h))
	for y := range h {
		for x := range w {
			data = append(data, byte((x*7+y*3)^(x*y)))
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildGDALFixtures makes every fixture in dir from a w x h source and
// returns their paths by name. It skips the test when GDAL's tools are absent.
func buildGDALFixtures(t testing.TB, dir string, w, h int) map[string]string {
	t.Helper()
	for _, tool := range []string{"gdal_translate", "gdaladdo"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (install gdal-bin): GDAL-generated fixtures skipped", tool)
		}
	}
	src := filepath.Join(dir, "src.pgm")
	writePGM(t, src, w, h)
	paths := map[string]string{}
	for _, fx := range gdalFixtures() {
		out := filepath.Join(dir, fx.name+".tif")
		if fx.from != "" {
			b, err := os.ReadFile(paths[fx.from])
			if err != nil {
				t.Fatal(err)
			}
			writeTemp(t, dir, fx.name+".tif", fx.patch(t, b))
			paths[fx.name] = out
			continue
		}
		for _, step := range fx.steps {
			args := make([]string, len(step))
			for i, a := range step {
				switch a {
				case "SRC":
					a = src
				case "OUT":
					a = out
				case "TMP":
					a = out + ".tmp.tif"
				}
				args[i] = a
			}
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %v\n%s", fx.name, args, err, b)
			}
		}
		paths[fx.name] = out
	}
	return paths
}

// TestAgreementGDAL is the point of the package: on files written by GDAL,
// good and deliberately broken, cogcheck and GDAL's own validator agree.
func TestAgreementGDAL(t *testing.T) {
	dir := t.TempDir()
	paths := buildGDALFixtures(t, dir, 1024, 1024)
	withRef := refAvailable() == ""
	if !withRef {
		t.Logf("reference script unavailable, checking expected verdicts only: %s", refAvailable())
	}
	var refs map[refKey]refResult
	if withRef {
		var all []string
		for _, fx := range gdalFixtures() {
			all = append(all, paths[fx.name])
		}
		refs = runRefBatch(t, all)
	}
	for _, fx := range gdalFixtures() {
		path := paths[fx.name]
		t.Run(fx.name, func(t *testing.T) {
			rep, err := CheckFile(path)
			if got := err == nil && rep.Valid(); got != fx.valid {
				t.Errorf("valid=%v, want %v (err=%v errors=%q)", got, fx.valid, err, rep.Errors)
			}
			if err == nil && fx.check != nil {
				fx.check(t, rep)
			}
			if withRef {
				assertAgree(t, path, fx.exact, refs)
			}
		})
	}
}

func haveGDALTools() bool {
	for _, tool := range []string{"gdal_translate", "gdaladdo"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	return true
}
