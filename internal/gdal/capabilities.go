package gdal

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Capabilities are the facts a recipe is checked against before a run
// (recipe.Book.Check), taken from this GDAL: the COG driver's creation
// option list (its COMPRESS values and every option), the overview
// resamplings it builds with, and PROJ's database for CRS codes.
func (e *Engine) Capabilities() recipe.Capabilities {
	return recipe.Capabilities{
		Engine:       "GDAL " + e.version,
		Compressions: cogCompressions(),
		Resamplings:  overviewResamplings(),
		CreationOption: func(kv string) error {
			return CheckCreationOptions([]string{kv})
		},
		CRS: knownCRS,
	}
}

// cogCompressions are the COG driver's COMPRESS values (a GDAL built
// without libwebp has no WEBP).
func cogCompressions() []string {
	opts, err := cogOptions()
	if err != nil {
		return nil
	}
	var out []string
	for _, v := range opts["COMPRESS"].Values {
		out = append(out, strings.ToUpper(v))
	}
	return out
}

// overviewResamplings are the recipe's resampling names this GDAL builds
// COG overviews with: the values of the driver's OVERVIEW_RESAMPLING
// option when its list gives them, else (GDAL 3.6 to 3.10 declare the
// option as a plain string) those of recipe.OverviewResamplings that a
// COG of one overview, written in memory, is built with. Found once per
// process.
var overviewResamplings = sync.OnceValue(func() []string {
	var listed []string
	if opts, err := cogOptions(); err == nil {
		for _, v := range opts["OVERVIEW_RESAMPLING"].Values {
			listed = append(listed, strings.ToLower(v))
		}
	}
	var out []string
	for _, name := range recipe.OverviewResamplings {
		if name == recipe.ResamplingAuto {
			continue
		}
		if len(listed) > 0 {
			if slices.Contains(listed, name) {
				out = append(out, name)
			}
			continue
		}
		if buildsOverviews(name) {
			out = append(out, name)
		}
	}
	return out
})

// buildsOverviews writes a 256 x 256 COG with one overview built with
// resampling into /vsimem: GDAL refuses a resampling it does not know
// ("Unsupported resampling method").
func buildsOverviews(resampling string) bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src, err := godal.Create(godal.Memory, "", 1, godal.Byte, 256, 256)
	if err != nil {
		return false
	}
	defer src.Close()
	rec := newRecorder()
	name := fmt.Sprintf("/vsimem/geomigrate-resampling-%s.tif", resampling)
	out, err := src.Translate(name, []string{"-of", cogDriver, "-co", "BLOCKSIZE=128", "-co", "COMPRESS=NONE",
		"-co", "OVERVIEW_COUNT=1", "-co", "OVERVIEW_RESAMPLING=" + strings.ToUpper(resampling)}, rec.opt())
	if err != nil {
		return false
	}
	ok := out.Close(rec.opt()) == nil
	_ = godal.VSIUnlink(name)
	return ok
}

// knownCRS checks an AUTHORITY:CODE against PROJ's database.
func knownCRS(code string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	srs, err := godal.NewSpatialRef(code)
	if err != nil {
		return fmt.Errorf("PROJ %s's database has no such CRS", projVersion())
	}
	srs.Close()
	return nil
}
