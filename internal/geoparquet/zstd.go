package geoparquet

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// ZSTD pages (docs/decisions/0086). arrow-go compresses pages with the
// pure-Go ZSTD of klauspost/compress, which has four speeds. libzstd's
// level 5 (lazy matching) wrote the WKB of 100k quadrilaterals in 27 %
// fewer bytes than the pure-Go default, at about its speed. arrow-go takes
// one codec per compression kind and process (compress.RegisterCodec), not
// one per writer, so the choice is process-wide: UseZSTD. This package
// stays pure Go; internal/gdal hands it GDAL's libzstd.

// ZSTDEncoder compresses one page into one standard ZSTD frame.
type ZSTDEncoder interface {
	// EncodeZSTD compresses src at level (libzstd's scale, 1 to 22) into
	// dst, which has room for ZSTD's bound of len(src), and returns the
	// frame's length; ok is false if it could not, and the page is then
	// compressed in Go instead.
	EncodeZSTD(dst, src []byte, level int) (n int, ok bool)
}

// UseZSTD makes enc compress every ZSTD page this process writes from now
// on; nil goes back to the pure-Go encoder. Reading always uses the
// pure-Go decoder. Levels keep their libzstd meaning either way: the
// pure-Go encoder maps 1–2, 3–5, 6–9 and 10–22 onto its four speeds, so
// the levels this writer picks (5) are its default speed.
func UseZSTD(enc ZSTDEncoder) {
	if enc == nil {
		zstdNative.Store(nil)
		return
	}
	zstdNative.Store(&enc)
}

// ZSTDEncoderInUse says whether pages now go to the encoder given to
// UseZSTD: one was given, and arrow-go's codec could be wrapped at init.
func ZSTDEncoderInUse() bool { return zstdWrapped && zstdNative.Load() != nil }

var (
	zstdNative  atomic.Pointer[ZSTDEncoder]
	zstdWrapped bool // the wrapper is arrow-go's ZSTD codec
)

// pureZSTD is arrow-go's own ZSTD codec: its decoder, its streams, and its
// encoder when no native one is in use.
type pureZSTD interface {
	compress.Codec
	compress.StreamingCodec
}

// zstdCodec is the ZSTD codec registered with arrow-go at init, before
// any goroutine can be writing: the registry is a plain map.
type zstdCodec struct{ pureZSTD }

func init() {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if p, ok := c.(pureZSTD); err == nil && ok {
		compress.RegisterCodec(compress.Codecs.Zstd, zstdCodec{p})
		zstdWrapped = true
	}
}

func (z zstdCodec) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// defaultZSTDLevel is libzstd's own default, the pure-Go default's match.
const defaultZSTDLevel = 3

func (z zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	enc := zstdNative.Load()
	if enc == nil {
		return z.pureZSTD.EncodeLevel(dst, src, level)
	}
	if level == compress.DefaultCompressionLevel {
		level = defaultZSTDLevel
	}
	if bound := int(z.CompressBound(int64(len(src)))); cap(dst) < bound {
		dst = make([]byte, bound)
	}
	if n, ok := (*enc).EncodeZSTD(dst[:cap(dst)], src, level); ok {
		return dst[:n]
	}
	return z.pureZSTD.EncodeLevel(dst, src, level)
}

// DecodeWithError lets arrow-go report a corrupt page as an error.
func (z zstdCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(z.pureZSTD, dst, src)
}

var _ compress.ErrorCodec = zstdCodec{}
