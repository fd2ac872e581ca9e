package gdal

// Size: the raster fidelity check: the GDAL and raw-tile comparisons share its block readers.

// The fidelity check (docs/decisions/0012): before an output leaves the
// engine, it is opened again on its own and compared with the source.
// Compression is lossless, so a raster must hold the very same pixel values,
// nodata, georeferencing (CRS and geotransform, GCPs, RPCs) and masks, and
// its other properties are compared too (rasterprops.go); a vector layer
// the same features (null geometries included), the same attribute fields
// with the types the conversion maps them to, and its own layer name.
//
// Which error a difference is:
//   - SystemicError for pixels, nodata, geotransform, GCPs, RPCs, masks,
//     feature counts and fields. The source was read in full by the
//     conversion without an error, so the data at hand is what the source
//     holds; an output that differs from it was altered on our side (GDAL,
//     our options, the work disk). That is the engine's fault: the job
//     goes to the dead-letter queue and raises the alarm, and nothing is
//     staged.
//   - DataError InvalidCRS for a CRS that does not come back the same: a
//     GeoTIFF holds a CRS as GeoKeys, and a source CRS that GeoKeys cannot
//     express (an unusual projection, a custom datum) is a property of the
//     source that its owner can fix (assign the EPSG code, or reproject).
//   - DataError CorruptSource when the source cannot be read again.

/*
#cgo pkg-config: gdal
#include <gdal.h>

static CPLErr gm_read_rows(GDALRasterBandH b, int y, int w, int h, void *buf) {
	GDALDataType dt = GDALGetRasterDataType(b);
	return GDALRasterIO(b, GF_Read, 0, y, w, h, buf, w, h, dt, 0, 0);
}
static int gm_pixel_bytes(GDALRasterBandH b) {
	return GDALGetDataTypeSizeBytes(GDALGetRasterDataType(b));
}
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// checkStripBytes bounds one band's strip buffer in the raster check (one
// for the source, one for the output): a strip is as many whole rows as
// fit, and at most one output tile high.
const checkStripBytes = 32 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rasterFidelity compares the COG at dst with the source dataset src at
// full resolution, decoding the output on up to threads OS threads.
// nodata, when not "", is the recipe's nodata, which every output band must
// carry in place of the source's. stats counts the tiles the raw decoder
// (rawtiles.go) compared.
//
// orig is the source as opened when src is its reprojection (a warp
// VRT), else src: metadata domains are compared with it, since a warp
// carries only some of them.
//
// lossy, for a lossy output (JPEG, WEBP), holds the recipe's compression,
// quality and threshold: the pixels are then measured, not compared for
// equality (lossyPixels), and masks are measured as the alpha band they
// are in such an output.
func rasterFidelity(ctx context.Context, src, orig *godal.Dataset, dst, what, nodata string, threads int, rec *recorder, stats *rawCheck, lossy *recipe.LossyFidelity) (*recipe.Fidelity, error) {
	out, err := godal.Open(dst, godal.Drivers("GTiff"), godal.RasterOnly(), rec.opt())
	if err != nil {
		return nil, fault.Systemic("gdal.fidelity: reopen output", err)
	}
	defer out.Close()
	altered := func(format string, args ...any) error {
		return fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output differs from the source: %s", what, fmt.Sprintf(format, args...)))
	}
	ss, ost := src.Structure(), out.Structure()
	if ss.SizeX != ost.SizeX || ss.SizeY != ost.SizeY || ss.NBands != ost.NBands {
		return nil, altered("%d x %d x %d bands written as %d x %d x %d bands", ss.SizeX, ss.SizeY, ss.NBands, ost.SizeX, ost.SizeY, ost.NBands)
	}
	geoChecks, err := sameGeoreferencing(src, out, what, rec, altered)
	if err != nil {
		return nil, err
	}
	sb, ob := src.Bands(), out.Bands()
	for i := range sb {
		sdt, odt := sb[i].Structure().DataType, ob[i].Structure().DataType
		if sdt != odt {
			return nil, altered("band %d of type %s written as %s", i+1, sdt, odt)
		}
		sv, sok := sb[i].NoData()
		if nodata != "" {
			sv, _ = strconv.ParseFloat(nodata, 64)
			sok = true
		}
		ov, ook := ob[i].NoData()
		if sok != ook || (sok && sv != ov && !(math.IsNaN(sv) && math.IsNaN(ov))) {
			return nil, altered("band %d nodata %s written as %s", i+1, noDataText(sv, sok), noDataText(ov, ook))
		}
	}
	if lossy != nil {
		bands, err := lossyPixels(ctx, sb, ob, ss.SizeX, ss.SizeY, what)
		if err != nil {
			return nil, err
		}
		lossy.Bands = bands
		for _, b := range bands {
			if b.PSNR != nil && *b.PSNR < lossy.MinPSNR {
				return nil, fault.Data(fault.InvalidInput, "%s, band %d, keeps a PSNR of %.2f dB under %s at quality %d (largest difference %d), below the recipe's min_psnr_db %g: raise quality, lower min_psnr_db, or convert it losslessly (a rule for its glob)",
					what, b.Band, *b.PSNR, lossy.Compression, lossy.Quality, b.MaxAbsDiff, lossy.MinPSNR)
			}
		}
		checks := slices.Concat([]string{"pixels within min_psnr_db", "nodata"}, geoChecks, sameBandProperties(src, out, what, rec))
		if sameMetadata(orig, out, what, rec) {
			checks = append(checks, "metadata")
		}
		return &recipe.Fidelity{Checks: checks, Bands: ss.NBands, Pixels: int64(ss.SizeX) * int64(ss.SizeY), Lossy: lossy}, nil
	}
	// Decoding the output is most of the check's cost: a single-band
	// output is decoded tile by tile on several handles of the file at once
	// (a GDAL dataset is not safe for concurrent use; separate handles are).
	decoders := []godal.Band{ob[0]}
	if len(ob) == 1 {
		for range max(threads, 1) - 1 {
			h, err := godal.Open(dst, godal.Drivers("GTiff"), godal.RasterOnly(), rec.opt())
			if err != nil {
				return nil, fault.Systemic("gdal.fidelity: reopen output", err)
			}
			defer h.Close()
			decoders = append(decoders, h.Bands()[0])
		}
	}
	var sums []uint32
	raw := openRawTiles(dst, out, ob[0])
	defer raw.Close()
	if raw != nil && raw.tileW*raw.tileH*raw.px <= checkStripBytes && ss.SizeX*min(raw.tileH, ss.SizeY)*raw.px <= 2*checkStripBytes {
		// The strip of source rows is the only large buffer here, so it
		// may take what samePixels gives its two.
		var sum uint32
		sum, *stats, err = samePixelsRaw(ctx, sb[0], raw, decoders, ss.SizeX, ss.SizeY, what)
		sums = []uint32{sum}
	} else {
		sums, err = samePixels(ctx, sb, ob, decoders, ss.SizeX, ss.SizeY, what)
	}
	if err != nil {
		return nil, err
	}
	maskCheck, err := sameMasks(ctx, src, out, nodata != "", what, rec, altered)
	if err != nil {
		return nil, err
	}
	checks := slices.Concat([]string{"pixels", "nodata"}, geoChecks, []string{maskCheck}, sameBandProperties(src, out, what, rec))
	if sameMetadata(orig, out, what, rec) {
		checks = append(checks, "metadata")
	}
	f := &recipe.Fidelity{
		Checks: checks,
		Bands:  ss.NBands, Pixels: int64(ss.SizeX) * int64(ss.SizeY),
	}
	if len(sums) <= recipe.MaxBandChecksums {
		for _, s := range sums {
			f.BandChecksums = append(f.BandChecksums, fmt.Sprintf("%08x", s))
		}
	}
	return f, nil
}

// lossyPixels measures, band by band at full resolution, how far the
// 8-bit output's values are from the source's: the largest absolute
// difference, the mean squared error and the PSNR (10·log10(255²/MSE);
// nil when MSE is 0). Rows are read in strips within checkStripBytes.
func lossyPixels(ctx context.Context, sb, ob []godal.Band, w, h int, what string) ([]recipe.LossyBand, error) {
	rows := max(1, min(h, checkStripBytes/max(1, w)))
	sbuf, obuf := make([]byte, w*rows), make([]byte, w*rows)
	out := make([]recipe.LossyBand, len(sb))
	for i := range sb {
		var sumSq uint64
		maxDiff := 0
		for y := 0; y < h; y += rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := min(rows, h-y)
			if C.gm_read_rows(bandHandle(sb[i]), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&sbuf[0])) != C.CE_None {
				return nil, fault.Data(fault.CorruptSource, "%s, band %d, cannot be read again at rows %d–%d: %s", what, i+1, y, y+n-1, lastErrorMsg())
			}
			if C.gm_read_rows(bandHandle(ob[i]), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&obuf[0])) != C.CE_None {
				return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output's band %d cannot be read at rows %d–%d: %s", what, i+1, y, y+n-1, lastErrorMsg()))
			}
			for k := range w * n {
				d := int(sbuf[k]) - int(obuf[k])
				if d < 0 {
					d = -d
				}
				maxDiff = max(maxDiff, d)
				sumSq += uint64(d * d)
			}
		}
		b := recipe.LossyBand{Band: i + 1, MaxAbsDiff: maxDiff, MSE: float64(sumSq) / (float64(w) * float64(h))}
		if b.MSE > 0 {
			psnr := 10 * math.Log10(255*255/b.MSE)
			b.PSNR = &psnr
		}
		out[i] = b
	}
	return out, nil
}

// samePixels reads every band of the source and of the output in strips
// of whole rows, compares them byte for byte and returns each band's
// CRC-32C of its pixels in row-major order.
func samePixels(ctx context.Context, sb, ob, decoders []godal.Band, w, h int, what string) ([]uint32, error) {
	sums := make([]uint32, len(sb))
	widest := 1
	for _, b := range sb {
		widest = max(widest, int(C.gm_pixel_bytes(bandHandle(b))))
	}
	ost := ob[0].Structure()
	tileW, tileH := ost.BlockSizeX, ost.BlockSizeY
	rows := max(1, min(tileH, checkStripBytes/max(1, w*widest), h))
	// A single band read in strips of whole tile rows has its tiles decoded
	// straight into our buffer (GDALReadBlock), about twice as fast as
	// RasterIO through the block cache. A multi-band COG's tile holds every
	// band (pixel interleaved): RasterIO decodes it once and the block cache
	// serves the other bands.
	tilesX := (w + tileW - 1) / tileW
	byTile := len(ob) == 1 && rows == min(tileH, h)
	sbuf := make([]byte, w*rows*widest)
	// A single-band source whose blocks tile the strip (strips start and
	// end on block rows) is read block by block too, straight from the
	// driver rather than through the block cache.
	var src *blockReader
	if len(sb) == 1 {
		src = newBlockReader(sb[0], w, h, rows, widest)
	}
	obuf := make([]byte, w*rows*widest)
	if byTile {
		obuf = make([]byte, tilesX*tileW*tileH*widest)
	}
	for y := 0; y < h; y += rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(rows, h-y)
		for i := range sb {
			px := int(C.gm_pixel_bytes(bandHandle(sb[i])))
			size := w * n * px
			// The source and the output are two datasets: read them at the
			// same time.
			var srcErr string
			done := make(chan struct{})
			go func() {
				defer close(done)
				// GDAL's last error is per OS thread.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				srcErr = sourceRows(src, sb[i], y, w, n, sbuf)
				if srcErr == "" { // while the output is still being decoded
					sums[i] = crc32.Update(sums[i], castagnoli, sbuf[:size])
				}
			}()
			outErr := ""
			if byTile {
				outErr = readTiles(decoders, tilesX, y/tileH, obuf, tileW*tileH*px)
			} else if C.gm_read_rows(bandHandle(ob[i]), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&obuf[0])) != C.CE_None {
				outErr = lastErrorMsg() + " "
			}
			<-done
			if srcErr != "" {
				return nil, fault.Data(fault.CorruptSource, "%s, band %d, cannot be read again at rows %d–%d: %s", what, i+1, y, y+n-1, srcErr)
			}
			if outErr != "" {
				return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output's band %d cannot be read at rows %d–%d: %s", what, i+1, y, y+n-1, outErr))
			}
			same := true
			if byTile {
				for r := 0; r < n && same; r++ {
					for tx := 0; tx < tilesX && same; tx++ {
						vw := min(tileW, w-tx*tileW) * px
						a := sbuf[(r*w+tx*tileW)*px:][:vw]
						b := obuf[(tx*tileW*tileH+r*tileW)*px:][:vw]
						same = bytes.Equal(a, b)
					}
				}
			} else {
				same = bytes.Equal(sbuf[:size], obuf[:size])
			}
			if !same {
				return nil, fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output differs from the source: band %d, rows %d–%d hold other pixel values", what, i+1, y, y+n-1))
			}
		}
	}
	return sums, nil
}

// blockReader reads rows of a single-band raster block by block into a
// row-major buffer.
type blockReader struct {
	band         godal.Band
	bw, bh, w, h int
	px           int
	block        []byte
}

// newBlockReader reads band block by block when its blocks tile strips of
// rows rows (strips start and end on block rows) and a block fits in
// checkStripBytes; else nil (read through the block cache).
func newBlockReader(band godal.Band, w, h, rows, px int) *blockReader {
	st := band.Structure()
	if st.BlockSizeY <= 0 || rows%st.BlockSizeY != 0 || int64(st.BlockSizeX)*int64(st.BlockSizeY)*int64(px) > checkStripBytes {
		return nil
	}
	return &blockReader{band: band, bw: st.BlockSizeX, bh: st.BlockSizeY, w: w, h: h, px: px,
		block: make([]byte, st.BlockSizeX*st.BlockSizeY*px)}
}

// sourceRows reads rows y..y+n-1 of band into buf: through src when there
// is one, else through GDAL's block cache. It returns GDAL's message on
// failure, "" on success.
func sourceRows(src *blockReader, band godal.Band, y, w, n int, buf []byte) string {
	if src != nil {
		return src.rows(y, n, buf)
	}
	if C.gm_read_rows(bandHandle(band), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&buf[0])) != C.CE_None {
		return lastErrorMsg()
	}
	return ""
}

// rows reads rows y..y+n-1 (y and n multiples of the block height, or n
// reaching the last row) into buf; it returns GDAL's message on failure.
func (r *blockReader) rows(y, n int, buf []byte) string {
	for by := y / r.bh; by*r.bh < y+n; by++ {
		for bx := 0; bx*r.bw < r.w; bx++ {
			if C.GDALReadBlock(bandHandle(r.band), C.int(bx), C.int(by), unsafe.Pointer(&r.block[0])) != C.CE_None {
				return lastErrorMsg() + " "
			}
			vw := min(r.bw, r.w-bx*r.bw) * r.px
			for row := 0; row < r.bh && by*r.bh+row < min(y+n, r.h); row++ {
				dst := ((by*r.bh+row-y)*r.w + bx*r.bw) * r.px
				copy(buf[dst:dst+vw], r.block[row*r.bw*r.px:])
			}
		}
	}
	return ""
}

// readTiles decodes the tiles of tile row ty of a single-band output into
// buf (tile tx at tx*tileBytes), decoder k taking every len(decoders)-th
// tile; it returns the first error's message ("" when all were read).
func readTiles(decoders []godal.Band, tilesX, ty int, buf []byte, tileBytes int) string {
	errs := make([]string, len(decoders))
	var wg sync.WaitGroup
	for k, d := range decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for tx := k; tx < tilesX; tx += len(decoders) {
				if C.GDALReadBlock(bandHandle(d), C.int(tx), C.int(ty), unsafe.Pointer(&buf[tx*tileBytes])) != C.CE_None {
					errs[k] = lastErrorMsg() + " "
					return
				}
			}
		}()
	}
	wg.Wait()
	return strings.Join(errs, "")
}

// rawCheck counts what the raw decoder did in one check.
type rawCheck struct {
	tiles     int64 // decoded and found equal by the raw decoder
	fallbacks int64 // read again through GDAL
}

// samePixelsRaw is samePixels for a single-band output that raw decodes:
// tile row by tile row, the source strip is read (and its CRC-32C taken)
// on one thread while the decoders take the strip's tiles one at a time,
// decode each and compare it with the source once the strip is in.
// decoders are GDAL handles of the output's band, one per decoder, for
// the tiles raw does not vouch for.
func samePixelsRaw(ctx context.Context, sb godal.Band, raw *rawTiles, decoders []godal.Band, w, h int, what string) (uint32, rawCheck, error) {
	var sum uint32
	var stats rawCheck
	px, tileW, tileH := raw.px, raw.tileW, raw.tileH
	rows := min(tileH, h)
	sbuf := make([]byte, w*rows*px)
	src := newBlockReader(sb, w, h, rows, px)
	scratch := make([]*rawScratch, len(decoders))
	for k := range scratch {
		scratch[k] = raw.scratch()
	}
	for ty := 0; ty*tileH < h; ty++ {
		if err := ctx.Err(); err != nil {
			return 0, stats, err
		}
		y := ty * tileH
		n := min(tileH, h-y)
		var srcErr string
		srcIn := make(chan struct{})
		go func() {
			defer close(srcIn)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			srcErr = sourceRows(src, sb, y, w, n, sbuf)
			if srcErr == "" {
				sum = crc32.Update(sum, castagnoli, sbuf[:w*n*px])
			}
		}()
		var next atomic.Int64
		outErrs := make([]string, len(decoders))
		differs := make([]bool, len(decoders))
		var tiles, fallbacks atomic.Int64
		var wg sync.WaitGroup
		for k := range decoders {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				s := scratch[k]
				for {
					tx := int(next.Add(1) - 1)
					if tx*tileW >= w {
						return
					}
					decErr := raw.decode(tx, ty, s)
					<-srcIn
					if srcErr != "" {
						return
					}
					vw := min(tileW, w-tx*tileW) * px
					same := func() bool {
						for r := range n {
							if !bytes.Equal(sbuf[(r*w+tx*tileW)*px:][:vw], s.tile[r*tileW*px:][:vw]) {
								return false
							}
						}
						return true
					}
					if decErr == nil && same() {
						tiles.Add(1)
						continue
					}
					// GDAL decides: read the tile through it.
					fallbacks.Add(1)
					if msg := gdalBlock(decoders[k], tx, ty, s.tile); msg != "" {
						outErrs[k] = msg
						return
					}
					if !same() {
						differs[k] = true
						return
					}
				}
			})
		}
		wg.Wait()
		<-srcIn
		stats.tiles += tiles.Load()
		stats.fallbacks += fallbacks.Load()
		if srcErr != "" {
			return 0, stats, fault.Data(fault.CorruptSource, "%s, band 1, cannot be read again at rows %d–%d: %s", what, y, y+n-1, srcErr)
		}
		if e := strings.Join(outErrs, ""); e != "" {
			return 0, stats, fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output's band 1 cannot be read at rows %d–%d: %s", what, y, y+n-1, e))
		}
		if slices.Contains(differs, true) {
			return 0, stats, fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output differs from the source: band 1, rows %d–%d hold other pixel values", what, y, y+n-1))
		}
	}
	return sum, stats, nil
}

// gdalBlock decodes block (bx, by) of b through GDAL into buf (which
// holds a whole block); it returns GDAL's message on failure. The caller
// holds its OS thread: GDAL's last error is per thread.
func gdalBlock(b godal.Band, bx, by int, buf []byte) string {
	if C.GDALReadBlock(bandHandle(b), C.int(bx), C.int(by), unsafe.Pointer(&buf[0])) != C.CE_None {
		return lastErrorMsg() + " "
	}
	return ""
}

// sameGeoTransform: the GeoTIFF tags hold the six terms as doubles, so
// they come back exactly; a relative 1e-12 absorbs only the last-bit
// rounding of GDAL's pixel-is-point half-pixel shift.
func sameGeoTransform(a, b [6]float64) bool {
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		scale := math.Max(math.Abs(a[i]), math.Abs(b[i]))
		if math.Abs(a[i]-b[i]) > 1e-12*scale {
			return false
		}
	}
	return true
}

// sameCRS compares two CRSs as PROJ does (OSRIsSame: equivalent, axis
// order of geographic CRSs aside).
func sameCRS(srcWKT, outWKT, what string) error {
	if srcWKT == outWKT {
		return nil
	}
	if srcWKT == "" || outWKT == "" {
		return fault.Data(fault.InvalidCRS, "%s: its CRS does not survive in the GeoTIFF (source %q, output %q)", what, short(srcWKT), short(outWKT))
	}
	a, err := godal.NewSpatialRefFromWKT(srcWKT)
	if err != nil {
		return fault.DataWrap(fault.InvalidCRS, err, "%s: its CRS cannot be read again", what)
	}
	defer a.Close()
	b, err := godal.NewSpatialRefFromWKT(outWKT)
	if err != nil {
		return fault.Systemic("gdal.fidelity", fmt.Errorf("%s: the output's CRS cannot be read: %w", what, err))
	}
	defer b.Close()
	if !a.IsSame(b) {
		return fault.Data(fault.InvalidCRS,
			"%s: its CRS cannot be stored exactly as GeoTIFF keys (it comes back as %s); assign an EPSG CRS (gdal_edit.py -a_srs EPSG:…) or reproject the source",
			what, short(outWKT))
	}
	return nil
}

func short(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func noDataText(v float64, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprint(v)
}

func lastErrorMsg() string { return C.GoString(C.CPLGetLastErrorMsg()) }
