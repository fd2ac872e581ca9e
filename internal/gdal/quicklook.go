package gdal

// Quick-look images of outputs for the HTML run report (they implement
// htmlreport.Renderer): a thumbnail of a raster, an extent map of a vector
// layer. GDAL reads, resamples, rasterizes and encodes the image into
// /vsimem/; nothing is written beside the output (no .aux.xml: statistics
// are computed here, not by GDAL's PAM).
//
// Continuous rasters (imagery, elevation, stretched values) are encoded
// as lossy WebP with a lossless alpha, a tenth of the PNG's bytes at the
// same size, which keeps a report of hundreds of outputs small; classes
// (colour tables) and extent maps stay PNG, paletted and exact, and so
// does everything when this GDAL has no WEBP driver (docs/decisions/0108).

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// MaxExtentFeatures is the number of features above which an extent map
// shows where features are (a density of their bounding-box centres)
// rather than rasterizing every geometry.
const MaxExtentFeatures = 20000

// fit scales w×h so that the longer side is px (small images are enlarged:
// a 40×30 grid is still a readable thumbnail), keeping at least one pixel.
func fit(w, h, px int) (int, int) {
	if w <= 0 || h <= 0 {
		return px, px
	}
	if w >= h {
		return px, max(1, int(math.Round(float64(h)*float64(px)/float64(w))))
	}
	return max(1, int(math.Round(float64(w)*float64(px)/float64(h)))), px
}

// Thumbnail renders a raster output as an image whose longer side is px:
// the first three bands as RGB when there are three or more, else the
// first band, with its colour table when it has one (a PNG). Other than
// Byte data is stretched to 0..255 between its 2nd and 98th percentiles
// (read at the thumbnail's size, nodata and NaN left out); nodata becomes
// transparent. All but colour tables are WebP when GDAL can write it. The
// caption says what is shown.
func (e *Engine) Thumbnail(path string, px int) ([]byte, string, error) {
	rec := newRecorder()
	eh := godal.ErrLogger(rec.handle)
	ds, err := godal.Open(path, godal.RasterOnly(), eh)
	if err != nil {
		return nil, "", fmt.Errorf("gdal.Thumbnail: %s: %w", path, err)
	}
	defer ds.Close(eh)
	st := ds.Structure()
	bands := ds.Bands()
	if len(bands) == 0 {
		return nil, "", fmt.Errorf("gdal.Thumbnail: %s: no bands", path)
	}
	w, h := fit(st.SizeX, st.SizeY, px)
	list := []int{1}
	if len(bands) >= 3 {
		list = []int{1, 2, 3}
	}
	switches := []string{"-outsize", strconv.Itoa(w), strconv.Itoa(h)}
	for _, b := range list {
		switches = append(switches, "-b", strconv.Itoa(b))
	}
	dtype := bands[0].Structure().DataType
	caption := fmt.Sprintf("%d × %d px, %d band(s) %s", st.SizeX, st.SizeY, len(bands), dtype)
	if len(list) == 3 {
		caption += ", bands 1-3 as RGB"
	}
	crs := ""
	if sr := ds.SpatialRef(); sr != nil {
		crs = srsName(sr)
		sr.Close()
	}
	src, lossy := ds, lossyQuickLooks()
	switch {
	case len(list) == 1 && len(bands[0].ColorTable().Entries) > 0:
		// Classes: never averaged into colours no class has, nor blurred
		// by a lossy encoding.
		switches = append(switches, "-r", "nearest")
		caption += ", colour table"
		lossy = false
	case dtype != godal.Byte:
		// Stretched here rather than by gdal_translate -scale, which
		// does not clip: values below the 2nd percentile would land on
		// the nodata value and turn transparent.
		img, lo, hi, err := stretched(bands, list, st.SizeX, st.SizeY, w, h, eh)
		if err != nil {
			return nil, "", fmt.Errorf("gdal.Thumbnail: %s: %w", path, err)
		}
		defer img.Close(eh)
		src, switches = img, nil
		if lossy && len(list) == 1 {
			// WebP is RGB(A): the grey band thrice, then the alpha.
			switches = []string{"-b", "1", "-b", "1", "-b", "1", "-b", "2"}
		}
		caption += fmt.Sprintf(", stretched %.4g to %.4g (2nd to 98th percentile)", lo, hi)
	default:
		switches = append(switches, "-r", "average")
		if lossy {
			// RGB(A) for WebP; the mask (nodata, an alpha band) as alpha,
			// where the PNG driver writes nodata as transparency itself.
			rgb := []string{"-b", "1", "-b", "2", "-b", "3"}
			if len(list) == 1 {
				rgb = []string{"-b", "1", "-b", "1", "-b", "1"}
			}
			switches = append([]string{"-outsize", strconv.Itoa(w), strconv.Itoa(h), "-r", "average"}, append(rgb, "-b", "mask")...)
		}
	}
	if nd, ok := bands[0].NoData(); ok {
		caption += fmt.Sprintf(", nodata %g transparent", nd)
	}
	if crs != "" {
		caption += ", " + crs
	}
	encode := encodePNG
	if lossy {
		encode = encodeWebP
	}
	b, err := encode(src, switches, eh)
	if err != nil {
		return nil, "", fmt.Errorf("gdal.Thumbnail: %s: %w", path, err)
	}
	return b, caption, nil
}

// stretched reads the listed bands at w×h (GDAL averages, from the
// overviews when they fit) and maps each linearly from the 2nd to the 98th
// percentile of the valid values of all of them onto 0..255, clipped, in
// an in-memory dataset with an alpha band that hides pixels where a band
// is nodata or not a number.
func stretched(bands []godal.Band, list []int, sizeX, sizeY, w, h int, eh interface {
	godal.BandIOOption
	godal.DatasetCreateOption
	godal.SetColorInterpOption
}) (img *godal.Dataset, lo, hi float64, err error) {
	data := make([][]float64, len(list))
	valid := make([]bool, w*h)
	for i := range valid {
		valid[i] = true
	}
	for k, i := range list {
		b := bands[i-1]
		data[k] = make([]float64, w*h)
		if err := b.Read(0, 0, data[k], w, h, godal.Window(sizeX, sizeY), godal.Resampling(godal.Average), eh); err != nil {
			return nil, 0, 0, err
		}
		nd, hasND := b.NoData()
		for p, v := range data[k] {
			if math.IsNaN(v) || math.IsInf(v, 0) || (hasND && v == nd) {
				valid[p] = false
			}
		}
	}
	var vals []float64
	for _, d := range data {
		for p, v := range d {
			if valid[p] {
				vals = append(vals, v)
			}
		}
	}
	lo, hi = 0, 1
	if len(vals) > 0 {
		slices.Sort(vals)
		lo, hi = vals[len(vals)*2/100], vals[(len(vals)-1)*98/100]
	}
	if hi <= lo {
		hi = lo + 1
	}
	img, err = godal.Create(godal.Memory, "", len(list)+1, godal.Byte, w, h, eh)
	if err != nil {
		return nil, 0, 0, err
	}
	out := img.Bands()
	pix := make([]byte, w*h)
	for k, d := range data {
		for p, v := range d {
			pix[p] = byte(math.Round(255 * math.Min(1, math.Max(0, (v-lo)/(hi-lo)))))
		}
		if err := out[k].Write(0, 0, pix, w, h, eh); err != nil {
			img.Close()
			return nil, 0, 0, err
		}
	}
	for p, ok := range valid {
		pix[p] = 0
		if ok {
			pix[p] = 255
		}
	}
	alpha := out[len(list)]
	if err = alpha.Write(0, 0, pix, w, h, eh); err == nil {
		err = alpha.SetColorInterp(godal.CIAlpha, eh)
	}
	if err != nil {
		img.Close()
		return nil, 0, 0, err
	}
	return img, lo, hi, nil
}

// srsName is "EPSG:32633" or the CRS's name.
func srsName(sr *godal.SpatialRef) string {
	if a, c := sr.AuthorityName(""), sr.AuthorityCode(""); a != "" && c != "" {
		return a + ":" + c
	}
	if n, ok := sr.AttrValue("PROJCS", 0); ok && n != "" {
		return n
	}
	if n, ok := sr.AttrValue("GEOGCS", 0); ok {
		return n
	}
	return ""
}

// geometries calls fn with the WKB of every geometry of a layer file.
type geometries func(fn func(wkb []byte) error) error

// extent is the bounding box of a layer's geometries, their number and
// types.
type extent struct {
	minX, minY, maxX, maxY float64
	n                      int
	types                  map[string]bool
}

// ExtentMap renders a vector output as a PNG whose longer side is px: its
// geometries rasterized over their extent (points drawn as small marks)
// or, above MaxExtentFeatures, the density of the features' bounding-box
// centres. GeoParquet is read by internal/geoparquet (GDAL 3.6 has no
// Parquet driver) and drawn by GDAL; other formats are read by GDAL.
func (e *Engine) ExtentMap(path string, px int) ([]byte, string, error) {
	rec := newRecorder()
	eh := godal.ErrLogger(rec.handle)
	var each geometries
	crs := ""
	if formats.OutputFormat(path) == "GeoParquet" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", fmt.Errorf("gdal.ExtentMap: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, "", fmt.Errorf("gdal.ExtentMap: %w", err)
		}
		each = func(fn func([]byte) error) error {
			projjson, err := geoparquet.EachGeometry(f, fi.Size(), fn)
			crs = projjsonName(projjson)
			return err
		}
	} else {
		ds, err := godal.Open(path, godal.VectorOnly(), eh)
		if err != nil {
			return nil, "", fmt.Errorf("gdal.ExtentMap: %s: %w", path, err)
		}
		defer ds.Close(eh)
		layers := ds.Layers()
		if len(layers) > 0 {
			if sr := layers[0].SpatialRef(); sr != nil {
				crs = srsName(sr)
				sr.Close()
			}
		}
		each = func(fn func([]byte) error) error { return eachOGRGeometry(layers, fn, eh) }
	}
	ext := extent{minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1), types: map[string]bool{}}
	err := each(func(wkb []byte) error {
		g, err := geoparquet.DecodeWKB(wkb)
		if err != nil {
			return err
		}
		ext.n++
		ext.types[g.TypeName()] = true
		if !g.Empty {
			ext.minX, ext.minY = min(ext.minX, g.MinX), min(ext.minY, g.MinY)
			ext.maxX, ext.maxY = max(ext.maxX, g.MaxX), max(ext.maxY, g.MaxY)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("gdal.ExtentMap: %s: %w", path, err)
	}
	b, caption, err := drawExtent(each, ext, px, eh)
	if err != nil {
		return nil, "", fmt.Errorf("gdal.ExtentMap: %s: %w", path, err)
	}
	if crs != "" {
		caption += ", " + crs
	}
	return b, caption, nil
}

// eachOGRGeometry calls fn with the ISO WKB of every non-null geometry of
// the layers.
func eachOGRGeometry(layers []godal.Layer, fn func([]byte) error, eh godal.GeometryWKBOption) error {
	for _, l := range layers {
		l.ResetReading()
		for f := l.NextFeature(); f != nil; f = l.NextFeature() {
			g := f.Geometry()
			var wkb []byte
			var err error
			if g != nil && !g.Empty() {
				wkb, err = g.WKB(eh)
			}
			if g != nil {
				g.Close()
			}
			f.Close()
			if err != nil {
				return err
			}
			if wkb != nil {
				if err := fn(wkb); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Extent map colours: background, then features (or, for a density, the
// lightest to the darkest of 255 steps).
var (
	extentBackground = [4]int16{246, 246, 246, 255}
	extentLight      = [3]float64{198, 219, 239}
	extentDark       = [3]float64{8, 48, 107}
)

func drawExtent(each geometries, ext extent, px int, eh interface {
	godal.DatasetCreateOption
	godal.SetGeoTransformOption
	godal.SetColorTableOption
	godal.RasterizeGeometryOption
	godal.NewGeometryOption
	godal.BufferOption
	godal.BandIOOption
	godal.DatasetTranslateOption
	godal.CloseOption
}) ([]byte, string, error) {
	types := make([]string, 0, len(ext.types))
	for t := range ext.types {
		types = append(types, t)
	}
	slices.Sort(types)
	caption := fmt.Sprintf("%d feature(s) (%s)", ext.n, strings.Join(types, ", "))
	// The canvas is the extent plus a 5 % margin on each side; a point or
	// a line along an axis gets a square or a strip around it.
	cx, cy := (ext.minX+ext.maxX)/2, (ext.minY+ext.maxY)/2
	width, height := ext.maxX-ext.minX, ext.maxY-ext.minY
	if ext.n == 0 || math.IsInf(width, 0) {
		cx, cy, width, height = 0, 0, 0, 0
		caption = "no geometries"
	}
	size := max(width, height)
	if size == 0 {
		size = 1
	}
	width, height = 1.1*max(width, size/20), 1.1*max(height, size/20)
	w, h := px, px
	if width >= height {
		h = max(1, int(math.Round(float64(px)*height/width)))
	} else {
		w = max(1, int(math.Round(float64(px)*width/height)))
	}
	res := max(width/float64(w), height/float64(h))
	x0, y1 := cx-res*float64(w)/2, cy+res*float64(h)/2

	canvas, err := godal.Create(godal.Memory, "", 1, godal.Byte, w, h, eh)
	if err != nil {
		return nil, "", err
	}
	defer canvas.Close(eh)
	if err := canvas.SetGeoTransform([6]float64{x0, res, 0, y1, 0, -res}, eh); err != nil {
		return nil, "", err
	}
	band := canvas.Bands()[0]
	ct := godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: make([][4]int16, 256)}
	ct.Entries[0] = extentBackground
	for i := 1; i < 256; i++ {
		f := float64(i-1) / 254
		var c [4]int16
		for k := range 3 {
			c[k] = int16(math.Round(extentLight[k] + f*(extentDark[k]-extentLight[k])))
		}
		c[3] = 255
		ct.Entries[i] = c
	}
	if err := band.SetColorTable(ct, eh); err != nil {
		return nil, "", err
	}
	const featureValue = 200
	switch {
	case ext.n == 0:
	case ext.n > MaxExtentFeatures:
		counts := make([]float64, w*h)
		peak := 0.0
		err := each(func(wkb []byte) error {
			g, err := geoparquet.DecodeWKB(wkb)
			if err != nil || g.Empty {
				return err
			}
			col := int(((g.MinX+g.MaxX)/2 - x0) / res)
			row := int((y1 - (g.MinY+g.MaxY)/2) / res)
			if col >= 0 && col < w && row >= 0 && row < h {
				counts[row*w+col]++
				peak = max(peak, counts[row*w+col])
			}
			return nil
		})
		if err != nil {
			return nil, "", err
		}
		pix := make([]byte, w*h)
		for i, c := range counts {
			if c > 0 { // log scale: one feature is visible next to thousands
				pix[i] = byte(1 + math.Round(254*math.Log1p(c)/math.Log1p(peak)))
			}
		}
		if err := band.Write(0, 0, pix, w, h, eh); err != nil {
			return nil, "", err
		}
		caption = fmt.Sprintf("density of %d feature centres (over %d features: not drawn one by one) (%s)", ext.n, MaxExtentFeatures, strings.Join(types, ", "))
	default:
		err := each(func(wkb []byte) error {
			g, err := godal.NewGeometryFromWKB(wkb, nil, eh)
			if err != nil {
				return err
			}
			defer g.Close()
			if gi, _ := geoparquet.DecodeWKB(wkb); gi.Type == 1 || gi.Type == 4 { // (Multi)Point: a mark of ~5 pixels
				sq, err := g.Buffer(2.5*res, 1, eh)
				if err != nil {
					return err
				}
				defer sq.Close()
				g = sq
			}
			return canvas.RasterizeGeometry(g, godal.Values(featureValue), godal.AllTouched(), eh)
		})
		if err != nil {
			return nil, "", err
		}
	}
	if ext.n > 0 {
		caption += fmt.Sprintf(", extent %.6g %.6g %.6g %.6g", ext.minX, ext.minY, ext.maxX, ext.maxY)
	}
	b, err := encodePNG(canvas, nil, eh)
	return b, caption, err
}

// projjsonName is "EPSG:32633" for a PROJJSON with that id, the CRS's name
// without one, OGC:CRS84 for none (GeoParquet's default).
func projjsonName(projjson json.RawMessage) string {
	if len(projjson) == 0 {
		return "OGC:CRS84"
	}
	var crs struct {
		Name string `json:"name"`
		ID   *struct {
			Authority string `json:"authority"`
			Code      any    `json:"code"`
		} `json:"id"`
	}
	if err := json.Unmarshal(projjson, &crs); err != nil {
		return ""
	}
	if crs.ID != nil && crs.ID.Authority != "" {
		return fmt.Sprintf("%s:%v", crs.ID.Authority, crs.ID.Code)
	}
	return crs.Name
}
