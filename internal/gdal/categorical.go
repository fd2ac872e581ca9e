package gdal

// Whether a raster is categorical, for overview resampling "auto"
// (recipe.Recipe.OverviewResamplingFor). A band is categorical when it says
// so (a colour table, a raster attribute table, category names) or when it
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
// it holds more). Only integer types up to 32 bits are scanned.
func fewValues(ctx context.Context, b godal.Band, rec *recorder) (bool, error) {
	switch b.Structure().DataType {
	case godal.Byte:
		return scanFew(ctx, b, rec, small[byte])
	case godal.Int8:
		return scanFew(ctx, b, rec, small[int8])
	case godal.UInt16:
		return scanFew(ctx, b, rec, small[uint16])
	case godal.Int16:
		return scanFew(ctx, b, rec, small[int16])
	case godal.UInt32:
		return scanFew(ctx, b, rec, wide[uint32])
	case godal.Int32:
		return scanFew(ctx, b, rec, wide[int32])
	}
	return false, nil
}

// A distinct-value counter: add reports false once more than maxClasses
// values have been seen.
type counter[T any] func(vs []T) bool

// small counts 8- and 16-bit values with a table indexed by their 16 bits.
func small[T byte | int8 | uint16 | int16]() counter[T] {
	var seen [1 << 16]bool
	n := 0
	return func(vs []T) bool {
		for _, v := range vs {
			if i := uint16(v); !seen[i] {
				seen[i] = true
				if n++; n > maxClasses {
					return false
				}
			}
		}
		return true
	}
}

// wide counts 32-bit values in a short list (at most maxClasses+1), with
// a fast path for runs of one value.
func wide[T uint32 | int32]() counter[T] {
	var seen []T
	var last T
	have := false
	return func(vs []T) bool {
	next:
		for _, v := range vs {
			if have && v == last {
				continue
			}
			last, have = v, true
			for _, s := range seen {
				if s == v {
					continue next
				}
			}
			if seen = append(seen, v); len(seen) > maxClasses {
				return false
			}
		}
		return true
	}
}

func scanFew[T byte | int8 | uint16 | int16 | uint32 | int32](ctx context.Context, b godal.Band, rec *recorder, newCounter func() counter[T]) (bool, error) {
	st := b.Structure()
	// Whole block rows of at least 64 Ki pixels: small enough that
	// continuous data is given up after its first few rows.
	rows := max(st.BlockSizeY, 1)
	for rows*st.SizeX < 1<<16 && rows < st.SizeY {
		rows += max(st.BlockSizeY, 1)
	}
	rows = min(rows, st.SizeY)
	buf := make([]T, rows*st.SizeX)
	add := newCounter()
	for y := 0; y < st.SizeY; y += rows {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		h := min(rows, st.SizeY-y)
		if err := b.Read(0, y, buf[:h*st.SizeX], st.SizeX, h, godal.ErrLogger(rec.handle)); err != nil {
			return false, classify("gdal.Band.Read", err, "", fault.CorruptSource, "the raster cannot be read in full")
		}
		if !add(buf[:h*st.SizeX]) {
			return false, nil
		}
	}
	return true, nil
}
