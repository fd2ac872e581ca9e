package cogcheck

import (
	"bytes"
	"errors"
	"fmt"
)

// Check reads only the TIFF structure (IFDs, tile offsets, the ghost
// header) through an io.ReaderAt; a file GDAL's validator rejects is
// rejected with its message.
func ExampleCheck() {
	cog := goodCOG().encode() // a 1024² tiled GeoTIFF with one overview, as GDAL's COG driver lays it out
	rep, err := Check(bytes.NewReader(cog), int64(len(cog)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Valid(), rep.Details.Width, rep.Details.Tiled, rep.Details.Overviews)

	_, err = Check(bytes.NewReader([]byte("not a tiff")), 10)
	fmt.Println(errors.Is(err, ErrNotTIFF))
	// Output:
	// true 1024 true 1
	// true
}
