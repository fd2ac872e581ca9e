package hostile

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Each bomb is a well-formed classic TIFF header of at most 8 KiB whose
// first IFD declares what its description says.
func TestSizeBombsAreSmallTIFFs(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range SizeBombs() {
		if seen[f.Name] {
			t.Errorf("%s: name repeated", f.Name)
		}
		seen[f.Name] = true
		if len(f.Data) > 8<<10 {
			t.Errorf("%s: %d bytes", f.Name, len(f.Data))
		}
		if !bytes.HasPrefix(f.Data, []byte{'I', 'I', 42, 0, 8, 0, 0, 0}) {
			t.Errorf("%s: not a little-endian classic TIFF with its IFD at 8", f.Name)
		}
		n := int(binary.LittleEndian.Uint16(f.Data[8:]))
		tags := map[uint16]uint32{}
		for i := 0; i < n; i++ {
			e := f.Data[10+12*i:]
			tag, typ := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:])
			v := binary.LittleEndian.Uint32(e[8:])
			if typ == 3 {
				v = uint32(binary.LittleEndian.Uint16(e[8:]))
			}
			tags[tag] = v
		}
		pixels := uint64(tags[256]) * uint64(tags[257]) * uint64(tags[277])
		tile := uint64(tags[322]) * uint64(tags[323]) * uint64(tags[277])
		if pixels < 1<<27 && tile < 1<<27 { // 128 Mi samples
			t.Errorf("%s (%s): declares %d pixels, tiles of %d: not a bomb", f.Name, f.Description, pixels, tile)
		}
	}
}
