package recipe

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Fidelity is what the engine proved about one output against its source
// before returning it: nothing lost, nothing altered. An output
// whose check failed is never returned, so a Fidelity only ever records
// success; it travels with the output into the run report and the staged
// object's metadata.
type Fidelity struct {
	// Checks names what was compared, e.g. "pixels", "nodata", "crs",
	// "geotransform" for a raster; "features", "null_geometries",
	// "fields", "layer_name", "geometries", "attribute values" for a
	// vector layer.
	Checks []string `json:"checks"`

	// Raster: bands and pixels per band compared at full resolution, and
	// each band's CRC-32C (Castagnoli) of its pixel values, row-major, in
	// the band's data type with the machine's byte order (little-endian on
	// x86-64 and arm64). Checksums are listed for at most MaxBandChecksums
	// bands; every band is compared regardless.
	Bands         int      `json:"bands,omitempty"`
	Pixels        int64    `json:"pixels,omitempty"`
	BandChecksums []string `json:"band_crc32c,omitempty"`

	// Vector: the source layer, its features (rows written, null
	// geometries among them) and attribute fields (those written as text
	// because the output format has no such type are named in AsText).
	Layer          string   `json:"layer,omitempty"`
	Features       int64    `json:"features,omitempty"`
	NullGeometries int64    `json:"null_geometries,omitempty"`
	Fields         int      `json:"fields,omitempty"`
	AsText         []string `json:"as_text,omitempty"`
	// Lossy is the measured error of a lossy output (JPEG, WEBP), whose
	// pixels are compared within the recipe's threshold rather than for
	// equality ("pixels within min_psnr_db" in Checks).
	Lossy *LossyFidelity `json:"lossy,omitempty"`
	// Digest is the order-independent SHA-256 sum of the features'
	// canonical encoding (geometry WKB and every attribute value) that
	// source and output were proven to share ("geometries", "attribute
	// values" in Checks).
	Digest string `json:"digest,omitempty"`
}

// LossyFidelity is what a lossy output lost against its source, per band
// (an RGBA source's alpha, which JPEG keeps as a mask, is the last band).
type LossyFidelity struct {
	Compression string      `json:"compression"`
	Quality     int         `json:"quality"`
	MinPSNR     float64     `json:"min_psnr_db"`
	Bands       []LossyBand `json:"bands"`
}

// LossyBand is one band's error at full resolution over all its pixels:
// the largest absolute difference of a value, the mean squared error and
// the PSNR, 10·log10(255²/MSE) for 8-bit values. PSNR is left out (nil)
// for a band that came back unchanged (MSE 0, an infinite PSNR).
type LossyBand struct {
	Band       int      `json:"band"`
	MaxAbsDiff int      `json:"max_abs_diff"`
	MSE        float64  `json:"mse"`
	PSNR       *float64 `json:"psnr_db,omitempty"`
}

// MaxBandChecksums bounds Fidelity.BandChecksums, so that a many-band
// raster keeps the state machine payload small (Step Functions caps a
// payload at 256 KiB).
const MaxBandChecksums = 64

// Summary is a one-line form of the record, for object metadata (S3 user
// metadata is capped at 2 KiB in all, so this stays short).
func (f Fidelity) Summary() string {
	var parts []string
	if f.Bands > 0 {
		parts = append(parts, fmt.Sprintf("bands=%d pixels=%d", f.Bands, f.Pixels))
		if n := len(f.BandChecksums); n > 0 && n <= 8 {
			parts = append(parts, "crc32c="+strings.Join(f.BandChecksums, ","))
		}
	}
	if f.Layer != "" || f.Features > 0 {
		parts = append(parts, fmt.Sprintf("features=%d nulls=%d fields=%d", f.Features, f.NullGeometries, f.Fields))
	}
	if l := f.Lossy; l != nil {
		var bands []string
		for _, b := range l.Bands {
			psnr := "inf"
			if b.PSNR != nil {
				psnr = fmt.Sprintf("%.2f", *b.PSNR)
			}
			bands = append(bands, fmt.Sprintf("%s/%d", psnr, b.MaxAbsDiff))
		}
		parts = append(parts, fmt.Sprintf("lossy=%s quality=%d min_psnr_db=%g psnr_db/max_abs_diff=%s", l.Compression, l.Quality, l.MinPSNR, strings.Join(bands, ",")))
	}
	parts = append(parts, "equal:"+strings.Join(f.Checks, ","))
	return strings.Join(parts, " ")
}

// Lineage is what an output records about its making inside the file
// itself (GeoTIFF metadata, GeoParquet key-value metadata), so that it
// survives a copy that loses the object's metadata.
type Lineage struct {
	SourceSHA256  string `json:"src_sha256"`            // the job's content fingerprint (hex)
	Fingerprint   string `json:"fingerprint,omitempty"` // "sha256", or "fast" over the size threshold
	RecipeHash    string `json:"recipe"`                // Recipe.ShortHash, as in the job ID and object metadata
	ToolVersion   string `json:"geomigrate_version"`
	EngineVersion string `json:"gdal_version"`
	// Layer is the source layer a vector output holds (GeoParquet only:
	// a GeoTIFF holds no layer).
	Layer string `json:"layer,omitempty"`
	// AssignedCRS is the recipe's assign_crs: the CRS the output was
	// given because its source declared none.
	AssignedCRS string `json:"assigned_crs,omitempty"`
	// CurveStepDegrees is the arc step curves were linearised with (0:
	// none were): the tolerance of the approximation, for whoever reads
	// the geometry.
	CurveStepDegrees float64 `json:"curve_step_degrees,omitempty"`
	// Lossy says how an output compressed lossily (JPEG, WEBP) was made:
	// "lossy COMPRESSION quality=Q min_psnr_db=T"; "" for a lossless one.
	Lossy string `json:"lossy,omitempty"`
	// NoGeometry: the source layer has no geometry column and the output
	// is a plain Parquet table (Recipe.AttributeTables).
	NoGeometry bool `json:"no_geometry,omitempty"`
}

// JSON is the lineage as a JSON object (fixed key order: deterministic).
func (l Lineage) JSON() string {
	b, err := json.Marshal(l)
	if err != nil { // cannot happen: strings only
		panic(err)
	}
	return string(b)
}

// ParseLineage reads the JSON form back.
func ParseLineage(s string) (Lineage, error) {
	var l Lineage
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return l, fmt.Errorf("recipe.ParseLineage: %w", err)
	}
	return l, nil
}

// LineageOf is the lineage of a conversion under r of a source with the
// given fingerprint: the recipe hash and versions come from r itself.
func LineageOf(r Recipe, sourceSHA256, fingerprint string) Lineage {
	return Lineage{
		SourceSHA256: sourceSHA256, Fingerprint: fingerprint, RecipeHash: r.ShortHash(),
		ToolVersion: r.ToolVersion, EngineVersion: r.EngineVersion, AssignedCRS: r.AssignCRS,
	}
}

// RasterLineage is the lineage of a raster output of r: Lineage, and
// for a lossy compression the Lossy note (a vector output of the same
// recipe is not lossy).
func (r Recipe) RasterLineage() Lineage {
	l := r.Lineage()
	if d := r.WithDefaults(); d.Lossy() {
		l.Lossy = fmt.Sprintf("lossy %s quality=%d min_psnr_db=%g", d.Compression, d.Quality, d.MinPSNR)
	}
	return l
}
