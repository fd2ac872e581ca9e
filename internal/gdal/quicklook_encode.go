package gdal

// The quick-looks' encodings: lossy WebP for continuous rasters, PNG for
// the exact ones (docs/decisions/0108), written to /vsimem/ and read back.

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/airbusgeo/godal"
)

var quickLookSeq atomic.Int64

// webpQuality is the WEBP driver's QUALITY (1-100) for continuous
// thumbnails: the samples' rasters take 0.5 to 1.2 KB at 256 px, without
// visible blocks (docs/decisions/0108).
const webpQuality = "80"

// lossyQuickLooks reports whether continuous thumbnails are WebP: this
// GDAL has the WEBP driver.
func lossyQuickLooks() bool {
	_, ok := godal.RasterDriver("WEBP")
	return ok
}

// encodePNG translates ds to PNG with switches and returns the file's
// bytes.
func encodePNG(ds *godal.Dataset, switches []string, eh interface {
	godal.DatasetTranslateOption
	godal.CloseOption
}) ([]byte, error) {
	return encodeImage(ds, "PNG", switches, eh)
}

// encodeWebP translates ds to lossy WebP with switches, which must select
// 3 bands (RGB) or 4 (RGBA), and returns the file's bytes.
func encodeWebP(ds *godal.Dataset, switches []string, eh interface {
	godal.DatasetTranslateOption
	godal.CloseOption
}) ([]byte, error) {
	return encodeImage(ds, "WEBP", append(switches, "-co", "QUALITY="+webpQuality), eh)
}

// encodeImage translates ds to format with switches and returns the
// file's bytes; the /vsimem/ files are removed.
func encodeImage(ds *godal.Dataset, format string, switches []string, eh interface {
	godal.DatasetTranslateOption
	godal.CloseOption
}) ([]byte, error) {
	name := fmt.Sprintf("/vsimem/geomigrate-quicklook-%d.%s", quickLookSeq.Add(1), strings.ToLower(format))
	defer func() {
		_ = godal.VSIUnlink(name)
		_ = godal.VSIUnlink(name + ".aux.xml") // PAM, when GDAL kept georeferencing there
	}()
	out, err := ds.Translate(name, append([]string{"-of", format}, switches...), eh)
	if err != nil {
		return nil, err
	}
	if err := out.Close(eh); err != nil {
		return nil, err
	}
	f, err := godal.VSIOpen(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
