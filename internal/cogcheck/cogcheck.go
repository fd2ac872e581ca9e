// Package cogcheck validates the structure of Cloud Optimized GeoTIFFs in
// pure Go.
//
// It mirrors the rules, messages and error/warning split of GDAL's
// validate_cloud_optimized_geotiff.py (GDAL 3.6), including the way GDAL's
// GTiff driver decides which IFDs are overviews and masks, so that a file
// the script accepts is accepted here and one it rejects is rejected here.
// See Check for what is checked.
package cogcheck

// Size: the COG rules, checked in order over one parsed file.

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

// checker holds one run of check. Each step records the script's findings
// in rep; a step returns errVerdict when the file's verdict is reached and
// the remaining steps must not run (the report then stands as is), or any
// other error for a failing reader.
type checker struct {
	rd   *reader
	size int64
	cfg  config
	big  bool
	rep  Report
	main image
	ovrs []image
}

// errVerdict stops the check early with the report as it stands.
var errVerdict = errors.New("cogcheck: verdict reached")

func (c *checker) fail(format string, args ...any) {
	c.rep.Errors = append(c.rep.Errors, fmt.Sprintf(format, args...))
}

func (c *checker) warn(msg string) { c.rep.Warnings = append(c.rep.Warnings, msg) }

// final records an error that ends the check.
func (c *checker) final(format string, args ...any) error {
	c.fail(format, args...)
	return errVerdict
}

func check(r io.ReaderAt, size int64, cfg config) (Report, error) {
	if size < 0 {
		return Report{}, errors.New("cogcheck.Check: negative size")
	}
	rd := &reader{r: r, size: size}
	h, err := parseHeader(rd)
	if err != nil {
		return Report{}, err
	}
	rd.bo, rd.big = h.order, h.bigTIFF
	c := &checker{rd: rd, size: size, cfg: cfg, big: h.bigTIFF}
	c.rep.Details.BigTIFF = h.bigTIFF
	c.rep.Details.BigEndian = h.order == binary.BigEndian
	steps := []func() error{
		func() error { return c.scanDirectories(h.firstIFD) },
		c.loadImages,
		c.describe,
		c.checkTiling,
		c.checkGhostArea,
		c.checkOverviewIFDs,
		c.checkDataOrder,
		c.checkBlocks,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			if errors.Is(err, errVerdict) {
				return c.rep, nil
			}
			return c.rep, err
		}
	}
	return c.rep, nil
}

// scanDirectories walks the IFD chain like GDAL's ScanDirectories and keeps
// the main image, its overviews and their internal masks.
func (c *checker) scanDirectories(first int64) error {
	mainIFD, err := readIFD(c.rd, first)
	if err != nil {
		if ie := (ioError{}); errors.As(err, &ie) {
			return ie
		}
		return c.final("Invalid file : cannot read the main IFD: %v", err)
	}
	if mainIFD.bad != "" {
		return c.final("Invalid file : the main IFD at offset %d is not a readable image: %s", mainIFD.offset, mainIFD.bad)
	}
	c.main = image{d: mainIFD}
	seen := map[int64]bool{mainIFD.offset: true}
	next := mainIFD.next
	for n := 1; next != 0; n++ {
		if n >= maxIFDs {
			c.warn(fmt.Sprintf("More than %d IFDs; the rest of the IFD chain was not read", maxIFDs))
			break
		}
		if seen[next] {
			c.warn(fmt.Sprintf("The IFD chain loops back to offset %d; the rest of the chain was ignored", next))
			break
		}
		seen[next] = true
		d, err := readIFD(c.rd, next)
		if err != nil {
			if ie := (ioError{}); errors.As(err, &ie) {
				return ie
			}
			if errors.Is(err, errBudget) {
				return c.final("%v", err)
			}
			// GDAL stops scanning at an unreadable directory but still opens
			// the file; so the verdict is left to the other checks.
			c.warn(fmt.Sprintf("The IFD chain is broken (%v); the rest of the chain was ignored", err))
			break
		}
		next = d.next
		if d.bad != "" {
			continue // GDAL fails to open it and skips it
		}
		c.classify(d)
	}
	return nil
}

// classify files a readable IFD after the main one as an overview, the main
// image's mask or an overview's mask, as GDAL's GTiff driver does; anything
// else is ignored.
func (c *checker) classify(d *ifd) {
	mainIFD := c.main.d
	reduced := d.subfileType&subfileReducedImage != 0
	isMask := d.subfileType&subfileMask != 0
	switch {
	case reduced && !isMask && len(c.ovrs) < 30:
		if d.spp == mainIFD.spp {
			c.ovrs = append(c.ovrs, image{d: d})
		}
	case isMask && !reduced && c.main.mask == nil:
		if (d.spp == 1 || d.spp == mainIFD.spp) && d.width == mainIFD.width && d.height == mainIFD.height && d.isByte() {
			c.main.mask = d
		}
	case reduced && isMask:
		if !d.isByte() {
			return
		}
		for i := range c.ovrs {
			o := &c.ovrs[i]
			if o.mask == nil && o.d.width == d.width && o.d.height == d.height && (d.spp == 1 || d.spp == mainIFD.spp) {
				o.mask = d
				return
			}
		}
	}
}

// loadImages reads the tag values (block offsets and counts) of the IFDs
// kept by scanDirectories.
func (c *checker) loadImages() error {
	used := []*ifd{c.main.d, c.main.mask}
	for _, o := range c.ovrs {
		used = append(used, o.d, o.mask)
	}
	for _, d := range used {
		if d == nil {
			continue
		}
		if err := d.load(c.rd); err != nil {
			if errors.Is(err, errBudget) {
				return c.final("%v", err)
			}
			return err
		}
		if d.warn != "" {
			c.warn(d.warn)
		}
	}
	return nil
}

// describe fills the Details of the structure found.
func (c *checker) describe() error {
	det, mainIFD := &c.rep.Details, c.main.d
	det.Width, det.Height = int(mainIFD.width), int(mainIFD.height)
	det.Bands = int(mainIFD.spp)
	det.Tiled = mainIFD.tiled
	det.BlockWidth, det.BlockHeight = int(mainIFD.blockW), int(mainIFD.blockH)
	det.Overviews = len(c.ovrs)
	if c.main.mask != nil {
		det.MaskIFDOffsets = append(det.MaskIFDOffsets, c.main.mask.offset)
	}
	for _, o := range c.ovrs {
		if o.mask != nil {
			det.MaskIFDOffsets = append(det.MaskIFDOffsets, o.mask.offset)
		}
	}
	return nil
}

// checkTiling is the script's first checks: overviews in an external .ovr,
// tiling of images over 512 px and the recommendation to have overviews.
func (c *checker) checkTiling() error {
	mainIFD := c.main.d
	ovrCount := len(c.ovrs)
	if ovrCount == 0 && c.cfg.extOvr != nil && c.cfg.extOvr() {
		c.fail("Overviews found in external .ovr file. They should be internal")
		ovrCount = -1 // GDAL would count the external overviews: no "no overviews" warning
	}
	if mainIFD.width > 512 || mainIFD.height > 512 {
		if mainIFD.blockW == mainIFD.width && mainIFD.blockW > 1024 {
			c.fail("The file is greater than 512xH or Wx512, but is not tiled")
		}
		if ovrCount == 0 {
			c.warn("The file is greater than 512xH or Wx512, it is recommended " +
				"to include internal overviews")
		}
	}
	return nil
}

// checkGhostArea reads GDAL's structural metadata (the "ghost area" right
// after the header) when the main IFD does not follow the header directly,
// and checks that the main IFD comes right after it.
func (c *checker) checkGhostArea() error {
	det, mainOffset := &c.rep.Details, c.main.d.offset
	if mainOffset == 8 || mainOffset == 16 {
		return nil
	}
	expected := int64(8)
	if c.big {
		expected = 16
	}
	const prefix = "GDAL_STRUCTURAL_METADATA_SIZE="
	pattern := fmt.Sprintf("%s%06d bytes\n", prefix, 0)
	got, err := c.rd.readUpTo(expected, int64(len(pattern)))
	if err != nil {
		return err
	}
	checkPos := true
	if len(got) == len(pattern) && strings.HasPrefix(string(got), prefix) {
		// Python's int() accepts surrounding blanks and a sign.
		n, perr := strconv.Atoi(strings.TrimSpace(string(got[len(prefix) : len(prefix)+6])))
		if perr != nil || n < 0 {
			c.fail("Invalid GDAL_STRUCTURAL_METADATA_SIZE value %q", got[len(prefix):len(prefix)+6])
			checkPos = false
		} else {
			extra, err := c.rd.readUpTo(expected+int64(len(pattern)), int64(n))
			if err != nil {
				return err
			}
			md := string(extra)
			det.StructuralMetadata = md
			det.BlockOrderRowMajor = strings.Contains(md, "BLOCK_ORDER=ROW_MAJOR")
			det.BlockLeaderSizeAsUint4 = strings.Contains(md, "BLOCK_LEADER=SIZE_AS_UINT4")
			det.BlockTrailerLast4BytesRepeated = strings.Contains(md, "BLOCK_TRAILER=LAST_4_BYTES_REPEATED")
			det.MaskInterleavedWithImagery = strings.Contains(md, "MASK_INTERLEAVED_WITH_IMAGERY=YES")
			det.KnownIncompatibleEdition = strings.Contains(md, "KNOWN_INCOMPATIBLE_EDITION=YES")
			if det.KnownIncompatibleEdition {
				c.fail("KNOWN_INCOMPATIBLE_EDITION=YES is declared in the file")
			}
			expected += int64(len(pattern) + n)
			expected += expected % 2 // IFD offset starts on a 2-byte boundary
		}
	}
	if checkPos && expected != mainOffset {
		c.fail("The offset of the main IFD should be %d. It is %d instead", expected, mainOffset)
	}
	return nil
}

// checkOverviewIFDs checks overviews by decreasing size, tiled, with their
// IFDs at increasing offsets.
func (c *checker) checkOverviewIFDs() error {
	mainIFD := c.main.d
	ifdOffsets := []int64{mainIFD.offset}
	for i, o := range c.ovrs {
		if i == 0 {
			if o.d.width > mainIFD.width || o.d.height > mainIFD.height {
				c.fail("First overview has larger dimension than main band")
			}
		} else if p := c.ovrs[i-1].d; o.d.width > p.width || o.d.height > p.height {
			c.fail("Overview of index %d has larger dimension than overview of index %d", i, i-1)
		}
		if o.d.blockW == o.d.width && o.d.blockW > 1024 {
			c.fail("Overview of index %d is not tiled", i)
		}
		ifdOffsets = append(ifdOffsets, o.d.offset)
		if last, prev := ifdOffsets[len(ifdOffsets)-1], ifdOffsets[len(ifdOffsets)-2]; last < prev {
			if i == 0 {
				c.fail("The offset of the IFD for overview of index %d is %d, "+
					"whereas it should be greater than the one of the main "+
					"image, which is at byte %d", i, last, prev)
			} else {
				c.fail("The offset of the IFD for overview of index %d is %d, "+
					"whereas it should be greater than the one of index %d, "+
					"which is at byte %d", i, last, i-1, prev)
			}
		}
	}
	c.rep.Details.IFDOffsets = ifdOffsets
	return nil
}

// checkDataOrder checks that the smallest overview's first block follows its
// IFD and that data is placed smallest overview first, full resolution last.
func (c *checker) checkDataOrder() error {
	det := &c.rep.Details
	dataOffsets := []int64{firstBlockOffset(c.main.d)}
	for _, o := range c.ovrs {
		dataOffsets = append(dataOffsets, firstBlockOffset(o.d))
	}
	det.DataOffsets = dataOffsets
	det.HeadersSize = dataOffsets[0]
	for _, v := range dataOffsets {
		det.HeadersSize = min(det.HeadersSize, v)
	}
	if det.HeadersSize == 0 {
		det.HeadersSize = c.size
	}
	ifdOffsets := det.IFDOffsets
	if last := dataOffsets[len(dataOffsets)-1]; last != 0 && last < ifdOffsets[len(ifdOffsets)-1] {
		if len(c.ovrs) > 0 {
			c.fail("The offset of the first block of the smallest overview " +
				"should be after its IFD")
		} else {
			c.fail("The offset of the first block of the image should be after its IFD")
		}
	}
	for i := len(dataOffsets) - 2; i > 0; i-- {
		if dataOffsets[i] != 0 && dataOffsets[i] < dataOffsets[i+1] {
			c.fail("The offset of the first block of overview of index %d should "+
				"be after the one of the overview of index %d", i-1, i)
		}
	}
	if len(dataOffsets) >= 2 && dataOffsets[0] != 0 && dataOffsets[0] < dataOffsets[1] {
		c.fail("The offset of the first block of the main resolution image "+
			"should be after the one of the overview of index %d", len(c.ovrs)-1)
	}
	return nil
}

// checkBlocks is the script's full check, run only with FullCheck and when
// the structural metadata declares a block layout: per block of band 1 and
// of the internal masks, row-major order, size leader, repeated trailer and
// masks interleaved with imagery.
func (c *checker) checkBlocks() error {
	det := &c.rep.Details
	full := c.cfg.fullCheck != nil && *c.cfg.fullCheck
	if !full || !(det.BlockOrderRowMajor || det.BlockLeaderSizeAsUint4 ||
		det.BlockTrailerLast4BytesRepeated || det.MaskInterleavedWithImagery) {
		return nil
	}
	det.FullCheck = true
	fc := fullChecker{rd: c.rd, det: det, fail: c.fail}
	if err := fc.band("Main resolution image", c.main.d, c.main.mask, det.MaskInterleavedWithImagery); err != nil {
		return err
	}
	if c.main.mask != nil && c.main.mask.spp == 1 { // GMF_PER_DATASET
		if err := fc.band("Mask band of main resolution image", c.main.mask, nil, false); err != nil {
			return err
		}
	}
	for i, o := range c.ovrs {
		if err := fc.band(fmt.Sprintf("Overview %d", i), o.d, o.mask, det.MaskInterleavedWithImagery); err != nil {
			return err
		}
		if o.mask != nil && o.mask.spp == 1 {
			if err := fc.band(fmt.Sprintf("Mask band of overview %d", i), o.mask, nil, false); err != nil {
				return err
			}
		}
	}
	return nil
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
