package budget

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// classicTIFF is a little-endian TIFF header with one IFD of LONG entries
// (tag, value) and no pixel data: enough for what CheckTIFF reads.
func classicTIFF(entries [][2]uint32) []byte {
	le := binary.LittleEndian
	b := []byte{'I', 'I', 42, 0, 8, 0, 0, 0}
	b = le.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = le.AppendUint16(b, uint16(e[0]))
		b = le.AppendUint16(b, 4) // LONG
		b = le.AppendUint32(b, 1)
		b = le.AppendUint32(b, e[1])
	}
	return le.AppendUint32(b, 0)
}

func TestCheckTIFF(t *testing.T) {
	r := recipe.DefaultRecipe() // 3 GiB: 384 MiB a block
	small := r
	small.MaxMemory = 4 << 20 // 512 KiB a block
	cases := []struct {
		name string
		data []byte
		r    recipe.Recipe
		want fault.Code // "" = accepted
	}{
		{"tiled 1024 x 1024 RGB", classicTIFF([][2]uint32{{tagImageWidth, 1024}, {tagImageLength, 1024}, {tagSamplesPerPixel, 3}, {tagBitsPerSample, 8}, {tagTileWidth, 256}, {tagTileLength, 256}}), r, ""},
		{"a tile over a small budget", classicTIFF([][2]uint32{{tagImageWidth, 2048}, {tagImageLength, 2048}, {tagBitsPerSample, 8}, {tagTileWidth, 1024}, {tagTileLength, 1024}}), small, fault.BudgetExceeded},
		{"uncompressed strip read line by line", classicTIFF([][2]uint32{{tagImageWidth, 4096}, {tagImageLength, 4096}, {tagBitsPerSample, 8}, {tagRowsPerStrip, 4096}}), small, ""},
		{"compressed strip held whole", classicTIFF([][2]uint32{{tagImageWidth, 4096}, {tagImageLength, 4096}, {tagBitsPerSample, 8}, {tagRowsPerStrip, 4096}, {tagCompression, 8}}), small, fault.BudgetExceeded},
		{"pixels over MaxPixels", classicTIFF([][2]uint32{{tagImageWidth, 100_000}, {tagImageLength, 100_000}, {tagBitsPerSample, 8}, {tagTileWidth, 256}, {tagTileLength, 256}}), r, fault.BudgetExceeded},
		{"not a TIFF: left to GDAL", []byte("id,name\n1,x\n"), small, ""},
		{"header cut short: left to GDAL", []byte("II*\x00\x08\x00\x00\x00\x05"), small, ""},
	}
	for _, bomb := range hostile.SizeBombs() {
		cases = append(cases, struct {
			name string
			data []byte
			r    recipe.Recipe
			want fault.Code
		}{bomb.Name, bomb.Data, r, fault.BudgetExceeded})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckTIFF(bytes.NewReader(c.data), int64(len(c.data)), c.r)
			if fault.CodeOf(err) != c.want {
				t.Errorf("CheckTIFF: %v, want %q", err, c.want)
			}
		})
	}
}
