package recipe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path"
	"strings"

	"github.com/geomigrate/geomigrate/internal/formats"
)

// Kind is what a source holds.
type Kind string

const (
	Raster Kind = "raster"
	Vector Kind = "vector"
)

// Output is one file written by a conversion.
type Output struct {
	Path        string   `json:"path"`         // local file in the work dir
	Format      string   `json:"format"`       // FormatCOG, FormatGeoParquet, FormatFlatGeobuf
	Extension   string   `json:"extension"`    // ".tif", ".parquet", ".fgb"
	ContentType string   `json:"content_type"` // for the object's Content-Type
	Kind        Kind     `json:"kind"`
	Layer       string   `json:"layer,omitempty"`    // source layer (vector)
	Warnings    []string `json:"warnings,omitempty"` // non-fatal GDAL messages and repairs
	// OverviewResampling is the resampling the overviews were built with
	// (raster): the recipe's choice, or what "auto" decided for this input.
	OverviewResampling string           `json:"overview_resampling,omitempty"`
	Stats              map[string]int64 `json:"stats,omitempty"` // width, height, bands, overviews, features, repaired, bytes …
	// Fidelity is what the engine proved about this output against its
	// source (nil from an engine that proves nothing).
	Fidelity *Fidelity `json:"fidelity,omitempty"`
	// SHA256 and MD5 are the hex digests of the file at Path when the
	// engine took them while it checked the file ("" when it did not):
	// the pipeline then does not read the file again for them.
	SHA256 string `json:"sha256,omitempty"`
	MD5    string `json:"md5,omitempty"`
}

// Engine converts one local source file into one or more outputs in workDir.
//
// A multi-layer vector source gives one Output per layer. Refusals are
// *fault.DataError (with a code), failures of the worker's environment
// (disk full, out of memory, misconfiguration) *fault.SystemicError.
// Conversion is local CPU work: nothing it returns is transient.
type Engine interface {
	Convert(ctx context.Context, src string, workDir string, r Recipe) ([]Output, error)
	Version() string
}

// FormatInfo describes an output format.
type FormatInfo struct {
	Format      string
	Extension   string
	ContentType string
	Kind        Kind
}

// Formats lists the output formats.
var Formats = map[string]FormatInfo{
	FormatCOG:        {FormatCOG, ".tif", "image/tiff; application=geotiff; profile=cloud-optimized", Raster},
	FormatGeoParquet: {FormatGeoParquet, ".parquet", "application/vnd.apache.parquet", Vector},
	FormatFlatGeobuf: {FormatFlatGeobuf, ".fgb", "application/flatgeobuf", Vector},
	// FormatParquet is an attribute table written as plain Parquet (no
	// geometry, no "geo" metadata; Recipe.AttributeTables).
	FormatParquet: {FormatParquet, ".parquet", "application/vnd.apache.parquet", Vector},
}

// DestKey names an output in the destination bucket from the source key:
// the extension is replaced ("a/b/dem.img" → "a/b/dem.tif",
// "roads.shp" → "roads.parquet"); for a multi-layer source each layer goes
// in a folder named after the source ("x.gpkg", layer "roads" →
// "x/roads.parquet"). Layer names are made safe for a key (no "/", "..",
// control characters).
func DestKey(srcKey string, out Output, multiLayer bool) string {
	dir := path.Dir(srcKey)
	if dir == "." || !strings.Contains(srcKey, "/") {
		dir = ""
	} else {
		dir += "/"
	}
	stem := formats.Stem(srcKey)
	ext := out.Extension
	if ext == "" {
		ext = Formats[out.Format].Extension
	}
	if multiLayer && out.Layer != "" {
		return dir + stem + "/" + SafeName(out.Layer) + ext
	}
	return dir + stem + ext
}

// OutputKey is the full key of an output under prefix (the destination
// prefix, or a job's staging prefix): every final and staged key is built
// here.
func OutputKey(prefix, srcKey string, out Output, multiLayer bool) string {
	return prefix + DestKey(srcKey, out, multiLayer)
}

// OutputStem is where every output key of srcKey under prefix starts: the
// directory and stem, followed by the extension, or by "/" and the layer.
func OutputStem(prefix, srcKey string) string {
	return strings.TrimSuffix(OutputKey(prefix, srcKey, Output{Extension: "."}, false), ".")
}

// SafeName maps a layer name to a single safe path segment, one-to-one:
// a name that is already safe (ASCII letters, digits, '-', '_', '.', and
// non-ASCII letters; no leading or trailing '.') is kept as it is; any
// other name has its unsafe characters replaced by '_' and gets "-" and the
// first 8 hex digits of the SHA-256 of the original name appended, so that
// "a/b" ("a_b-<hash>") and "a_b" stay two names. Two different names could
// only meet again through a safe name that ends in another name's hash;
// the engine refuses such a source rather than lose a layer.
func SafeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		case r > 127 && r != 0xFFFD: // keep non-ASCII letters (UTF-8 keys are fine in S3)
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), ".")
	if out == s && out != "" {
		return out
	}
	if out == "" {
		out = "layer"
	}
	sum := sha256.Sum256([]byte(s))
	return out + "-" + hex.EncodeToString(sum[:4])
}

// RangeEngine is an Engine that can also read a single-file source through
// ranged reads, so a large object is never copied whole to local disk.
type RangeEngine interface {
	Engine
	ConvertReader(ctx context.Context, ra io.ReaderAt, size int64, name, workDir string, r Recipe) ([]Output, error)
}
