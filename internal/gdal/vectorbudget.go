package gdal

// The GDAL side of the vector memory budget (internal/budget): the
// declared feature count and WKB size that only GDAL can
// tell, GDAL's refusal of a GeoJSON object over OGR_GEOJSON_MAX_OBJ_SIZE,
// and the thread-local configuration that sets that limit.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <ogr_api.h>
#include <cpl_conv.h>
*/
import "C"

import (
	"errors"
	"reflect"
	"strings"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// declaredFeatureCount is the layer's feature count when the driver knows
// it without reading the features (OGR_L_GetFeatureCount, force=FALSE),
// -1 otherwise.
func declaredFeatureCount(l godal.Layer) int64 {
	return int64(C.OGR_L_GetFeatureCount(C.OGRLayerH(unsafe.Pointer(layerHandle(l))), 0))
}

// wkbSize is the size of a geometry as WKB, without exporting it.
func wkbSize(g *godal.Geometry) int64 {
	h := reflect.ValueOf(g).Elem().FieldByName("handle")
	return int64(C.OGR_G_WkbSizeEx(C.OGRGeometryH(unsafe.Pointer(h.Pointer()))))
}

// geoJSONTooLarge is GDAL's message for a GeoJSON object over the limit.
const geoJSONTooLarge = "GeoJSON object too complex/large"

// geoJSONObjectError turns GDAL's refusal of a GeoJSON feature over
// OGR_GEOJSON_MAX_OBJ_SIZE into BudgetExceeded; nil for other errors.
func geoJSONObjectError(err error, maxMemory int64) error {
	if err == nil || !strings.Contains(err.Error(), geoJSONTooLarge) {
		return nil
	}
	var ge *gdalError
	if errors.As(err, &ge) {
		err = ge
	}
	return fault.DataWrap(fault.BudgetExceeded, err,
		"a GeoJSON feature would take more than %s MB once parsed (GDAL parses each feature whole, at about 24 times its text) under the memory budget (max_memory %s): split the feature or convert the file to a Shapefile, GeoPackage or FlatGeobuf first, or give the conversion more memory",
		budget.GeoJSONObjectLimit(maxMemory), budget.FormatBytes(maxMemory))
}

// setThreadConfig sets a GDAL configuration option for the calling OS
// thread only (the caller holds runtime.LockOSThread, as Convert does) and
// returns the function that restores its previous value.
func setThreadConfig(key, value string) (restore func()) {
	k := C.CString(key)
	old := C.CPLGetThreadLocalConfigOption(k, nil)
	var prev *C.char
	if old != nil {
		prev = C.CString(C.GoString(old))
	}
	v := C.CString(value)
	C.CPLSetThreadLocalConfigOption(k, v)
	C.free(unsafe.Pointer(v))
	return func() {
		C.CPLSetThreadLocalConfigOption(k, prev)
		C.free(unsafe.Pointer(k))
		if prev != nil {
			C.free(unsafe.Pointer(prev))
		}
	}
}
