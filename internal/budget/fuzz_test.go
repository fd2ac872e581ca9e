package budget

import (
	"bytes"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// FuzzCheckTIFF: CheckTIFF reads the IFDs of any bytes without a panic or
// a hang, and answers nil (left to GDAL) or BudgetExceeded, nothing else.
// Seeds: the size bombs and a plain tiled header, little- and big-endian
// and BigTIFF prefixes. Run longer with
//
//	go test ./internal/budget -run '^$' -fuzz '^FuzzCheckTIFF$' -fuzztime 60s
func FuzzCheckTIFF(f *testing.F) {
	for _, b := range hostile.SizeBombs() {
		f.Add(b.Data)
	}
	f.Add(classicTIFF([][2]uint32{{tagImageWidth, 1024}, {tagImageLength, 1024}, {tagTileWidth, 256}, {tagTileLength, 256}}))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x00\x00\x04\x00\x00\x00\x01\x00\x00\x10\x00\x00\x00\x00\x00"))
	f.Add([]byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"))
	r := recipe.DefaultRecipe()
	r.MaxMemory = 64 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckTIFF(bytes.NewReader(data), int64(len(data)), r)
		if err != nil && fault.CodeOf(err) != fault.BudgetExceeded {
			t.Fatalf("CheckTIFF: %v, want nil or BudgetExceeded", err)
		}
	})
}
