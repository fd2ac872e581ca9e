package cogcheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// synthCase is a file built by the test encoder, with what this package must
// say about it. When the reference script is installed, the script must agree,
// message for message.
type synthCase struct {
	name        string
	file        tFile
	mutate      func(t testing.TB, data []byte) []byte
	valid       bool     // verdict with the full check
	validQuick  *bool    // verdict without it, when different
	errs        []string // substrings expected among the errors (full check)
	warnings    int
	checkDetail func(t *testing.T, d Details)
}

func ptr[T any](v T) *T { return &v }

func synthCases() []synthCase {
	cog := goodCOG
	with := func(f func(*tFile)) tFile { c := cog(); f(&c); return c }
	return []synthCase{
		{name: "cog classic little-endian", file: cog(), valid: true,
			checkDetail: func(t *testing.T, d Details) {
				if d.Width != 1024 || d.Height != 1024 || !d.Tiled || d.Overviews != 1 || d.BigTIFF ||
					len(d.IFDOffsets) != 2 || len(d.DataOffsets) != 2 || !d.BlockLeaderSizeAsUint4 || !d.FullCheck {
					t.Errorf("details: %+v", d)
				}
			}},
		{name: "cog classic big-endian", file: with(func(f *tFile) { f.be = true }), valid: true,
			checkDetail: func(t *testing.T, d Details) {
				if !d.BigEndian {
					t.Errorf("BigEndian not reported")
				}
			}},
		{name: "cog BigTIFF", file: with(func(f *tFile) { f.big = true }), valid: true,
			checkDetail: func(t *testing.T, d Details) {
				if !d.BigTIFF {
					t.Errorf("BigTIFF not reported")
				}
			}},
		{name: "cog BigTIFF big-endian", file: with(func(f *tFile) { f.big, f.be = true, true }), valid: true},
		{name: "small striped without ghost", valid: true,
			file: tFile{images: []tImage{{w: 256, h: 256, th: 16}}}},
		{name: "striped 1024 wide is accepted (block width <= 1024)", valid: true, warnings: 1,
			file: tFile{images: []tImage{{w: 1024, h: 1024, th: 8}}}},
		{name: "striped 2048 wide is not tiled", warnings: 1,
			file: tFile{images: []tImage{{w: 2048, h: 256, th: 8}}},
			errs: []string{"The file is greater than 512xH or Wx512, but is not tiled"}},
		{name: "tiled without overviews", valid: true, warnings: 1,
			file: tFile{images: []tImage{{w: 1024, h: 1024, tw: 256, th: 256}}}},
		{name: "IFDs after data",
			file: tFile{ifdsAfterData: true, images: cog().images},
			errs: []string{"The offset of the main IFD should be 8. It is ",
				"The offset of the first block of the smallest overview should be after its IFD"}},
		{name: "main resolution data first",
			file: with(func(f *tFile) { f.dataOrder = []int{0, 1} }),
			errs: []string{"The offset of the first block of the main resolution image should be after the one of the overview of index 0"}},
		{name: "overviews data in wrong order",
			file: with(func(f *tFile) {
				f.images = append(f.images, tImage{w: 256, h: 256, tw: 256, th: 256, subfile: 1})
				f.dataOrder = []int{1, 2, 0}
			}),
			errs: []string{"The offset of the first block of overview of index 0 should be after the one of the overview of index 1"}},
		{name: "overview larger than main",
			file: with(func(f *tFile) { f.images[1].w, f.images[1].h = 2048, 2048 }),
			errs: []string{"First overview has larger dimension than main band"}},
		{name: "overviews by increasing size",
			file: with(func(f *tFile) {
				f.images[1].w, f.images[1].h = 256, 256
				f.images = append(f.images, tImage{w: 512, h: 512, tw: 512, th: 512, subfile: 1})
			}),
			errs: []string{"Overview of index 1 has larger dimension than overview of index 0"}},
		{name: "overview not tiled",
			file: tFile{images: []tImage{{w: 4096, h: 1024, tw: 512, th: 512}, {w: 2048, h: 512, th: 16, subfile: 1}}},
			errs: []string{"Overview of index 0 is not tiled"}},
		{name: "known incompatible edition",
			file: with(func(f *tFile) {
				f.ghost = strings.Replace(f.ghost, "KNOWN_INCOMPATIBLE_EDITION=NO", "KNOWN_INCOMPATIBLE_EDITION=YES", 1)
			}),
			errs: []string{"KNOWN_INCOMPATIBLE_EDITION=YES is declared in the file"}},
		{name: "ghost size does not match IFD position", file: cog(),
			mutate: func(t testing.TB, b []byte) []byte {
				copy(b[8+len("GDAL_STRUCTURAL_METADATA_SIZE="):], "000010")
				return b
			},
			errs: []string{"The offset of the main IFD should be 62. It is "}},
		{name: "bad block leader", file: cog(), validQuick: ptr(true),
			mutate: func(t testing.TB, b []byte) []byte {
				d := checkedDetails(t, b)
				b[d.DataOffsets[0]-4] ^= 0xFF
				return b
			},
			errs: []string{"Main resolution image: for block (0, 0), size in leader bytes is "}},
		{name: "bad block trailer", file: cog(), validQuick: ptr(true),
			mutate: func(t testing.TB, b []byte) []byte {
				d := checkedDetails(t, b)
				b[d.DataOffsets[1]+8] ^= 0xFF
				return b
			},
			errs: []string{"Overview 0: for block (0, 0), trailer bytes are invalid"}},
		{name: "tile offsets out of row-major order", file: cog(), validQuick: ptr(true),
			mutate: func(t testing.TB, b []byte) []byte {
				swapBlocks(t, b, firstIFD(b), 0, 1)
				return b
			},
			errs: []string{"Main resolution image: offset of block (1, 0) is smaller than previous block"}},
		{name: "masks are not overviews", valid: true,
			file: with(func(f *tFile) {
				f.images = []tImage{
					{w: 1024, h: 1024, tw: 512, th: 512},
					{w: 1024, h: 1024, tw: 512, th: 512, subfile: 4, photo: 4},
					{w: 512, h: 512, tw: 512, th: 512, subfile: 1},
					{w: 512, h: 512, tw: 512, th: 512, subfile: 5, photo: 4},
				}
			}),
			checkDetail: func(t *testing.T, d Details) {
				if d.Overviews != 1 || len(d.MaskIFDOffsets) != 2 {
					t.Errorf("overviews=%d masks=%v", d.Overviews, d.MaskIFDOffsets)
				}
			}},
		{name: "masks declared interleaved but are not", validQuick: ptr(true),
			file: with(func(f *tFile) {
				f.ghost = strings.Replace(f.ghost, "NO\n", "NO\nMASK_INTERLEAVED_WITH_IMAGERY=YES\n", 1)
				f.images = []tImage{
					{w: 1024, h: 1024, tw: 512, th: 512},
					{w: 1024, h: 1024, tw: 512, th: 512, subfile: 4, photo: 4},
				}
				f.dataOrder = []int{0, 1}
			}),
			warnings: 1,
			errs:     []string{"Mask of Main resolution image: for block (0, 0), offset is "}},
		{name: "IFD with another band count is not an overview", valid: true, warnings: 1,
			file: tFile{images: []tImage{
				{w: 1024, h: 1024, tw: 512, th: 512, spp: 3, photo: 2},
				{w: 512, h: 512, tw: 512, th: 512, subfile: 1},
			}}},
		{name: "block leader past end of file", file: cog(), validQuick: ptr(true),
			mutate: func(t testing.TB, b []byte) []byte {
				d := checkedDetails(t, b)
				return b[:d.DataOffsets[0]+2]
			},
			// Like the script, a trailer cut to zero bytes compares equal
			// (b"" == b""); the next block's leader is unreadable.
			errs: []string{"Main resolution image: for block (1, 0), leader bytes cannot be read"}},
	}
}

// checkedDetails runs Check on an intact file to learn its layout.
func checkedDetails(t testing.TB, b []byte) Details {
	t.Helper()
	rep, err := checkBytes(t, b, FullCheck(true))
	if err != nil || !rep.Valid() {
		t.Fatalf("fixture is not valid before mutation: %v %q", err, rep.Errors)
	}
	return rep.Details
}

func (c synthCase) build(t testing.TB) []byte {
	b := c.file.encode()
	if c.mutate != nil {
		b = c.mutate(t, b)
	}
	return b
}

func TestCheckSynthetic(t *testing.T) {
	t.Parallel()
	for _, c := range synthCases() {
		t.Run(c.name, func(t *testing.T) {
			data := c.build(t)
			rep, err := checkBytes(t, data, FullCheck(true))
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if rep.Valid() != c.valid {
				t.Errorf("valid=%v, want %v; errors %q", rep.Valid(), c.valid, rep.Errors)
			}
			for _, want := range c.errs {
				if !containsSub(rep.Errors, want) {
					t.Errorf("missing error %q in %q", want, rep.Errors)
				}
			}
			if len(rep.Warnings) != c.warnings {
				t.Errorf("warnings %q, want %d", rep.Warnings, c.warnings)
			}
			if c.checkDetail != nil {
				c.checkDetail(t, rep.Details)
			}
			quick, err := checkBytes(t, data) // Check defaults to no full check
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			wantQuick := c.valid
			if c.validQuick != nil {
				wantQuick = *c.validQuick
			}
			if quick.Valid() != wantQuick || quick.Details.FullCheck {
				t.Errorf("without full check: valid=%v, want %v; errors %q", quick.Valid(), wantQuick, quick.Errors)
			}
		})
	}
}

// TestAgreementSynthetic runs the reference script on the same files.
func TestAgreementSynthetic(t *testing.T) {
	t.Parallel()
	if why := refAvailable(); why != "" {
		t.Skip(why)
	}
	dir := t.TempDir()
	cases := synthCases()
	paths := make([]string, len(cases))
	for i, c := range cases {
		paths[i] = writeTemp(t, dir, fmt.Sprintf("synth%02d.tif", i), c.build(t))
	}
	refs := runRefBatch(t, paths)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertAgree(t, paths[i], true, refs) })
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// corruptCase derives a broken file from a valid one.
type corruptCase struct {
	name    string
	mutate  func(t testing.TB, b []byte) []byte
	notTIFF bool   // Check returns ErrNotTIFF
	err     string // else: substring expected among the errors ("" = only invalid)
	valid   bool   // the rare corruption GDAL and the script tolerate
	warn    string // substring expected among the warnings
}

func corruptCases() []corruptCase {
	le32 := func(b []byte, at int64, v uint32) { byteOrder(b).PutUint32(b[at:], v) }
	return []corruptCase{
		{name: "empty file", notTIFF: true, mutate: func(_ testing.TB, b []byte) []byte { return b[:0] }},
		{name: "truncated header", notTIFF: true, mutate: func(_ testing.TB, b []byte) []byte { return b[:5] }},
		{name: "wrong magic", notTIFF: true, mutate: func(_ testing.TB, b []byte) []byte { b[2] = 41; return b }},
		{name: "wrong byte-order mark", notTIFF: true, mutate: func(_ testing.TB, b []byte) []byte { b[0] = 'X'; return b }},
		{name: "not a TIFF at all", notTIFF: true,
			mutate: func(_ testing.TB, b []byte) []byte { return []byte("\x89PNG\r\n\x1a\n0000000000000000") }},
		{name: "truncated inside the main IFD", err: "cannot read the main IFD",
			mutate: func(_ testing.TB, b []byte) []byte { return b[:firstIFD(b)+20] }},
		{name: "truncated inside the ghost header", err: "cannot read the main IFD",
			mutate: func(_ testing.TB, b []byte) []byte { return b[:40] }},
		{name: "truncated data", err: "leader bytes cannot be read",
			mutate: func(_ testing.TB, b []byte) []byte { return b[:len(b)-30] }},
		{name: "main IFD offset past EOF", err: "cannot read the main IFD",
			mutate: func(_ testing.TB, b []byte) []byte { patchFirstIFD(b, uint64(len(b))+1000); return b }},
		{name: "main IFD offset zero", err: "cannot read the main IFD",
			mutate: func(_ testing.TB, b []byte) []byte { patchFirstIFD(b, 0); return b }},
		{name: "next IFD offset past EOF", valid: true, warn: "The IFD chain is broken",
			mutate: func(t testing.TB, b []byte) []byte {
				ifd := firstIFD(b)
				n := int64(byteOrder(b).Uint16(b[ifd:]))
				le32(b, ifd+2+n*12, uint32(len(b)+4096))
				return b
			}},
		{name: "IFD chain loops", valid: true, warn: "loops back",
			mutate: func(t testing.TB, b []byte) []byte {
				ifd := firstIFD(b)
				n := int64(byteOrder(b).Uint16(b[ifd:]))
				le32(b, ifd+2+n*12, uint32(ifd))
				return b
			}},
		{name: "tile offsets out of order", err: "offset of block (1, 0) is smaller than previous block",
			mutate: func(t testing.TB, b []byte) []byte { swapBlocks(t, b, firstIFD(b), 0, 1); return b }},
		{name: "tile offsets array outside the file", valid: true, warn: "its blocks are treated as absent",
			mutate: func(t testing.TB, b []byte) []byte {
				pos, _, _ := tagLoc(t, b, firstIFD(b), tagTileWidth)
				// Turn TileOffsets' value pointer (entry after TileLength) far away.
				le32(b, int64(pos)+24, 0x7FFFFFF0)
				return b
			}},
		{name: "zero tile width", err: "is not a readable image",
			mutate: func(t testing.TB, b []byte) []byte {
				pos, _, _ := tagLoc(t, b, firstIFD(b), tagTileWidth)
				le32(b, int64(pos), 0)
				return b
			}},
		{name: "huge entry count", err: "cannot read the main IFD",
			mutate: func(t testing.TB, b []byte) []byte {
				byteOrder(b).PutUint16(b[firstIFD(b):], 0xFFFF)
				return b
			}},
	}
}

func TestCheckCorrupt(t *testing.T) {
	t.Parallel()
	for _, c := range corruptCases() {
		t.Run(c.name, func(t *testing.T) {
			data := c.mutate(t, goodCOG().encode())
			rep, err := checkBytes(t, data, FullCheck(true))
			if c.notTIFF {
				if !errors.Is(err, ErrNotTIFF) {
					t.Fatalf("want ErrNotTIFF, got %v (report %q)", err, rep.Errors)
				}
				return
			}
			if err != nil {
				t.Fatalf("structural damage must be reported, not returned: %v", err)
			}
			if rep.Valid() != c.valid {
				t.Errorf("valid=%v, want %v; errors %q", rep.Valid(), c.valid, rep.Errors)
			}
			if c.err != "" && !containsSub(rep.Errors, c.err) {
				t.Errorf("missing error %q in %q", c.err, rep.Errors)
			}
			if c.warn != "" && !containsSub(rep.Warnings, c.warn) {
				t.Errorf("missing warning %q in %q", c.warn, rep.Warnings)
			}
		})
	}
}

func TestAgreementCorrupt(t *testing.T) {
	t.Parallel()
	if why := refAvailable(); why != "" {
		t.Skip(why)
	}
	dir := t.TempDir()
	cases := corruptCases()
	paths := make([]string, len(cases))
	for i, c := range cases {
		paths[i] = writeTemp(t, dir, fmt.Sprintf("corrupt%02d.tif", i), c.mutate(t, goodCOG().encode()))
	}
	refs := runRefBatch(t, paths)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { assertAgree(t, paths[i], false, refs) })
	}
}

// Every prefix of a valid COG is checked without panic, and the only Go
// error is ErrNotTIFF for prefixes too short to hold a header.
func TestTruncationSweep(t *testing.T) {
	t.Parallel()
	for _, f := range []tFile{goodCOG(), {big: true, be: true, ghost: cogGhost, leaderTrailer: true, images: goodCOG().images}} {
		full := f.encode()
		for n := 0; n <= len(full); n++ {
			rep, err := checkBytes(t, full[:n], FullCheck(true))
			if err != nil && !errors.Is(err, ErrNotTIFF) {
				t.Fatalf("len %d: unexpected error %v", n, err)
			}
			if err == nil && n < len(full) && rep.Valid() && n < int(rep.Details.HeadersSize) {
				t.Errorf("len %d: a file cut inside its headers was judged valid", n)
			}
		}
	}
}

// A failing reader is an error, not a verdict.
func TestReaderError(t *testing.T) {
	t.Parallel()
	data := goodCOG().encode()
	boom := errors.New("boom")
	r := readerFunc(func(p []byte, off int64) (int, error) {
		if off > 100 {
			return 0, boom
		}
		return bytes.NewReader(data).ReadAt(p, off)
	})
	if _, err := Check(r, int64(len(data)), FullCheck(true)); !errors.Is(err, boom) {
		t.Fatalf("want reader error, got %v", err)
	}
}

type readerFunc func(p []byte, off int64) (int, error)

func (f readerFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

func TestCheckFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeTemp(t, dir, "cog.tif", goodCOG().encode())
	rep, err := CheckFile(path)
	if err != nil || !rep.Valid() || !rep.Details.FullCheck {
		t.Fatalf("CheckFile: %v %q full=%v", err, rep.Errors, rep.Details.FullCheck)
	}
	if _, err := CheckFile(dir + "/missing.tif"); err == nil {
		t.Fatal("missing file: no error")
	}

	// Overviews in a sidecar .ovr are an error, as in the script.
	noOvr := writeTemp(t, dir, "plain.tif", tFile{images: []tImage{{w: 1024, h: 1024, tw: 256, th: 256}}}.encode())
	writeTemp(t, dir, "plain.tif.ovr", []byte("not read"))
	rep, err = CheckFile(noOvr)
	if err != nil || rep.Valid() || !containsSub(rep.Errors, "Overviews found in external .ovr file") || len(rep.Warnings) != 0 {
		t.Fatalf("external .ovr: %v errors=%q warnings=%q", err, rep.Errors, rep.Warnings)
	}
}
