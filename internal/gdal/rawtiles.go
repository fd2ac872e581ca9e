package gdal

// Raw tile decoding for the fidelity check. Decoding the output is most of
// the check's cost, and most of that (measured with perf on a 12000²
// Float32 COG: 1.3 of 1.8 CPU seconds) is not the decompressor but
// libtiff's floating-point predictor, which reverses its byte shuffle one
// byte at a time through a scratch buffer it allocates per row. So the
// check decodes a single-band output's tiles itself: it reads each tile's
// bytes at the offsets GDAL reports, decompresses them with GDAL's own
// decompressor (libzstd, zlib) and reverses the TIFF predictor (2:
// horizontal differencing, 3: floating point) in Go, then compares with the
// source. A tile that decodes to other values than the source's, or not at
// all, is read again through GDAL (GDALReadBlock), whose verdict stands:
// this decoder can only make the check faster, never fail a good output.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <gdal.h>
#include <cpl_compressor.h>

static int gm_decompress(const CPLCompressor *c, const void *in, size_t n, void *out, size_t *outn) {
	void *o = out;
	return c->pfnFunc(in, n, &o, outn, NULL, c->user_data) ? 1 : 0;
}
static int gm_band_type_ok(GDALRasterBandH b) {
	return !GDALDataTypeIsComplex(GDALGetRasterDataType(b));
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"github.com/airbusgeo/godal"
)

// rawTiles reads and decodes the full-resolution tiles of a single-band
// tiled GeoTIFF from its file.
type rawTiles struct {
	f            *os.File
	decompressor *C.CPLCompressor
	predictor    int // 1 none, 2 horizontal, 3 floating point
	px           int // bytes per sample
	tileW, tileH int
	tilesX       int
	offsets      []int64 // tile ty*tilesX+tx
	sizes        []int64
}

// rawDecompressors: TIFF compression (GDAL's COMPRESSION item) to the id
// of GDAL's decompressor for it (cpl_compressor.h). TIFF's DEFLATE is a
// zlib stream.
var rawDecompressors = map[string]string{"ZSTD": "zstd", "DEFLATE": "zlib"}

// openRawTiles returns the raw reader of the band b of the GeoTIFF at
// path, or nil when the file is one it does not decode (another
// compression or predictor, big-endian, bit-packed or complex samples,
// a missing tile): the check then decodes every tile through GDAL.
func openRawTiles(path string, ds *godal.Dataset, b godal.Band) *rawTiles {
	if !hostLittleEndian || len(ds.Bands()) != 1 || C.gm_band_type_ok(bandHandle(b)) == 0 {
		return nil
	}
	is := godal.Domain("IMAGE_STRUCTURE")
	id, ok := rawDecompressors[ds.Metadata("COMPRESSION", is)]
	if !ok || b.Metadata("NBITS", is) != "" {
		return nil
	}
	predictor := 1
	if p := ds.Metadata("PREDICTOR", is); p != "" {
		predictor, _ = strconv.Atoi(p)
	}
	px := int(C.GDALGetDataTypeSizeBytes(C.GDALGetRasterDataType(bandHandle(b))))
	switch {
	case predictor == 1, predictor == 2 && (px == 1 || px == 2 || px == 4 || px == 8):
	case predictor == 3 && (px == 2 || px == 4 || px == 8):
	default:
		return nil
	}
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	dec := C.CPLGetDecompressor(cid)
	if dec == nil {
		return nil
	}
	st := b.Structure()
	tilesX := (st.SizeX + st.BlockSizeX - 1) / st.BlockSizeX
	tilesY := (st.SizeY + st.BlockSizeY - 1) / st.BlockSizeY
	r := &rawTiles{decompressor: dec, predictor: predictor, px: px, tileW: st.BlockSizeX, tileH: st.BlockSizeY, tilesX: tilesX,
		offsets: make([]int64, tilesX*tilesY), sizes: make([]int64, tilesX*tilesY)}
	tiff := godal.Domain("TIFF")
	for ty := range tilesY {
		for tx := range tilesX {
			off, err1 := strconv.ParseInt(b.Metadata(fmt.Sprintf("BLOCK_OFFSET_%d_%d", tx, ty), tiff), 10, 64)
			size, err2 := strconv.ParseInt(b.Metadata(fmt.Sprintf("BLOCK_SIZE_%d_%d", tx, ty), tiff), 10, 64)
			if err1 != nil || err2 != nil || off <= 0 || size <= 0 {
				return nil // a sparse tile: GDAL makes it up
			}
			r.offsets[ty*tilesX+tx], r.sizes[ty*tilesX+tx] = off, size
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	var hdr [2]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:]) != "II" {
		f.Close()
		return nil
	}
	r.f = f
	return r
}

func (r *rawTiles) Close() {
	if r != nil && r.f != nil {
		r.f.Close()
	}
}

// rawScratch is one decoder's buffers.
type rawScratch struct{ raw, tile, row []byte }

func (r *rawTiles) scratch() *rawScratch {
	n := r.tileW * r.tileH * r.px
	return &rawScratch{tile: make([]byte, n), row: make([]byte, r.tileW*r.px)}
}

// decode decodes tile (tx, ty) into s.tile (row-major, tileW samples a
// row, little-endian); it reports what went wrong.
func (r *rawTiles) decode(tx, ty int, s *rawScratch) error {
	i := ty*r.tilesX + tx
	size := int(r.sizes[i])
	if cap(s.raw) < size {
		s.raw = make([]byte, size)
	}
	raw := s.raw[:size]
	if _, err := r.f.ReadAt(raw, r.offsets[i]); err != nil {
		return err
	}
	n := C.size_t(len(s.tile))
	if C.gm_decompress(r.decompressor, unsafe.Pointer(&raw[0]), C.size_t(size), unsafe.Pointer(&s.tile[0]), &n) == 0 {
		return fmt.Errorf("tile %d,%d does not decompress", tx, ty)
	}
	if int(n) != len(s.tile) {
		return fmt.Errorf("tile %d,%d decompresses to %d bytes, want %d", tx, ty, n, len(s.tile))
	}
	rowBytes := r.tileW * r.px
	for y := range r.tileH {
		row := s.tile[y*rowBytes : (y+1)*rowBytes]
		switch r.predictor {
		case 2:
			undoHorizontal(row, r.px)
		case 3:
			undoFloatingPoint(row, s.row, r.px)
		}
	}
	return nil
}

// undoHorizontal reverses TIFF predictor 2 on one row of one-sample
// pixels: each sample was stored as its difference from the previous one,
// modulo its width.
func undoHorizontal(row []byte, px int) {
	switch px {
	case 1:
		var acc byte
		for i, v := range row {
			acc += v
			row[i] = acc
		}
	case 2:
		var acc uint16
		for i := 0; i+2 <= len(row); i += 2 {
			acc += binary.LittleEndian.Uint16(row[i:])
			binary.LittleEndian.PutUint16(row[i:], acc)
		}
	case 4:
		var acc uint32
		for i := 0; i+4 <= len(row); i += 4 {
			acc += binary.LittleEndian.Uint32(row[i:])
			binary.LittleEndian.PutUint32(row[i:], acc)
		}
	case 8:
		var acc uint64
		for i := 0; i+8 <= len(row); i += 8 {
			acc += binary.LittleEndian.Uint64(row[i:])
			binary.LittleEndian.PutUint64(row[i:], acc)
		}
	}
}

// undoFloatingPoint reverses TIFF predictor 3 (libtiff fpAcc) on one row
// of one-sample pixels: the row's bytes were differenced one from the
// previous, after a shuffle that put the most significant byte of every
// sample first (plane 0), then the next, and so on. tmp holds a row.
//
// Rather than one running sum over the whole row, then the unshuffle (two
// passes, each a chain of dependent additions), each plane gets its own
// running sum, started at the sum of the planes before it: px independent
// chains in one pass that writes the samples.
func undoFloatingPoint(row, tmp []byte, px int) {
	copy(tmp, row)
	wc := len(row) / px
	var acc [8]byte
	for k := 1; k < px; k++ {
		acc[k] = acc[k-1] + byteSum(tmp[(k-1)*wc:k*wc])
	}
	switch px {
	case 2:
		p0, p1 := tmp[:wc], tmp[wc:2*wc]
		a0, a1 := acc[0], acc[1]
		for i := range wc {
			a0 += p0[i]
			a1 += p1[i]
			binary.LittleEndian.PutUint16(row[2*i:], uint16(a0)<<8|uint16(a1))
		}
	case 4:
		p0, p1, p2, p3 := tmp[:wc], tmp[wc:2*wc], tmp[2*wc:3*wc], tmp[3*wc:4*wc]
		a0, a1, a2, a3 := acc[0], acc[1], acc[2], acc[3]
		for i := range wc {
			a0 += p0[i]
			a1 += p1[i]
			a2 += p2[i]
			a3 += p3[i]
			binary.LittleEndian.PutUint32(row[4*i:], uint32(a0)<<24|uint32(a1)<<16|uint32(a2)<<8|uint32(a3))
		}
	case 8:
		for i := range wc {
			var v uint64
			for k := range 8 {
				acc[k] += tmp[k*wc+i]
				v = v<<8 | uint64(acc[k])
			}
			binary.LittleEndian.PutUint64(row[8*i:], v)
		}
	}
}

// byteSum is the sum of p's bytes modulo 256, eight bytes at a time: the
// even and odd bytes of each word are added into 16-bit lanes, folded
// before a lane can overflow into the next.
func byteSum(p []byte) byte {
	const evens = 0x00ff00ff00ff00ff
	var sum byte
	i := 0
	for i+8 <= len(p) {
		var lanes uint64
		// 128 words add at most 128 x 510 < 65536 to a lane.
		for n := 0; n < 128 && i+8 <= len(p); n, i = n+1, i+8 {
			w := binary.LittleEndian.Uint64(p[i:])
			lanes += w&evens + (w>>8)&evens
		}
		sum += byte(lanes + lanes>>16 + lanes>>32 + lanes>>48)
	}
	for ; i < len(p); i++ {
		sum += p[i]
	}
	return sum
}

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
