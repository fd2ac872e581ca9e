package cogcheck

// Size: the bounded TIFF reader cogcheck needs: header, IFDs and tag values.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// TIFF tags the validator reads.
const (
	tagNewSubfileType  = 254
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagStripOffsets    = 273
	tagSamplesPerPixel = 277
	tagRowsPerStrip    = 278
	tagStripByteCounts = 279
	tagPlanarConfig    = 284
	tagTileWidth       = 322
	tagTileLength      = 323
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
)

// NewSubfileType bits (TIFF 6.0, section 8).
const (
	subfileReducedImage = 1
	subfileMask         = 4
)

const (
	maxIFDs        = 4096     // IFDs walked before giving up (libtiff has no hard cap; this is a DoS guard)
	maxIFDEntries  = 65535    // entries per IFD; same sanity bound as libtiff
	maxArrayValues = 1 << 24  // strip/tile entries loaded in all (4 terapixels at 512x512 tiles): bounds memory
	maxIFDBytes    = 64 << 20 // IFD bytes parsed in all: bounds time on chains of overlapping IFDs
	maxGDALBlocks  = math.MaxInt32
)

// errOutOfBounds marks a structural problem: a read that falls outside the
// file. It becomes a Report error, never a Go error.
var errOutOfBounds = errors.New("read past end of file")

// ioError wraps a failure of the underlying io.ReaderAt, which Check returns
// as its error.
type ioError struct{ err error }

func (e ioError) Error() string { return "cogcheck: read: " + e.err.Error() }
func (e ioError) Unwrap() error { return e.err }

type reader struct {
	r    io.ReaderAt
	size int64
	bo   binary.ByteOrder
	big  bool // BigTIFF

	ifdBytes    int64 // IFD bytes parsed so far
	arrayValues int64 // strip/tile entries loaded so far
}

// errBudget is returned when a file needs more parsing than the validator
// allows itself.
var errBudget = errors.New("validator resource limit reached")

// readAt reads exactly n bytes at off, or fails with errOutOfBounds when the
// range is not inside the file.
func (rd *reader) readAt(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > rd.size || n > rd.size-off {
		return nil, errOutOfBounds
	}
	buf := make([]byte, n)
	got, err := rd.r.ReadAt(buf, off)
	if got == len(buf) {
		return buf, nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errOutOfBounds // the file is shorter than the size we were given
	}
	return nil, ioError{err}
}

// readUpTo reads at most n bytes at off, stopping at the end of the file, like
// VSIFReadL does.
func (rd *reader) readUpTo(off, n int64) ([]byte, error) {
	if off < 0 || off >= rd.size || n <= 0 {
		return nil, nil
	}
	n = min(n, rd.size-off)
	buf := make([]byte, n)
	got, err := rd.r.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, ioError{err}
	}
	return buf[:got], nil
}

// header is the parsed TIFF/BigTIFF file header.
type header struct {
	order    binary.ByteOrder
	bigTIFF  bool
	firstIFD int64
}

func parseHeader(rd *reader) (header, error) {
	b, err := rd.readUpTo(0, 16)
	if err != nil {
		return header{}, err
	}
	if len(b) < 8 {
		return header{}, fmt.Errorf("%w: file is %d bytes long", ErrNotTIFF, len(b))
	}
	var h header
	switch string(b[:2]) {
	case "II":
		h.order = binary.LittleEndian
	case "MM":
		h.order = binary.BigEndian
	default:
		return header{}, fmt.Errorf("%w: bad byte-order mark %q", ErrNotTIFF, b[:2])
	}
	switch h.order.Uint16(b[2:4]) {
	case 42:
		h.firstIFD = int64(h.order.Uint32(b[4:8]))
	case 43:
		if len(b) < 16 {
			return header{}, fmt.Errorf("%w: truncated BigTIFF header", ErrNotTIFF)
		}
		if h.order.Uint16(b[4:6]) != 8 || h.order.Uint16(b[6:8]) != 0 {
			return header{}, fmt.Errorf("%w: unsupported BigTIFF offset size", ErrNotTIFF)
		}
		v := h.order.Uint64(b[8:16])
		if v > math.MaxInt64 {
			v = math.MaxInt64
		}
		h.bigTIFF = true
		h.firstIFD = int64(v)
	default:
		return header{}, fmt.Errorf("%w: bad magic number %d", ErrNotTIFF, h.order.Uint16(b[2:4]))
	}
	return h, nil
}

// entry is one raw IFD entry.
type entry struct {
	tag, typ uint16
	count    uint64
	raw      []byte // the value/offset field (4 or 8 bytes)
}

// ifd is the subset of an image file directory the validator needs.
type ifd struct {
	offset int64
	next   int64

	subfileType uint32
	width       int64
	height      int64
	spp         int64
	bps         int64
	planar      int64 // 1 contig, 2 separate
	tiled       bool
	blockW      int64 // GDAL's block size: the tile, or full width x rows per strip
	blockH      int64
	offsets     []uint64 // strip/tile offsets, all bands
	counts      []uint64 // strip/tile byte counts, all bands

	// bad is set when the IFD could not be opened as an image by GDAL's
	// GTiff driver (missing required tags, absurd sizes, arrays outside the
	// file); it is then skipped as an overview/mask, or fatal for the main IFD.
	bad string
	// warn is a tolerated problem, reported when the IFD is used.
	warn string

	offEntry, cntEntry entry // the strip/tile arrays, read by load
	loaded             bool
}

func typeSize(t uint16) int64 {
	switch t {
	case 1, 2, 6, 7: // BYTE, ASCII, SBYTE, UNDEFINED
		return 1
	case 3, 8: // SHORT, SSHORT
		return 2
	case 4, 9, 11, 13: // LONG, SLONG, FLOAT, IFD
		return 4
	case 5, 10, 12, 16, 17, 18: // RATIONAL, SRATIONAL, DOUBLE, LONG8, SLONG8, IFD8
		return 8
	}
	return 0
}

// readIFD reads the directory at off. Structural failures (outside the file,
// zero entries) return errOutOfBounds-derived errors; the caller decides
// whether they are fatal.
func readIFD(rd *reader, off int64) (*ifd, error) {
	if off <= 0 {
		return nil, fmt.Errorf("IFD offset %d is invalid", off)
	}
	var (
		n        uint64
		entSize  int64 = 12
		cntSize  int64 = 2
		nextSize int64 = 4
	)
	if rd.big {
		entSize, cntSize, nextSize = 20, 8, 8
	}
	b, err := rd.readAt(off, cntSize)
	if err != nil {
		return nil, fmt.Errorf("IFD at offset %d: %w", off, err)
	}
	if rd.big {
		n = rd.bo.Uint64(b)
	} else {
		n = uint64(rd.bo.Uint16(b))
	}
	if n == 0 {
		return nil, fmt.Errorf("IFD at offset %d has no entries", off)
	}
	if n > maxIFDEntries {
		return nil, fmt.Errorf("IFD at offset %d declares %d entries", off, n)
	}
	rd.ifdBytes += int64(n) * entSize
	if rd.ifdBytes > maxIFDBytes {
		return nil, fmt.Errorf("IFD at offset %d: %w (%d MiB of IFDs)", off, errBudget, maxIFDBytes>>20)
	}
	body, err := rd.readAt(off+cntSize, int64(n)*entSize+nextSize)
	if err != nil {
		return nil, fmt.Errorf("IFD at offset %d (%d entries): %w", off, n, err)
	}
	d := &ifd{offset: off, spp: 1, bps: 1, planar: 1}
	if rd.big {
		v := rd.bo.Uint64(body[int64(n)*entSize:])
		d.next = int64(min(v, math.MaxInt64))
	} else {
		d.next = int64(rd.bo.Uint32(body[int64(n)*entSize:]))
	}
	ents := make(map[uint16]entry, 16)
	for i := range int64(n) {
		e := body[i*entSize : (i+1)*entSize]
		var en entry
		en.tag = rd.bo.Uint16(e[0:2])
		en.typ = rd.bo.Uint16(e[2:4])
		if rd.big {
			en.count = rd.bo.Uint64(e[4:12])
			en.raw = e[12:20]
		} else {
			en.count = uint64(rd.bo.Uint32(e[4:8]))
			en.raw = e[8:12]
		}
		if _, dup := ents[en.tag]; !dup && wantedTag(en.tag) { // libtiff keeps the first of duplicated tags
			ents[en.tag] = en
		}
	}
	d.fill(rd, ents)
	return d, nil
}

func wantedTag(tag uint16) bool {
	switch tag {
	case tagNewSubfileType, tagImageWidth, tagImageLength, tagBitsPerSample, tagStripOffsets,
		tagSamplesPerPixel, tagRowsPerStrip, tagStripByteCounts, tagPlanarConfig,
		tagTileWidth, tagTileLength, tagTileOffsets, tagTileByteCounts:
		return true
	}
	return false
}

// values decodes up to max integer values of an entry.
func (rd *reader) values(e entry, max uint64) ([]uint64, error) {
	sz := typeSize(e.typ)
	switch e.typ {
	case 1, 3, 4, 13, 16, 18, 6, 8, 9, 17: // integer types
	default:
		return nil, fmt.Errorf("tag %d has non-integer type %d", e.tag, e.typ)
	}
	if e.count > max {
		return nil, fmt.Errorf("tag %d has %d values", e.tag, e.count)
	}
	total := int64(e.count) * sz
	var data []byte
	inline := int64(4)
	if rd.big {
		inline = 8
	}
	if total <= inline {
		data = e.raw[:total]
	} else {
		var off int64
		if rd.big {
			off = int64(min(rd.bo.Uint64(e.raw), math.MaxInt64))
		} else {
			off = int64(rd.bo.Uint32(e.raw))
		}
		var err error
		if data, err = rd.readAt(off, total); err != nil {
			return nil, fmt.Errorf("tag %d values at offset %d: %w", e.tag, off, err)
		}
	}
	out := make([]uint64, e.count)
	for i := range out {
		p := data[int64(i)*sz:]
		switch sz {
		case 1:
			out[i] = uint64(p[0])
		case 2:
			out[i] = uint64(rd.bo.Uint16(p))
		case 4:
			out[i] = uint64(rd.bo.Uint32(p))
		case 8:
			out[i] = rd.bo.Uint64(p)
		}
	}
	return out, nil
}

func (d *ifd) fill(rd *reader, ents map[uint16]entry) {
	scalar := func(tag uint16) (uint64, bool, error) {
		e, ok := ents[tag]
		if !ok || e.count == 0 {
			return 0, false, nil
		}
		// Read only the first value; a 1-value read never leaves the entry.
		e1 := e
		e1.count = 1
		v, err := rd.values(e1, 1)
		if err != nil {
			return 0, true, err
		}
		return v[0], true, nil
	}
	fail := func(format string, args ...any) { d.bad = fmt.Sprintf(format, args...) }

	if v, ok, err := scalar(tagNewSubfileType); err == nil && ok {
		d.subfileType = uint32(v)
	}
	w, okW, errW := scalar(tagImageWidth)
	h, okH, errH := scalar(tagImageLength)
	switch {
	case errW != nil || errH != nil:
		fail("unreadable image dimensions")
		return
	case !okW:
		fail("missing required ImageWidth")
		return
	case !okH:
		fail("missing required ImageLength")
		return
	case w == 0 || h == 0 || w > math.MaxInt32 || h > math.MaxInt32:
		fail("invalid image size %dx%d", w, h)
		return
	}
	d.width, d.height = int64(w), int64(h)
	if v, ok, err := scalar(tagSamplesPerPixel); err == nil && ok {
		d.spp = int64(v)
	}
	if d.spp == 0 || d.spp > 65535 {
		fail("invalid SamplesPerPixel %d", d.spp)
		return
	}
	if v, ok, err := scalar(tagBitsPerSample); err == nil && ok {
		d.bps = int64(v)
	}
	if v, ok, err := scalar(tagPlanarConfig); err == nil && ok {
		d.planar = int64(v)
	}

	tw, okTW, _ := scalar(tagTileWidth)
	th, okTH, _ := scalar(tagTileLength)
	if okTW || okTH {
		if !okTW || !okTH {
			fail("incomplete tile dimensions")
			return
		}
		if tw == 0 || th == 0 || tw > math.MaxInt32 || th > math.MaxInt32 {
			fail("invalid tile size %dx%d", tw, th)
			return
		}
		d.tiled = true
		d.blockW, d.blockH = int64(tw), int64(th)
	} else {
		rps, ok, _ := scalar(tagRowsPerStrip)
		if !ok || rps == 0 || rps > uint64(d.height) {
			rps = uint64(d.height)
		}
		d.blockW, d.blockH = d.width, int64(rps)
	}

	bpr := ceilDiv(d.width, d.blockW)
	bpc := ceilDiv(d.height, d.blockH)
	if bpr > maxGDALBlocks/bpc {
		fail("too many blocks: %d x %d", bpr, bpc)
		return
	}
	nblocks := bpr * bpc
	if d.planar == 2 && nblocks > maxGDALBlocks/d.spp {
		fail("too many blocks: %d x %d x %d bands", bpr, bpc, d.spp)
		return
	}

	// libtiff stores Strip* and Tile* tags in the same fields; prefer the
	// ones matching the layout.
	offTag, cntTag := uint16(tagStripOffsets), uint16(tagStripByteCounts)
	if d.tiled {
		offTag, cntTag = tagTileOffsets, tagTileByteCounts
	}
	eo, ok := ents[offTag]
	if !ok {
		if d.tiled {
			eo, ok = ents[tagStripOffsets]
		} else {
			eo, ok = ents[tagTileOffsets]
		}
	}
	if !ok {
		fail("missing required StripOffsets/TileOffsets")
		return
	}
	ec, ok := ents[cntTag]
	if !ok {
		if d.tiled {
			ec, ok = ents[tagStripByteCounts]
		} else {
			ec, ok = ents[tagTileByteCounts]
		}
	}
	if !ok {
		fail("missing required StripByteCounts/TileByteCounts")
		return
	}
	d.offEntry, d.cntEntry = eo, ec
}

// load reads the strip/tile arrays of an IFD the validator uses. libtiff
// loads them lazily: GDAL opens the image even when they cannot be read, and
// then sees every block as absent. So does load, recording a warning. It
// returns reader failures and errBudget.
func (d *ifd) load(rd *reader) error {
	if d.loaded || d.bad != "" {
		return nil
	}
	d.loaded = true
	for _, e := range []entry{d.offEntry, d.cntEntry} {
		rd.arrayValues += int64(min(e.count, maxArrayValues+1))
	}
	if rd.arrayValues > maxArrayValues {
		return fmt.Errorf("IFD at offset %d: %w (%d strip/tile entries)", d.offset, errBudget, int64(maxArrayValues))
	}
	var err error
	if d.offsets, err = rd.values(d.offEntry, maxArrayValues); err == nil {
		d.counts, err = rd.values(d.cntEntry, maxArrayValues)
	}
	if err != nil {
		if ie := (ioError{}); errors.As(err, &ie) {
			return ie
		}
		d.offsets, d.counts = nil, nil
		d.warn = fmt.Sprintf("IFD at offset %d: %v; its blocks are treated as absent", d.offset, err)
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// blocksPerRow is the number of blocks in one row of the GDAL block grid.
func (d *ifd) blocksPerRow() int64 { return ceilDiv(d.width, d.blockW) }

// blocksPerBand is the number of blocks of one band.
func (d *ifd) blocksPerBand() int64 {
	return d.blocksPerRow() * ceilDiv(d.height, d.blockH)
}

// block returns the offset and byte count of block id of band 1, and whether
// GDAL considers it available (non-zero byte count, as IsBlockAvailable).
// Entries missing from short arrays read as zero, as libtiff pads them.
func (d *ifd) block(id int64) (off, count uint64, ok bool) {
	if id < 0 || id >= d.blocksPerBand() {
		return 0, 0, false
	}
	if id < int64(len(d.counts)) {
		count = d.counts[id]
	}
	if count == 0 {
		return 0, 0, false
	}
	if id < int64(len(d.offsets)) {
		off = d.offsets[id]
	}
	return off, count, true
}

// knownBlocks bounds iteration over band-1 blocks: past it every block is
// unavailable.
func (d *ifd) knownBlocks() int64 {
	return min(d.blocksPerBand(), int64(len(d.counts)))
}

// isByte reports whether GDAL would expose the IFD as GDT_Byte.
func (d *ifd) isByte() bool { return d.bps >= 1 && d.bps <= 8 }
