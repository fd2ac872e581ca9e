package gdal

// What a recipe file adds to a raster conversion: the COG driver's
// creation options checked against the driver's own list, nodata
// assignment, and reprojection through GDAL's warper.

/*
#cgo pkg-config: gdal
#include <gdal.h>

static const char *gm_cog_options(void) {
	GDALDriverH d = GDALGetDriverByName("COG");
	if (d == NULL) return NULL;
	return GDALGetMetadataItem(d, GDAL_DMD_CREATIONOPTIONLIST, NULL);
}
*/
import "C"

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

type cogOption struct {
	Name   string   `xml:"name,attr"`
	Type   string   `xml:"type,attr"`
	Min    string   `xml:"min,attr"`
	Max    string   `xml:"max,attr"`
	Values []string `xml:"Value"`
}

// outOfRange says how a number breaks the option's declared min or max
// ("" when it does not, or the option declares none).
func (o cogOption) outOfRange(v float64) string {
	if lo, err := strconv.ParseFloat(o.Min, 64); err == nil && v < lo {
		return "at least " + o.Min
	}
	if hi, err := strconv.ParseFloat(o.Max, 64); err == nil && v > hi {
		return "at most " + o.Max
	}
	return ""
}

// cogOptions is the COG driver's creation option list, by name.
var cogOptions = sync.OnceValues(func() (map[string]cogOption, error) {
	p := C.gm_cog_options()
	if p == nil {
		return nil, fmt.Errorf("gdal: the COG driver is not registered")
	}
	var list struct {
		Options []cogOption `xml:"Option"`
	}
	if err := xml.Unmarshal([]byte(C.GoString(p)), &list); err != nil {
		return nil, fmt.Errorf("gdal: COG creation option list: %w", err)
	}
	m := map[string]cogOption{}
	for _, o := range list.Options {
		m[strings.ToUpper(o.Name)] = o
	}
	return m, nil
})

// CheckCreationOptions checks KEY=VALUE raster creation options against
// the COG driver of this GDAL: the key must be one of its options, a value
// of a string-select option one of its values, an int option an integer.
func CheckCreationOptions(opts []string) error {
	known, err := cogOptions()
	if err != nil {
		return err
	}
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		o, ok := known[strings.ToUpper(k)]
		switch {
		case !ok:
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			slices.Sort(names)
			return fmt.Errorf("creation option %s: the COG driver has no such option (it has %s)", k, strings.Join(names, ", "))
		case o.Type == "string-select" && len(o.Values) > 0 && !slices.ContainsFunc(o.Values, func(s string) bool { return strings.EqualFold(s, v) }):
			return fmt.Errorf("creation option %s=%s: want one of %s", k, v, strings.Join(o.Values, ", "))
		case o.Type == "int":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("creation option %s=%s: want an integer", k, v)
			}
			if why := o.outOfRange(float64(n)); why != "" {
				return fmt.Errorf("creation option %s=%s: want %s", k, v, why)
			}
		case o.Type == "float":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("creation option %s=%s: want a number", k, v)
			}
			if why := o.outOfRange(f); why != "" {
				return fmt.Errorf("creation option %s=%s: want %s", k, v, why)
			}
		}
	}
	return nil
}

// checkNoData refuses a nodata value the bands cannot hold: GDAL would
// clamp it (-9999 on Byte becomes 0) and mark real pixels as missing.
func checkNoData(ds *godal.Dataset, nodata, what string) error {
	if nodata == "" {
		return nil
	}
	v, _ := strconv.ParseFloat(nodata, 64) // checked by recipe.Validate
	for i, b := range ds.Bands() {
		dt := b.Structure().DataType
		lo, hi, integer := typeRange(dt)
		if integer && (math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < lo || v > hi) {
			return fault.Data(fault.InvalidInput, "%s, band %d (%s), cannot hold the recipe's nodata %s: choose a value in [%g, %g] for this file", what, i+1, dt, nodata, lo, hi)
		}
	}
	return nil
}

// typeRange is the value range of an integer data type (integer false
// for floating point and complex types).
func typeRange(dt godal.DataType) (lo, hi float64, integer bool) {
	switch dt {
	case godal.Byte:
		return 0, math.MaxUint8, true
	case godal.UInt16:
		return 0, math.MaxUint16, true
	case godal.Int16:
		return math.MinInt16, math.MaxInt16, true
	case godal.UInt32:
		return 0, math.MaxUint32, true
	case godal.Int32:
		return math.MinInt32, math.MaxInt32, true
	}
	return 0, 0, false
}

// alreadyIn reports whether ds is in the target CRS already (an authority
// code; web-optimized always warps, onto its grid): a recipe asking an
// archive for EPSG:3035 does not resample the files that are in it.
func alreadyIn(ds *godal.Dataset, target string) bool {
	if target == recipe.WebOptimized {
		return false
	}
	want, err := godal.NewSpatialRef(target)
	if err != nil {
		return false // warp reports it
	}
	defer want.Close()
	have, err := godal.NewSpatialRefFromWKT(ds.Projection())
	if err != nil {
		return false
	}
	defer have.Close()
	return have.IsSame(want)
}

// webMercatorHalf is half the extent of EPSG:3857 (π × 6378137 m).
const webMercatorHalf = math.Pi * 6378137

// warp reprojects ds to the recipe's target CRS as a virtual (VRT)
// dataset: nothing is computed until the COG is written, and the fidelity
// check reads the same blocks again, so the output is compared pixel for
// pixel with the warp of its source. Categorical data is warped with
// nearest neighbour, anything else with cubic (the COG driver's default
// for its own reprojection). Pixels outside the source get the recipe's
// nodata, else the source's, else an alpha band marks them.
//
// recipe.WebOptimized targets EPSG:3857 at the resolution of the first
// Web Mercator zoom level (tiles of r.BlockSize pixels) at least as fine
// as the source, with the extent grown to that zoom level's tile
// boundaries: rio-cogeo --web-optimized does the same.
func warp(ds *godal.Dataset, r recipe.Recipe, categorical bool, geo georef, rec *recorder) (*godal.Dataset, error) {
	target := r.TargetCRS
	if target == recipe.WebOptimized {
		target = "EPSG:3857"
	}
	// An unknown code is the recipe's fault, not the source's.
	srs, err := godal.NewSpatialRef(target)
	if err != nil {
		return nil, fault.Systemic("gdal.warp", fmt.Errorf("target CRS %s is unknown to PROJ: %w", target, err))
	}
	srs.Close()
	resampling := "cubic"
	if categorical {
		resampling = "near"
	}
	args := []string{"-of", "VRT", "-t_srs", target, "-r", resampling}
	if !geo.geoTransform && geo.gcps == 0 && geo.rpc {
		// gdalwarp uses RPCs only when told to.
		args = append(args, "-rpc")
	}
	switch {
	case r.NoData != "":
		args = append(args, "-dstnodata", r.NoData)
	case hasNoData(ds):
		// gdalwarp carries the source's nodata over by itself.
	default:
		args = append(args, "-dstalpha")
	}
	if r.TargetCRS == recipe.WebOptimized {
		first, err := ds.Warp("", args, rec.opt())
		if err != nil {
			return nil, classify("gdal.Warp", err, "", fault.InvalidCRS, "the raster cannot be reprojected to %s", target)
		}
		gt, gerr := first.GeoTransform(rec.opt())
		st := first.Structure()
		first.Close()
		if gerr != nil {
			return nil, fault.Systemic("gdal.warp", gerr)
		}
		te, res := webGrid(gt, st.SizeX, st.SizeY, r.BlockSize)
		args = append(args, "-tr", f64(res), f64(res), "-te", f64(te[0]), f64(te[1]), f64(te[2]), f64(te[3]))
	}
	out, err := ds.Warp("", args, rec.opt())
	if err != nil {
		return nil, classify("gdal.Warp", err, "", fault.InvalidCRS, "the raster cannot be reprojected to %s", target)
	}
	return out, nil
}

func f64(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func hasNoData(ds *godal.Dataset) bool {
	for _, b := range ds.Bands() {
		if _, ok := b.NoData(); ok {
			return true
		}
	}
	return false
}

// webGrid is the Web Mercator grid for a warp whose suggested output has
// geotransform gt and size w x h: the resolution of the first zoom level
// (tiles of tile pixels) at least as fine as gt's, and the extent
// (minx, miny, maxx, maxy) grown to that level's tile boundaries.
func webGrid(gt [6]float64, w, h, tile int) (te [4]float64, res float64) {
	native := math.Min(math.Abs(gt[1]), math.Abs(gt[5]))
	zoom := 0
	for ; zoom < 30; zoom++ {
		res = 2 * webMercatorHalf / (float64(tile) * math.Exp2(float64(zoom)))
		if res <= native*(1+1e-9) {
			break
		}
	}
	span := res * float64(tile)
	minx, maxy := gt[0], gt[3]
	maxx, miny := minx+gt[1]*float64(w), maxy+gt[5]*float64(h)
	snapDown := func(v float64) float64 { return -webMercatorHalf + math.Floor((v+webMercatorHalf)/span+1e-9)*span }
	snapUp := func(v float64) float64 { return -webMercatorHalf + math.Ceil((v+webMercatorHalf)/span-1e-9)*span }
	te = [4]float64{snapDown(minx), snapDown(miny), snapUp(maxx), snapUp(maxy)}
	for i := range te {
		te[i] = math.Max(-webMercatorHalf, math.Min(webMercatorHalf, te[i]))
	}
	return te, res
}

func allFloat(ds *godal.Dataset) bool {
	for _, b := range ds.Bands() {
		if dt := b.Structure().DataType; dt != godal.Float32 && dt != godal.Float64 {
			return false
		}
	}
	return true
}
