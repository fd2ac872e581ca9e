package gdal

// Overview resampling "auto": AVERAGE (and any other interpolating method)
// invents values between classes, so a land-cover grid's overviews would
// hold classes that do not exist. auto picks NEAREST for categorical data
// and AVERAGE for continuous data. A band is categorical when it says so
// (a colour table, a raster attribute table, category names) or when it
// is of an integer type and holds few distinct values (maxClasses).

/*
#cgo pkg-config: gdal
#include <gdal.h>

static int gm_has_rat(GDALRasterBandH b) { return GDALGetDefaultRAT(b) != NULL; }
static int gm_has_categories(GDALRasterBandH b) {
	char **names = GDALGetRasterCategoryNames(b);
	return names != NULL && names[0] != NULL;
}
*/
import "C"

import (
	"context"
	"strconv"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/convert"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// maxClasses: an integer band with at most this many distinct values is
// taken as classes (land cover schemes have 10–50; CORINE has 44).
// Continuous integer data (elevation, imagery) exceeds it within its first
// rows, which ends the scan early.
const maxClasses = 64

// bandHandle is the GDALRasterBandH of a godal Band (a struct holding only
// the handle; TestCategoricalByMetadata pins that).
func bandHandle(b godal.Band) C.GDALRasterBandH {
	return *(*C.GDALRasterBandH)(unsafe.Pointer(&b))
}

var integerTypes = map[godal.DataType]bool{
	godal.Byte: true, godal.Int8: true, godal.UInt16: true, godal.Int16: true, godal.UInt32: true, godal.Int32: true,
}

// categoricalReason says why a raster's bands are categorical ("" when
// they are not): any categorical band makes the raster so, since one
// resampling applies to all bands and NEAREST never invents a value.
func categoricalReason(ctx context.Context, ds *godal.Dataset, rec *recorder) (string, error) {
	bands := ds.Bands()
	for _, b := range bands {
		switch {
		case isPaletted(b):
			return "colour table", nil
		case C.gm_has_rat(bandHandle(b)) != 0:
			return "raster attribute table", nil
		case C.gm_has_categories(bandHandle(b)) != 0:
			return "category names", nil
		}
	}
	for _, b := range bands {
		if !integerTypes[b.Structure().DataType] {
			continue
		}
		few, err := fewValues(ctx, b, rec)
		if err != nil || few {
			return "at most " + strconv.Itoa(maxClasses) + " distinct integer values", err
		}
	}
	return "", nil
}

// fewValues reads a band in full-width strips of whole blocks and reports
// whether it holds at most maxClasses distinct values (stopping as soon as
// it holds more).
func fewValues(ctx context.Context, b godal.Band, rec *recorder) (bool, error) {
	st := b.Structure()
	rows := max(st.BlockSizeY, 1)
	for rows*st.SizeX < 1<<20 && rows < st.SizeY {
		rows += max(st.BlockSizeY, 1)
	}
	rows = min(rows, st.SizeY)
	buf := make([]float64, rows*st.SizeX)
	seen := map[float64]struct{}{}
	for y := 0; y < st.SizeY; y += rows {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		h := min(rows, st.SizeY-y)
		if err := b.Read(0, y, buf[:h*st.SizeX], st.SizeX, h, godal.ErrLogger(rec.handle)); err != nil {
			return false, classify("gdal.Band.Read", err, "", fault.CorruptSource, "the raster cannot be read in full")
		}
		for _, v := range buf[:h*st.SizeX] {
			if _, ok := seen[v]; !ok {
				seen[v] = struct{}{}
				if len(seen) > maxClasses {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// overviewResampling is the resampling the overviews are built with: the
// recipe's, or for "auto" NEAREST on categorical data and AVERAGE on
// continuous data.
func overviewResampling(r convert.Recipe, categorical bool) string {
	res := r.WithDefaults().OverviewResampling
	if res != convert.ResamplingAuto {
		return res
	}
	if categorical {
		return convert.ResamplingNearest
	}
	return convert.ResamplingAverage
}
