package gdal

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/airbusgeo/godal"
)

// rawCOG writes a 700 x 300 single-band COG of type dt (256-pixel tiles,
// so partial tiles at the right and bottom) with the given compression
// and predictor, from values that exercise every byte of a sample.
func rawCOG(t *testing.T, dt godal.DataType, compress, predictor string) string {
	t.Helper()
	const w, h = 700, 300
	mem, err := godal.Create(godal.Memory, "", 1, dt, w, h)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	px := make([]float64, w*h)
	for i := range px {
		v := float64((i*7919)%65521) - 20000
		switch dt {
		case godal.Byte:
			v = float64(i*31%251) + float64(i/w%5)
		case godal.UInt16, godal.UInt32:
			v = math.Abs(v) * float64(1+i%3)
		case godal.Float32, godal.Float64:
			v = v/7 + math.Sin(float64(i))*1e-3
		}
		px[i] = v
	}
	if err := mem.Bands()[0].Write(0, 0, px, w, h); err != nil {
		t.Fatal(err)
	}
	if err := mem.SetGeoTransform([6]float64{500000, 10, 0, 5200000, 0, -10}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "raw.tif")
	out, err := mem.Translate(dst, []string{"-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=" + compress,
		"-co", "PREDICTOR=" + predictor, "-co", "OVERVIEWS=NONE", "-co", "SPARSE_OK=FALSE"})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// The raw decoder gives every tile, padding included, exactly as GDAL
// decodes it: each type, compression and predictor it accepts.
func TestRawTilesDecodeAsGDAL(t *testing.T) {
	types := []godal.DataType{godal.Byte, godal.UInt16, godal.Int16, godal.UInt32, godal.Int32, godal.Float32, godal.Float64}
	for _, dt := range types {
		predictors := []string{"NO", "STANDARD"}
		if dt == godal.Float32 || dt == godal.Float64 {
			predictors = append(predictors, "FLOATING_POINT")
		}
		for _, compress := range []string{"ZSTD", "DEFLATE"} {
			for _, predictor := range predictors {
				t.Run(fmt.Sprintf("%s_%s_%s", dt, compress, predictor), func(t *testing.T) {
					p := rawCOG(t, dt, compress, predictor)
					ds, err := godal.Open(p)
					if err != nil {
						t.Fatal(err)
					}
					defer ds.Close()
					b := ds.Bands()[0]
					raw := openRawTiles(p, ds, b)
					if raw == nil {
						t.Fatal("the raw decoder refuses this file")
					}
					defer raw.Close()
					s := raw.scratch()
					want := make([]byte, len(s.tile))
					st := b.Structure()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					for ty := 0; ty*st.BlockSizeY < st.SizeY; ty++ {
						for tx := 0; tx*st.BlockSizeX < st.SizeX; tx++ {
							if err := raw.decode(tx, ty, s); err != nil {
								t.Fatalf("tile %d,%d: %v", tx, ty, err)
							}
							if msg := gdalBlock(b, tx, ty, want); msg != "" {
								t.Fatal(msg)
							}
							if !bytes.Equal(s.tile, want) {
								t.Fatalf("tile %d,%d decodes otherwise than GDAL decodes it", tx, ty)
							}
						}
					}
				})
			}
		}
	}
}

// Files the raw decoder does not take (another compression, several
// bands) are checked through GDAL, tile by tile as before.
func TestRawTilesRefused(t *testing.T) {
	cases := map[string]string{
		"lzw":   rawFromDEM(t, "-of", "COG", "-co", "COMPRESS=LZW"),
		"bands": rawFromDEM(t, "-of", "COG", "-b", "1", "-b", "1", "-co", "COMPRESS=ZSTD"),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			ds, err := godal.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			if raw := openRawTiles(p, ds, ds.Bands()[0]); raw != nil {
				raw.Close()
				t.Fatal("the raw decoder takes it")
			}
		})
	}
}

func rawFromDEM(t *testing.T, args ...string) string {
	return rasterFrom(t, filepath.Join(t.TempDir(), "dem.tif"), args...)
}

// A conversion's check uses the raw decoder for a single-band output
// (the default recipe: ZSTD, predictor), and GDAL for a multi-band one.
func TestRawTilesUsedByTheCheck(t *testing.T) {
	single := convertOK(t, sample(t, "temperature_f32.tif").Path, fgbRecipe())[0]
	if single.Stats["fidelity_raw_tiles"] == 0 || single.Stats["fidelity_gdal_tiles"] != 0 {
		t.Errorf("single band: %d tiles compared by the raw decoder, %d through GDAL; want all raw",
			single.Stats["fidelity_raw_tiles"], single.Stats["fidelity_gdal_tiles"])
	}
	bands := rasterFrom(t, filepath.Join(t.TempDir(), "bands.tif"), "-b", "1", "-b", "1", "-co", "INTERLEAVE=PIXEL")
	multi := convertOK(t, bands, fgbRecipe())[0]
	if multi.Stats["fidelity_raw_tiles"] != 0 {
		t.Errorf("multi-band: %d tiles compared by the raw decoder", multi.Stats["fidelity_raw_tiles"])
	}
}

// The raw decoder can only speed the check up: a tile it decodes wrongly
// is read again through GDAL, and a good output still passes.
func TestRawCheckDefersToGDAL(t *testing.T) {
	src := writeEdgeTiles(t, filepath.Join(t.TempDir(), "f32.tif"))
	r := fgbRecipe()
	r.Predictor = "floating_point"
	out := convertOK(t, src, r)[0]
	sds, err := godal.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer sds.Close()
	ods, err := godal.Open(out.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer ods.Close()
	raw := openRawTiles(out.Path, ods, ods.Bands()[0])
	if raw == nil {
		t.Fatal("the raw decoder refuses the output")
	}
	defer raw.Close()
	raw.predictor = 2 // wrong: every tile decodes to other values
	sum, stats, err := samePixelsRaw(context.Background(), sds.Bands()[0], raw, []godal.Band{ods.Bands()[0]}, edgeTilesW, edgeTilesH, "test")
	if err != nil {
		t.Fatalf("a good output failed the check: %v", err)
	}
	tiles := int64(len(raw.offsets))
	if stats.tiles != 0 || stats.fallbacks != tiles {
		t.Errorf("%+v, want all %d tiles read again through GDAL", stats, tiles)
	}
	if got := fmt.Sprintf("%08x", sum); got != out.Fidelity.BandChecksums[0] {
		t.Errorf("checksum %s, the conversion's record %s", got, out.Fidelity.BandChecksums[0])
	}
}

// A COG's digests are taken while it is checked: the SHA-256 always, the
// MD5 when the engine is asked for it (a directory store's ETag); both
// are those of the file returned.
func TestOutputDigests(t *testing.T) {
	for _, withMD5 := range []bool{false, true} {
		t.Run(fmt.Sprint("md5=", withMD5), func(t *testing.T) {
			e := *engine
			e.cfg.OutputMD5 = withMD5
			outs, err := e.Convert(context.Background(), sample(t, "temperature_f32.tif").Path, t.TempDir(), fgbRecipe())
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(outs[0].Path)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%x", sha256.Sum256(b)); outs[0].SHA256 != want {
				t.Errorf("SHA256 %q, the file's %s", outs[0].SHA256, want)
			}
			want := ""
			if withMD5 {
				want = fmt.Sprintf("%x", md5.Sum(b))
			}
			if outs[0].MD5 != want {
				t.Errorf("MD5 %q, want %q", outs[0].MD5, want)
			}
		})
	}
}

// undoFloatingPoint against libtiff's fpAcc as written (one running sum
// over the row, then the unshuffle), and byteSum against a plain sum, on
// rows wide enough for byteSum's lane folding.
func TestUndoFloatingPointAsLibtiff(t *testing.T) {
	seed := uint32(7)
	next := func() byte { seed = seed*1664525 + 1013904223; return byte(seed >> 24) }
	for _, px := range []int{2, 4, 8} {
		for _, wc := range []int{1, 3, 256, 513, 2048, 4099} {
			row := make([]byte, wc*px)
			for i := range row {
				row[i] = next()
			}
			want := make([]byte, len(row))
			var acc byte
			sums := make([]byte, len(row))
			for i, v := range row {
				acc += v
				sums[i] = acc
			}
			for i := range wc {
				for b := range px {
					want[px*i+b] = sums[(px-b-1)*wc+i]
				}
			}
			var plain byte
			for _, v := range row {
				plain += v
			}
			if got := byteSum(row); got != plain {
				t.Fatalf("byteSum of %d bytes: %d, want %d", len(row), got, plain)
			}
			got := append([]byte(nil), row...)
			undoFloatingPoint(got, make([]byte, len(row)), px)
			if !bytes.Equal(got, want) {
				t.Fatalf("px %d, %d samples: not libtiff's result", px, wc)
			}
		}
	}
}

// BenchmarkUndoFloatingPoint: one 512-sample Float32 row.
func BenchmarkUndoFloatingPoint(b *testing.B) {
	row, tmp := make([]byte, 2048), make([]byte, 2048)
	for i := range row {
		row[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(row)))
	for b.Loop() {
		undoFloatingPoint(row, tmp, 4)
	}
}
