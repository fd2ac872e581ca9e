package budget

// The sizes a TIFF declares, read from its IFDs in Go before GDAL opens it,
// and bounded against the conversion's budgets: dimensions, bands, and the
// bytes of one tile or strip (which GDAL must hold decoded at once). A
// header that cannot be parsed is left to GDAL, which reports damage.

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// TIFF tags read here.
const (
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagCompression     = 259
	tagSamplesPerPixel = 277
	tagRowsPerStrip    = 278
	tagPlanarConfig    = 284
	tagTileWidth       = 322
	tagTileLength      = 323
)

// Parsing limits: more IFDs or entries than this is not an image we read
// further (GDAL will judge it).
const (
	maxIFDs       = 1024
	maxIFDEntries = 4096
)

// tiffIFD is what one image file directory declares.
type tiffIFD struct {
	width, height, spp, bps, compression, planar, rowsPerStrip, tileW, tileH uint64
	tiled                                                                    bool
}

// mulSat multiplies, saturating at MaxUint64.
func mulSat(vs ...uint64) uint64 {
	p := uint64(1)
	for _, v := range vs {
		if v != 0 && p > math.MaxUint64/v {
			return math.MaxUint64
		}
		p *= v
	}
	return p
}

// readTIFFIFDs lists the IFDs of a TIFF (classic or BigTIFF); nil when the
// file is not a TIFF or its header cannot be followed.
func readTIFFIFDs(ra io.ReaderAt, size int64) []tiffIFD {
	head := make([]byte, 16)
	if n, _ := ra.ReadAt(head, 0); n < 8 {
		return nil
	}
	var bo binary.ByteOrder
	switch string(head[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return nil
	}
	big := false
	var off uint64
	switch bo.Uint16(head[2:4]) {
	case 42:
		off = uint64(bo.Uint32(head[4:8]))
	case 43:
		big = true
		off = bo.Uint64(head[8:16])
	default:
		return nil
	}
	countSize, entrySize, inline := uint64(2), uint64(12), uint64(4)
	if big {
		countSize, entrySize, inline = 8, 20, 8
	}
	typeSize := map[uint16]uint64{3: 2, 4: 4, 16: 8}
	read := func(at, n uint64) []byte {
		if at >= uint64(size) || n > uint64(size)-at {
			return nil
		}
		b := make([]byte, n)
		if k, _ := ra.ReadAt(b, int64(at)); uint64(k) != n {
			return nil
		}
		return b
	}
	first := func(typ uint16, b []byte) uint64 {
		switch typ {
		case 3:
			return uint64(bo.Uint16(b))
		case 4:
			return uint64(bo.Uint32(b))
		default:
			return bo.Uint64(b)
		}
	}
	var out []tiffIFD
	seen := map[uint64]bool{}
	for off != 0 && len(out) < maxIFDs && !seen[off] {
		seen[off] = true
		cb := read(off, countSize)
		if cb == nil {
			return out
		}
		n := uint64(bo.Uint16(cb))
		if big {
			n = bo.Uint64(cb)
		}
		if n == 0 || n > maxIFDEntries {
			return out
		}
		entries := read(off+countSize, n*entrySize+inline)
		if entries == nil {
			return out
		}
		ifd := tiffIFD{spp: 1, bps: 1, compression: 1, planar: 1, rowsPerStrip: math.MaxUint32}
		for i := uint64(0); i < n; i++ {
			e := entries[i*entrySize : (i+1)*entrySize]
			tag, typ := bo.Uint16(e[0:2]), bo.Uint16(e[2:4])
			ts, ok := typeSize[typ]
			if !ok {
				continue
			}
			count := uint64(bo.Uint32(e[4:8]))
			val := e[8:12]
			if big {
				count, val = bo.Uint64(e[4:12]), e[12:20]
			}
			if count == 0 {
				continue
			}
			if mulSat(count, ts) > inline {
				// Out of line: only the first value is needed.
				at := uint64(bo.Uint32(val))
				if big {
					at = bo.Uint64(val)
				}
				if val = read(at, ts); val == nil {
					continue
				}
			}
			v := first(typ, val)
			switch tag {
			case tagImageWidth:
				ifd.width = v
			case tagImageLength:
				ifd.height = v
			case tagBitsPerSample:
				ifd.bps = v
			case tagCompression:
				ifd.compression = v
			case tagSamplesPerPixel:
				ifd.spp = v
			case tagRowsPerStrip:
				ifd.rowsPerStrip = v
			case tagPlanarConfig:
				ifd.planar = v
			case tagTileWidth:
				ifd.tileW, ifd.tiled = v, true
			case tagTileLength:
				ifd.tileH, ifd.tiled = v, true
			}
		}
		out = append(out, ifd)
		nb := entries[n*entrySize:]
		if big {
			off = bo.Uint64(nb)
		} else {
			off = uint64(bo.Uint32(nb))
		}
	}
	return out
}

// CheckTIFF refuses a TIFF whose declared sizes exceed the recipe's
// budgets (r.MaxMemory already lowered to the machine's memory).
func CheckTIFF(ra io.ReaderAt, size int64, r recipe.Recipe) error {
	for i, ifd := range readTIFFIFDs(ra, size) {
		what := "the image"
		if i > 0 {
			what = fmt.Sprintf("image %d of the file", i+1)
		}
		if ifd.width > math.MaxInt32 || ifd.height > math.MaxInt32 {
			return fault.Data(fault.BudgetExceeded, "%s declares %d x %d pixels, over GDAL's limit of %d per side; not attempted", what, ifd.width, ifd.height, math.MaxInt32)
		}
		if px := mulSat(ifd.width, ifd.height, ifd.spp); r.MaxPixels > 0 && px > uint64(r.MaxPixels) {
			return fault.Data(fault.BudgetExceeded, "%s declares %d x %d pixels x %d bands = %d, over the budget of %d; not attempted",
				what, ifd.width, ifd.height, ifd.spp, px, r.MaxPixels)
		}
		if r.MaxMemory <= 0 {
			continue
		}
		perBlock := uint64(r.MaxMemory / BlockShare)
		bytesPer := max((ifd.bps+7)/8, 1)
		inBlock := ifd.spp // samples of one block: all bands when pixel-interleaved
		if ifd.planar == 2 {
			inBlock = 1
		}
		var blk uint64
		var shape string
		if ifd.tiled {
			blk = mulSat(ifd.tileW, ifd.tileH, inBlock, bytesPer)
			shape = fmt.Sprintf("a tile of %d x %d pixels x %d samples", ifd.tileW, ifd.tileH, inBlock)
		} else {
			rows := min(ifd.rowsPerStrip, ifd.height)
			if ifd.compression == 1 {
				rows = 1 // GDAL reads an uncompressed strip line by line
			}
			blk = mulSat(ifd.width, rows, inBlock, bytesPer)
			shape = fmt.Sprintf("a strip of %d x %d pixels x %d samples", ifd.width, rows, inBlock)
		}
		if blk > perBlock {
			return fault.Data(fault.BudgetExceeded,
				"%s declares %s (%d bytes decoded at once), over the memory budget of %d bytes per block (1/%d of %d); not attempted: retile it (gdal_translate -co TILED=YES)",
				what, shape, blk, perBlock, BlockShare, r.MaxMemory)
		}
		if i == 0 {
			if err := CheckOutputTile(int64(ifd.spp), int64(bytesPer), r); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckOutputTile bounds the COG writer's tile buffer: one block of the
// output holds every band (pixel interleaving).
func CheckOutputTile(bands, bytesPerSample int64, r recipe.Recipe) error {
	if r.MaxMemory <= 0 {
		return nil
	}
	perBlock := uint64(r.MaxMemory / BlockShare)
	bs := uint64(r.BlockSize)
	if tile := mulSat(bs, bs, uint64(bands), uint64(bytesPerSample)); tile > perBlock {
		return fault.Data(fault.BudgetExceeded,
			"the raster declares %d bands: one %d x %d output tile of all of them is %d bytes, over the memory budget of %d bytes per block (1/%d of %d); not attempted: split the bands into several files",
			bands, bs, bs, tile, perBlock, BlockShare, r.MaxMemory)
	}
	return nil
}

// DeclaredTIFF is the work a TIFF declares in its header: width x height x
// samples per pixel of its first (full-resolution) image, read in Go
// without GDAL. ok is false when the file is not a TIFF or its header
// cannot be followed; the caller then knows only the bytes.
func DeclaredTIFF(ra io.ReaderAt, size int64) (pixelsBands int64, ok bool) {
	ifds := readTIFFIFDs(ra, size)
	if len(ifds) == 0 {
		return 0, false
	}
	p := mulSat(ifds[0].width, ifds[0].height, ifds[0].spp)
	if p > math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(p), true
}
