// Package stac builds the STAC Item written next to every output, the
// Collection of each dataset and the root Catalog above them: a tree a
// browser or crawler walks from catalog.json by links alone, every href
// relative so that a copied tree stays whole. It is pure Go: the facts about an output (its
// CRS, grid, bands, columns) come from the conversion engine as a
// Description; this package only turns them into STAC 1.0.0 JSON with the
// projection, raster, file, processing and table extensions.
package stac

// Size: one STAC item: its types and its builder's named steps.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"strings"
	"time"
)

// Version is the STAC version written.
const Version = "1.0.0"

// The extension schemas an item declares. Their versions are those whose
// official schemas are vendored in testdata/schemas and validated against.
const (
	ExtProjection = "https://stac-extensions.github.io/projection/v2.0.0/schema.json"
	ExtRaster     = "https://stac-extensions.github.io/raster/v1.0.0/schema.json"
	ExtFile       = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
	ExtProcessing = "https://stac-extensions.github.io/processing/v1.1.0/schema.json"
	ExtTable      = "https://stac-extensions.github.io/table/v1.0.0/schema.json"
)

// Media types of the assets, by output format (the registered or
// community-agreed types STAC best practices name).
const (
	MediaCOG        = "image/tiff; application=geotiff; profile=cloud-optimized"
	MediaGeoParquet = "application/vnd.apache.parquet"
	MediaFlatGeobuf = "application/vnd.flatgeobuf"
	MediaJSON       = "application/json"
	MediaGeoJSON    = "application/geo+json"
)

// Output format names (those of internal/convert).
const (
	FormatCOG        = "COG"
	FormatGeoParquet = "GeoParquet"
	FormatFlatGeobuf = "FlatGeobuf"
	// FormatParquet is an attribute table without geometry (plain Parquet).
	FormatParquet = "Parquet"
)

// MediaType is the asset media type of an output format ("" if unknown).
func MediaType(format string) string {
	switch format {
	case FormatCOG:
		return MediaCOG
	case FormatGeoParquet, FormatParquet:
		return MediaGeoParquet
	case FormatFlatGeobuf:
		return MediaFlatGeobuf
	}
	return ""
}

// ItemSuffix is appended to an output's key to name its item
// ("dem.tif" → "dem.tif.stac.json"): one item per output, beside it, and
// never the name of another output.
const ItemSuffix = ".stac.json"

// Description is what the engine read back from one output file. Zero
// fields are unknown and left out of the item.
type Description struct {
	// EPSG is the CRS's EPSG code (proj:code "EPSG:n"), 0 when it has
	// none; WKT2 is then the CRS (proj:wkt2).
	EPSG int    `json:"epsg,omitempty"`
	WKT2 string `json:"wkt2,omitempty"`
	// BBox is the extent in WGS 84 longitude/latitude [west, south, east,
	// north], from the native extent's edges transformed densely.
	BBox []float64 `json:"bbox,omitempty"`
	// NativeBBox is the extent in the output's CRS (proj:bbox).
	NativeBBox []float64 `json:"native_bbox,omitempty"`
	// Raster: proj:shape [rows, columns] and proj:transform (the affine
	// coefficients a, b, c, d, e, f of GDAL's geotransform, in that order:
	// GT[1], GT[2], GT[0], GT[4], GT[5], GT[3]).
	Shape     []int     `json:"shape,omitempty"`
	Transform []float64 `json:"transform,omitempty"`
	Bands     []Band    `json:"bands,omitempty"`
	// Vector: the columns in file order (geometry included) and the row
	// count.
	Columns         []Column `json:"columns,omitempty"`
	RowCount        *int64   `json:"row_count,omitempty"`
	PrimaryGeometry string   `json:"primary_geometry,omitempty"`
	// Datetime is the acquisition time the file declares
	// (TIFFTAG_DATETIME), if any.
	Datetime *time.Time `json:"datetime,omitempty"`
	// Software names the libraries that wrote the file and their versions
	// ("GDAL", "PROJ").
	Software map[string]string `json:"software,omitempty"`
}

// Band is one raster band (raster:bands).
type Band struct {
	DataType string `json:"data_type"`
	// Nodata is a number, or NaN / ±Inf (written "nan", "inf", "-inf").
	Nodata     *float64    `json:"nodata,omitempty"`
	Statistics *Statistics `json:"statistics,omitempty"`
}

// Statistics of a band's valid pixels.
type Statistics struct {
	Minimum      float64  `json:"minimum"`
	Maximum      float64  `json:"maximum"`
	Mean         float64  `json:"mean"`
	StdDev       float64  `json:"stddev"`
	ValidPercent *float64 `json:"valid_percent,omitempty"`
}

// Column is one column of a table (table:columns).
type Column struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
}

// Asset is the output file an item describes.
type Asset struct {
	Href   string // relative to the item ("dem.tif")
	Format string // FormatCOG, FormatGeoParquet, FormatFlatGeobuf
	Title  string
	SHA256 string // hex
	Size   int64
}

// Processing is how the output was made.
type Processing struct {
	// Software maps names to versions ("geomigrate", "GDAL", "PROJ").
	Software map[string]string
	// RecipeHash is the recipe's short hash (object metadata "recipe");
	// Recipe its canonical JSON (the text the hash digests).
	RecipeHash string
	Recipe     string
	// SourceKey and SourceSHA256 name the source it was converted from.
	SourceKey    string
	SourceSHA256 string
	// AssignedCRS is the recipe's assign_crs (AUTHORITY:CODE): the CRS
	// the output was given because its source declared none.
	AssignedCRS string
}

// PropAssignedCRS is the item property naming an assigned CRS.
const PropAssignedCRS = "geomigrate:assigned_crs"

// ItemInput is everything an item is made of.
type ItemInput struct {
	ID         string
	Collection string // dataset ID; "" for none
	// CollectionHref is the collection's location relative to the item;
	// RootHref the root catalog's, SelfHref the item's own ("./x.stac.json").
	CollectionHref, RootHref, SelfHref string
	Asset                              Asset
	Description                        *Description
	// Datetime is the item's datetime when the file declares no
	// acquisition time (Description.Datetime): geomigrate passes the
	// source object's Last-Modified.
	Datetime   time.Time
	Processing Processing
}

// Item is a STAC Item. Fields marshal in a fixed order; Properties and
// asset fields are maps (encoding/json sorts their keys), so the same
// input always gives the same bytes.
type Item struct {
	Type           string                    `json:"type"`
	StacVersion    string                    `json:"stac_version"`
	StacExtensions []string                  `json:"stac_extensions"`
	ID             string                    `json:"id"`
	Collection     string                    `json:"collection,omitempty"`
	Geometry       *Geometry                 `json:"geometry"`
	BBox           []float64                 `json:"bbox,omitempty"`
	Properties     map[string]any            `json:"properties"`
	Links          []Link                    `json:"links"`
	Assets         map[string]map[string]any `json:"assets"`
}

// Geometry is a GeoJSON polygon.
type Geometry struct {
	Type        string         `json:"type"`
	Coordinates [][][2]float64 `json:"coordinates"`
}

// Link is a STAC link.
type Link struct {
	Rel   string `json:"rel"`
	Href  string `json:"href"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// DataAssetKey is the key of the output in an item's assets.
const DataAssetKey = "data"

// NewItem builds the item of one output.
func NewItem(in ItemInput) (*Item, error) {
	media, err := checkItemInput(in)
	if err != nil {
		return nil, err
	}
	d := in.Description
	if d == nil {
		d = &Description{}
	}
	it := &Item{
		Type: "Feature", StacVersion: Version, ID: in.ID, Collection: in.Collection,
		Properties: map[string]any{}, Links: []Link{},
	}
	exts := []string{ExtFile, ExtProcessing}

	// datetime is the acquisition time when the file declares one; else
	// the caller's (the source's last modification). No clock is read:
	// the same input always gives the same item.
	switch {
	case d.Datetime != nil:
		it.Properties["datetime"] = rfc3339(*d.Datetime)
	case !in.Datetime.IsZero():
		it.Properties["datetime"] = rfc3339(in.Datetime)
	default:
		return nil, fmt.Errorf("stac.NewItem: no datetime")
	}
	if err := it.setProcessing(in.Asset.Format, d, in.Processing); err != nil {
		return nil, err
	}
	if it.setProjection(d) {
		exts = append(exts, ExtProjection)
	}
	if len(d.BBox) == 4 {
		bbox := clampBBox(d.BBox)
		if err := checkBBox(bbox); err != nil {
			return nil, fmt.Errorf("stac.NewItem: %s: %w", in.ID, err)
		}
		it.BBox = bbox
		it.Geometry = bboxPolygon(bbox)
	}

	asset := map[string]any{
		"href":          in.Asset.Href,
		"type":          media,
		"roles":         []string{"data"},
		"file:size":     in.Asset.Size,
		"file:checksum": Multihash(in.Asset.SHA256),
	}
	if in.Asset.Title != "" {
		asset["title"] = in.Asset.Title
	}
	if len(d.Bands) > 0 {
		exts = append(exts, ExtRaster)
		asset["raster:bands"] = rasterBands(d.Bands)
	}
	if it.setTable(d) {
		exts = append(exts, ExtTable)
	}
	it.Assets = map[string]map[string]any{DataAssetKey: asset}
	it.StacExtensions = exts
	it.setLinks(in)
	return it, nil
}

// checkItemInput refuses an input no item can be built of and returns the
// asset's media type.
func checkItemInput(in ItemInput) (string, error) {
	if in.ID == "" {
		return "", fmt.Errorf("stac.NewItem: no id")
	}
	media := MediaType(in.Asset.Format)
	if media == "" {
		return "", fmt.Errorf("stac.NewItem: unknown format %q", in.Asset.Format)
	}
	if len(in.Asset.SHA256) != 64 {
		return "", fmt.Errorf("stac.NewItem: asset SHA-256 %q is not 64 hex digits", in.Asset.SHA256)
	}
	return media, nil
}

// setProcessing sets the processing extension's fields: the software of
// the file and of the run, the lineage, an assigned CRS, the recipe.
func (it *Item) setProcessing(format string, d *Description, p Processing) error {
	software := map[string]string{}
	for k, v := range d.Software {
		software[k] = v
	}
	for k, v := range p.Software {
		if v != "" {
			software[k] = v
		}
	}
	if len(software) > 0 {
		it.Properties["processing:software"] = software
	}
	it.Properties["processing:lineage"] = lineage(format, p)
	if p.AssignedCRS != "" {
		it.Properties[PropAssignedCRS] = p.AssignedCRS
	}
	if p.RecipeHash != "" {
		expr := map[string]any{"hash": p.RecipeHash}
		if p.Recipe != "" {
			var recipe any
			if err := json.Unmarshal([]byte(p.Recipe), &recipe); err != nil {
				return fmt.Errorf("stac.NewItem: recipe is not JSON: %w", err)
			}
			expr["recipe"] = recipe
		}
		it.Properties["processing:expression"] = map[string]any{"format": "geomigrate-recipe", "expression": expr}
	}
	return nil
}

// setProjection sets the projection extension's fields, and says whether
// the description has any.
func (it *Item) setProjection(d *Description) bool {
	if d.EPSG == 0 && d.WKT2 == "" && len(d.NativeBBox) != 4 && len(d.Shape) != 2 {
		return false
	}
	if d.EPSG != 0 {
		it.Properties["proj:code"] = fmt.Sprintf("EPSG:%d", d.EPSG)
	} else {
		it.Properties["proj:code"] = nil // no EPSG code: the WKT2 says what it is
		if d.WKT2 != "" {
			it.Properties["proj:wkt2"] = d.WKT2
		}
	}
	if len(d.NativeBBox) == 4 {
		it.Properties["proj:bbox"] = d.NativeBBox
	}
	if len(d.Shape) == 2 {
		it.Properties["proj:shape"] = d.Shape
	}
	if len(d.Transform) == 6 {
		it.Properties["proj:transform"] = d.Transform
	}
	return true
}

// rasterBands is the asset's raster:bands: each band's type, nodata and,
// where all are finite, statistics.
func rasterBands(in []Band) []map[string]any {
	bands := make([]map[string]any, len(in))
	for i, b := range in {
		m := map[string]any{"data_type": b.DataType}
		if b.Nodata != nil {
			m["nodata"] = nodataValue(*b.Nodata)
		}
		if s := b.Statistics; s != nil && finite(s.Minimum, s.Maximum, s.Mean, s.StdDev) {
			st := map[string]any{"minimum": s.Minimum, "maximum": s.Maximum, "mean": s.Mean, "stddev": s.StdDev}
			if s.ValidPercent != nil && finite(*s.ValidPercent) {
				st["valid_percent"] = *s.ValidPercent
			}
			m["statistics"] = st
		}
		bands[i] = m
	}
	return bands
}

// setTable sets the table extension's fields, and says whether the
// description has columns.
func (it *Item) setTable(d *Description) bool {
	if len(d.Columns) == 0 {
		return false
	}
	it.Properties["table:columns"] = d.Columns
	if d.PrimaryGeometry != "" {
		it.Properties["table:primary_geometry"] = d.PrimaryGeometry
	}
	if d.RowCount != nil {
		// table:row_count is defined by table v1.2.0; v1.0.0 (declared
		// here, its schema vendored) leaves other table: fields open.
		it.Properties["table:row_count"] = *d.RowCount
	}
	return true
}

// setLinks links the item to itself, its root and its collection; an item
// with no collection link names no collection.
func (it *Item) setLinks(in ItemInput) {
	if in.SelfHref != "" {
		it.Links = append(it.Links, Link{Rel: "self", Href: in.SelfHref, Type: MediaGeoJSON})
	}
	if in.RootHref != "" {
		it.Links = append(it.Links, Link{Rel: "root", Href: in.RootHref, Type: MediaJSON, Title: RootTitle})
	}
	if in.Collection != "" && in.CollectionHref != "" {
		it.Links = append(it.Links,
			Link{Rel: "parent", Href: in.CollectionHref, Type: MediaJSON, Title: in.Collection},
			Link{Rel: "collection", Href: in.CollectionHref, Type: MediaJSON, Title: in.Collection})
	} else {
		it.Collection = ""
	}
}

// JSON is the item as indented JSON with a final newline.
func (it *Item) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(it, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("stac.Item.JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// Multihash is the multihash form of a hex SHA-256 (file:checksum): the
// function code 0x12 (sha2-256) and the digest length 0x20, then the
// digest.
func Multihash(sha256Hex string) string { return "1220" + strings.ToLower(sha256Hex) }

// RelativeHref is the href of target as seen from a document at from (both
// keys in the same bucket, "/"-separated): a relative URI reference, so
// each segment is percent-encoded as a URI path segment (a space, "%",
// "#", "?" or non-ASCII in a key would otherwise make a reader resolve
// another object, or none); readers decode it back to the key.
func RelativeHref(from, target string) string {
	fromDir := strings.Split(path.Dir(from), "/")
	if path.Dir(from) == "." {
		fromDir = nil
	}
	parts := strings.Split(target, "/")
	i := 0
	for i < len(fromDir) && i < len(parts)-1 && fromDir[i] == parts[i] {
		i++
	}
	var b strings.Builder
	if i == len(fromDir) {
		b.WriteString("./")
	}
	for range fromDir[i:] {
		b.WriteString("../")
	}
	for j, p := range parts[i:] {
		if j > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

func lineage(format string, p Processing) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Converted to %s by geomigrate", format)
	if p.SourceKey != "" {
		fmt.Fprintf(&b, " from %s", p.SourceKey)
	}
	if p.SourceSHA256 != "" {
		fmt.Fprintf(&b, " (SHA-256 %s)", p.SourceSHA256)
	}
	if p.RecipeHash != "" {
		fmt.Fprintf(&b, " with recipe %s", p.RecipeHash)
	}
	if p.AssignedCRS != "" {
		fmt.Fprintf(&b, ", which assigned the CRS %s to a source that declared none", p.AssignedCRS)
	}
	b.WriteString("; pixels and features were compared with the source before the output was published.")
	return b.String()
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func nodataValue(v float64) any {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return v
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// clampBBox bounds a WGS 84 extent to the globe: a global grid whose pixel
// edges lie half a pixel past the antimeridian or a pole (-180.5) is common
// and valid data, while a STAC bbox must lie within -180..180, -90..90. An
// overshoot of more than maxOvershoot degrees is left for checkBBox to
// refuse (those are not degrees). The exact extent stays in proj:bbox.
func clampBBox(b []float64) []float64 {
	const maxOvershoot = 10
	clamp := func(v, lo, hi float64) float64 {
		switch {
		case v < lo && v >= lo-maxOvershoot:
			return lo
		case v > hi && v <= hi+maxOvershoot:
			return hi
		}
		return v
	}
	return []float64{clamp(b[0], -180, 180), clamp(b[1], -90, 90), clamp(b[2], -180, 180), clamp(b[3], -90, 90)}
}

func checkBBox(b []float64) error {
	if !finite(b...) || b[0] < -180 || b[0] > 180 || b[2] < -180 || b[2] > 180 || b[1] < -90 || b[3] > 90 || b[1] > b[3] {
		return fmt.Errorf("bbox %v is not a WGS 84 extent", b)
	}
	return nil
}

// bboxPolygon is the footprint of a bbox: its rectangle. Extents are
// minimum/maximum longitudes, so one across the antimeridian is widened to
// the longitudes between its extremes rather than split.
func bboxPolygon(b []float64) *Geometry {
	w, s, e, n := b[0], b[1], b[2], b[3]
	return &Geometry{Type: "Polygon", Coordinates: [][][2]float64{{{w, s}, {e, s}, {e, n}, {w, n}, {w, s}}}}
}
