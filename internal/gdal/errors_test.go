package gdal

import (
	"strings"
	"testing"
)

// TestShortReadSaysTruncated: libtiff's short reads become "truncated"
// with the block and its bytes, never the -1 row libtiff prints.
func TestShortReadSaysTruncated(t *testing.T) {
	tests := []struct {
		name, msg string
		want      string // "" when the message is not a short read
	}{
		{"tile (GDAL 3.6)", "TIFFFillTile:Read error at row 4294967295, col 4294967295, tile 0; got 1502 bytes, expected 5274\nTIFFReadEncodedTile() failed.", "tile 0 is cut short (1502 of its 5274 bytes are in the file)"},
		{"strip", "TIFFFillStrip:Read error on strip 3; got 10 bytes, expected 8192", "strip 3 is cut short (10 of its 8192 bytes"},
		{"scanline, block from GDAL", "TIFFReadEncodedStrip:Read error at scanline 4294967295; got 2666 bytes, expected 8192\nTIFFReadEncodedStrip() failed.\ncut.tif, band 1: IReadBlock failed at X offset 0, Y offset 5: TIFFReadEncodedStrip() failed.", "the block at column 0, row 5 of the block grid is cut short (2666 of its 8192 bytes"},
		{"raw tile", "TIFFReadRawTile1:Read error at row 256, col 0; got 0 bytes, expected 400", "a strip is cut short (0 of its 400 bytes"},
		{"not a short read", "TIFFReadDirectory:Failed to read directory at offset 8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := shortRead(tt.msg)
			switch {
			case tt.want == "" && ok:
				t.Errorf("%q read as a short read: %q", tt.msg, got)
			case tt.want != "" && (!ok || !strings.Contains(got, tt.want) || !strings.Contains(got, "truncated") || strings.Contains(got, "4294967295")):
				t.Errorf("got %q (%v), want one saying truncated and %q", got, ok, tt.want)
			}
		})
	}
}
