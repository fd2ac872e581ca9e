// Package cogcheck validates the structure of Cloud Optimized GeoTIFFs in
// pure Go.
//
// It mirrors the rules, messages and error/warning split of GDAL's
// validate_cloud_optimized_geotiff.py (GDAL 3.6), including the way GDAL's
// GTiff driver decides which IFDs are overviews and masks, so that a file
// the script accepts is accepted here and one it rejects is rejected here.
// See Check for what is checked.
package cogcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrNotTIFF is returned (wrapped) when the input does not start with a TIFF
// or BigTIFF header.
var ErrNotTIFF = errors.New("cogcheck: not a TIFF file")

// Report is the outcome of a check. Errors make the file not a valid COG;
// Warnings are recommendations, as in the reference script.
type Report struct {
	Errors   []string
	Warnings []string
	Details  Details
}

// Valid reports whether no error was found.
func (r Report) Valid() bool { return len(r.Errors) == 0 }

// Details describes the structure found. Offsets lists hold the main image
// first, then the overviews in IFD-chain order.
type Details struct {
	Width, Height           int
	Bands                   int
	Tiled                   bool
	BlockWidth, BlockHeight int
	Overviews               int
	BigTIFF                 bool
	BigEndian               bool
	IFDOffsets              []int64 // main IFD, then one per overview
	DataOffsets             []int64 // offset of the first available block of band 1 per IFD, 0 if none
	MaskIFDOffsets          []int64 // internal mask IFDs recognised (main mask first if any)
	HeadersSize             int64   // smallest data offset (the script's "size of all IFD headers"); file size if no data

	// GDAL hidden structural metadata ("ghost area") after the header.
	StructuralMetadata             string // raw text; empty when absent
	BlockOrderRowMajor             bool
	BlockLeaderSizeAsUint4         bool
	BlockTrailerLast4BytesRepeated bool
	MaskInterleavedWithImagery     bool
	KnownIncompatibleEdition       bool

	FullCheck bool // whether block leaders/trailers/order were checked
}

type config struct {
	fullCheck *bool
	extOvr    func() bool
}

// Option configures Check and CheckFile.
type Option func(*config)

// FullCheck also reads block leaders/trailers and checks block order, like
// the script's --full-check=yes. Without this option Check does not (the
// script's "auto" for a remote file) and CheckFile does (its "auto" for a
// local file).
func FullCheck(on bool) Option { return func(c *config) { c.fullCheck = &on } }

// CheckFile checks the file at path. Besides the structure, it reports the
// script's error for overviews kept in an external .ovr file.
func CheckFile(path string, opts ...Option) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Report{}, err
	}
	on := true
	cfg := config{fullCheck: &on}
	cfg.extOvr = func() bool {
		for _, ext := range []string{".ovr", ".OVR"} {
			if fi, err := os.Stat(path + ext); err == nil && fi.Mode().IsRegular() {
				return true
			}
		}
		return false
	}
	for _, o := range opts {
		o(&cfg)
	}
	return check(f, st.Size(), cfg)
}

// Check validates the TIFF of the given size read through r.
//
// The returned error is only for a failing reader or an input that is not a
// TIFF/BigTIFF at all (errors.Is(err, ErrNotTIFF)); every structural problem
// (truncation, offsets outside the file, unreadable IFDs) is a Report error.
//
// The checks, in the script's order: overviews in an external .ovr (CheckFile
// only); tiling for images over 512 px; a warning when such an image has no
// overviews; the GDAL structural-metadata header and the position of the
// main IFD after it; overviews by decreasing size, tiled, with IFDs at
// increasing offsets; the smallest overview's first block after its IFD and
// data placed smallest overview first, full resolution last; and with
// FullCheck, per block of band 1 and of the internal masks: row-major order,
// size leader, repeated trailer, and masks interleaved with imagery, as
// declared by the structural metadata.
func Check(r io.ReaderAt, size int64, opts ...Option) (Report, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return check(r, size, cfg)
}

// image is an overview or main image with its optional internal mask.
type image struct {
	d    *ifd
	mask *ifd
}

func check(r io.ReaderAt, size int64, cfg config) (rep Report, err error) {
	if size < 0 {
		return rep, errors.New("cogcheck: negative size")
	}
	rd := &reader{r: r, size: size}
	h, err := parseHeader(rd)
	if err != nil {
		return rep, err
	}
	rd.bo, rd.big = h.order, h.bigTIFF
	rep.Details.BigTIFF = h.bigTIFF
	rep.Details.BigEndian = h.order == binary.BigEndian
	fail := func(format string, args ...any) { rep.Errors = append(rep.Errors, fmt.Sprintf(format, args...)) }

	// ---- Walk the IFD chain like GDAL's ScanDirectories.
	mainIFD, err := readIFD(rd, h.firstIFD)
	if err != nil {
		if ie := (ioError{}); errors.As(err, &ie) {
			return rep, ie
		}
		fail("Invalid file : cannot read the main IFD: %v", err)
		return rep, nil
	}
	if mainIFD.bad != "" {
		fail("Invalid file : the main IFD at offset %d is not a readable image: %s", mainIFD.offset, mainIFD.bad)
		return rep, nil
	}
	main := image{d: mainIFD}
	var ovrs []image
	seen := map[int64]bool{mainIFD.offset: true}
	next := mainIFD.next
	for n := 1; next != 0; n++ {
		if n >= maxIFDs {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("More than %d IFDs; the rest of the IFD chain was not read", maxIFDs))
			break
		}
		if seen[next] {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("The IFD chain loops back to offset %d; the rest of the chain was ignored", next))
			break
		}
		seen[next] = true
		d, err := readIFD(rd, next)
		if err != nil {
			if ie := (ioError{}); errors.As(err, &ie) {
				return rep, ie
			}
			if errors.Is(err, errBudget) {
				fail("%v", err)
				return rep, nil
			}
			// GDAL stops scanning at an unreadable directory but still opens
			// the file; so the verdict is left to the other checks.
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("The IFD chain is broken (%v); the rest of the chain was ignored", err))
			break
		}
		next = d.next
		if d.bad != "" {
			continue // GDAL fails to open it and skips it
		}
		reduced := d.subfileType&subfileReducedImage != 0
		isMask := d.subfileType&subfileMask != 0
		switch {
		case reduced && !isMask && len(ovrs) < 30:
			if d.spp == mainIFD.spp {
				ovrs = append(ovrs, image{d: d})
			}
		case isMask && !reduced && main.mask == nil:
			if (d.spp == 1 || d.spp == mainIFD.spp) && d.width == mainIFD.width && d.height == mainIFD.height && d.isByte() {
				main.mask = d
			}
		case reduced && isMask:
			if !d.isByte() {
				continue
			}
			for i := range ovrs {
				o := &ovrs[i]
				if o.mask == nil && o.d.width == d.width && o.d.height == d.height && (d.spp == 1 || d.spp == mainIFD.spp) {
					o.mask = d
					break
				}
			}
		}
	}

	used := []*ifd{main.d, main.mask}
	for _, o := range ovrs {
		used = append(used, o.d, o.mask)
	}
	for _, d := range used {
		if d == nil {
			continue
		}
		if err := d.load(rd); err != nil {
			if errors.Is(err, errBudget) {
				fail("%v", err)
				return rep, nil
			}
			return rep, err
		}
		if d.warn != "" {
			rep.Warnings = append(rep.Warnings, d.warn)
		}
	}

	det := &rep.Details
	det.Width, det.Height = int(mainIFD.width), int(mainIFD.height)
	det.Bands = int(mainIFD.spp)
	det.Tiled = mainIFD.tiled
	det.BlockWidth, det.BlockHeight = int(mainIFD.blockW), int(mainIFD.blockH)
	det.Overviews = len(ovrs)
	if main.mask != nil {
		det.MaskIFDOffsets = append(det.MaskIFDOffsets, main.mask.offset)
	}
	for _, o := range ovrs {
		if o.mask != nil {
			det.MaskIFDOffsets = append(det.MaskIFDOffsets, o.mask.offset)
		}
	}

	// ---- The script's checks, in its order.
	ovrCount := len(ovrs)
	if ovrCount == 0 && cfg.extOvr != nil && cfg.extOvr() {
		fail("Overviews found in external .ovr file. They should be internal")
		ovrCount = -1 // GDAL would count the external overviews: no "no overviews" warning
	}
	if mainIFD.width > 512 || mainIFD.height > 512 {
		if mainIFD.blockW == mainIFD.width && mainIFD.blockW > 1024 {
			fail("The file is greater than 512xH or Wx512, but is not tiled")
		}
		if ovrCount == 0 {
			rep.Warnings = append(rep.Warnings, "The file is greater than 512xH or Wx512, it is recommended "+
				"to include internal overviews")
		}
	}

	ifdOffsets := []int64{mainIFD.offset}
	if off := mainIFD.offset; off != 8 && off != 16 {
		expected := int64(8)
		if h.bigTIFF {
			expected = 16
		}
		const prefix = "GDAL_STRUCTURAL_METADATA_SIZE="
		pattern := fmt.Sprintf("%s%06d bytes\n", prefix, 0)
		got, err := rd.readUpTo(expected, int64(len(pattern)))
		if err != nil {
			return rep, err
		}
		checkPos := true
		if len(got) == len(pattern) && strings.HasPrefix(string(got), prefix) {
			// Python's int() accepts surrounding blanks and a sign.
			n, perr := strconv.Atoi(strings.TrimSpace(string(got[len(prefix) : len(prefix)+6])))
			if perr != nil || n < 0 {
				fail("Invalid GDAL_STRUCTURAL_METADATA_SIZE value %q", got[len(prefix):len(prefix)+6])
				checkPos = false
			} else {
				extra, err := rd.readUpTo(expected+int64(len(pattern)), int64(n))
				if err != nil {
					return rep, err
				}
				md := string(extra)
				det.StructuralMetadata = md
				det.BlockOrderRowMajor = strings.Contains(md, "BLOCK_ORDER=ROW_MAJOR")
				det.BlockLeaderSizeAsUint4 = strings.Contains(md, "BLOCK_LEADER=SIZE_AS_UINT4")
				det.BlockTrailerLast4BytesRepeated = strings.Contains(md, "BLOCK_TRAILER=LAST_4_BYTES_REPEATED")
				det.MaskInterleavedWithImagery = strings.Contains(md, "MASK_INTERLEAVED_WITH_IMAGERY=YES")
				det.KnownIncompatibleEdition = strings.Contains(md, "KNOWN_INCOMPATIBLE_EDITION=YES")
				if det.KnownIncompatibleEdition {
					fail("KNOWN_INCOMPATIBLE_EDITION=YES is declared in the file")
				}
				expected += int64(len(pattern) + n)
				expected += expected % 2 // IFD offset starts on a 2-byte boundary
			}
		}
		if checkPos && expected != ifdOffsets[0] {
			fail("The offset of the main IFD should be %d. It is %d instead", expected, ifdOffsets[0])
		}
	}

	for i, o := range ovrs {
		if i == 0 {
			if o.d.width > mainIFD.width || o.d.height > mainIFD.height {
				fail("First overview has larger dimension than main band")
			}
		} else if p := ovrs[i-1].d; o.d.width > p.width || o.d.height > p.height {
			fail("Overview of index %d has larger dimension than overview of index %d", i, i-1)
		}
		if o.d.blockW == o.d.width && o.d.blockW > 1024 {
			fail("Overview of index %d is not tiled", i)
		}
		ifdOffsets = append(ifdOffsets, o.d.offset)
		if last, prev := ifdOffsets[len(ifdOffsets)-1], ifdOffsets[len(ifdOffsets)-2]; last < prev {
			if i == 0 {
				fail("The offset of the IFD for overview of index %d is %d, "+
					"whereas it should be greater than the one of the main "+
					"image, which is at byte %d", i, last, prev)
			} else {
				fail("The offset of the IFD for overview of index %d is %d, "+
					"whereas it should be greater than the one of index %d, "+
					"which is at byte %d", i, last, i-1, prev)
			}
		}
	}
	det.IFDOffsets = ifdOffsets

	dataOffsets := []int64{firstBlockOffset(mainIFD)}
	for _, o := range ovrs {
		dataOffsets = append(dataOffsets, firstBlockOffset(o.d))
	}
	det.DataOffsets = dataOffsets
	det.HeadersSize = dataOffsets[0]
	for _, v := range dataOffsets {
		det.HeadersSize = min(det.HeadersSize, v)
	}
	if det.HeadersSize == 0 {
		det.HeadersSize = size
	}
	if last := dataOffsets[len(dataOffsets)-1]; last != 0 && last < ifdOffsets[len(ifdOffsets)-1] {
		if len(ovrs) > 0 {
			fail("The offset of the first block of the smallest overview " +
				"should be after its IFD")
		} else {
			fail("The offset of the first block of the image should be after its IFD")
		}
	}
	for i := len(dataOffsets) - 2; i > 0; i-- {
		if dataOffsets[i] != 0 && dataOffsets[i] < dataOffsets[i+1] {
			fail("The offset of the first block of overview of index %d should "+
				"be after the one of the overview of index %d", i-1, i)
		}
	}
	if len(dataOffsets) >= 2 && dataOffsets[0] != 0 && dataOffsets[0] < dataOffsets[1] {
		fail("The offset of the first block of the main resolution image "+
			"should be after the one of the overview of index %d", len(ovrs)-1)
	}

	full := cfg.fullCheck != nil && *cfg.fullCheck
	if full && (det.BlockOrderRowMajor || det.BlockLeaderSizeAsUint4 ||
		det.BlockTrailerLast4BytesRepeated || det.MaskInterleavedWithImagery) {
		det.FullCheck = true
		fc := fullChecker{rd: rd, det: det, fail: fail}
		if err := fc.band("Main resolution image", main.d, main.mask, det.MaskInterleavedWithImagery); err != nil {
			return rep, err
		}
		if main.mask != nil && main.mask.spp == 1 { // GMF_PER_DATASET
			if err := fc.band("Mask band of main resolution image", main.mask, nil, false); err != nil {
				return rep, err
			}
		}
		for i, o := range ovrs {
			if err := fc.band(fmt.Sprintf("Overview %d", i), o.d, o.mask, det.MaskInterleavedWithImagery); err != nil {
				return rep, err
			}
			if o.mask != nil && o.mask.spp == 1 {
				if err := fc.band(fmt.Sprintf("Mask band of overview %d", i), o.mask, nil, false); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, nil
}

// firstBlockOffset is the script's get_block_offset: the offset of the first
// available block of band 1 in row-major order, 0 if none.
func firstBlockOffset(d *ifd) int64 {
	for id := range d.knownBlocks() {
		if off, _, ok := d.block(id); ok {
			return clampOffset(off)
		}
	}
	return 0
}

func clampOffset(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

type fullChecker struct {
	rd   *reader
	det  *Details
	fail func(string, ...any)
}

// band is the script's full_check_band for band 1 of d, with its mask when
// masks are declared interleaved with imagery.
func (fc fullChecker) band(name string, d, mask *ifd, interleaved bool) error {
	det := fc.det
	if !interleaved {
		mask = nil
	}
	if mask != nil && (mask.blockW != d.blockW || mask.blockH != d.blockH) {
		fc.fail("%s: mask block size is different from its imagery band", name)
		mask = nil
	}
	n := d.knownBlocks()
	if mask != nil {
		n = max(n, min(d.blocksPerBand(), mask.knownBlocks()))
	}
	bpr := d.blocksPerRow()
	var last int64
	for id := range n {
		x, y := id%bpr, id/bpr
		o, c, _ := d.block(id)
		off, count := clampOffset(o), clampOffset(c)
		if off > 0 {
			if det.BlockOrderRowMajor && off < last {
				fc.fail("%s: offset of block (%d, %d) is smaller than previous block", name, x, y)
			}
			if det.BlockLeaderSizeAsUint4 {
				b, err := fc.rd.readUpTo(off-4, 4)
				if err != nil {
					return err
				}
				if len(b) < 4 {
					// The script dies on struct.unpack here: the file is invalid.
					fc.fail("%s: for block (%d, %d), leader bytes cannot be read", name, x, y)
				} else if leader := int64(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24); leader != count {
					// "<I": the script reads the leader as little-endian whatever the file's byte order.
					fc.fail("%s: for block (%d, %d), size in leader bytes is %d instead of %d", name, x, y, leader, count)
				}
			}
			if det.BlockTrailerLast4BytesRepeated && count >= 4 {
				b, err := fc.rd.readUpTo(off+count-4, 8)
				if err != nil {
					return err
				}
				split := min(4, len(b))
				if !bytes.Equal(b[:split], b[split:]) {
					fc.fail("%s: for block (%d, %d), trailer bytes are invalid", name, x, y)
				}
			}
		}
		if mask != nil {
			mo, _, _ := mask.block(id)
			moff := clampOffset(mo)
			if off > 0 && moff > 0 {
				expected := off + count
				if det.BlockLeaderSizeAsUint4 {
					expected += 4
				}
				if det.BlockTrailerLast4BytesRepeated {
					expected += 4
				}
				if moff != expected {
					fc.fail("Mask of %s: for block (%d, %d), offset is %d, whereas %d was expected", name, x, y, moff, expected)
				}
			} else if off == 0 && moff > 0 {
				if det.BlockOrderRowMajor && moff < last {
					fc.fail("Mask of %s: offset of block (%d, %d) is smaller than previous block", name, x, y)
				}
				off = moff
			}
		}
		last = off
	}
	return nil
}
