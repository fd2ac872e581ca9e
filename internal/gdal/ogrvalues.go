package gdal

// The Go side of ogrvalues.h: the C block a feature reader fills with one
// feature's values, and their conversion into the writer's values. The
// GeoParquet writer's reader (ogrSource) and the FlatGeobuf check's
// (fgbDigest) share it, so both read a field alike.

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include "ogrvalues.h"
*/
import "C"

import (
	"unsafe"

	"github.com/geomigrate/geomigrate/internal/geoparquet"
)

// ogrValues is one C allocation holding, per field, the index and kind a
// reader reads it by and the slot it reads its value into; the reader
// keeps pointers into it between calls.
type ogrValues struct {
	mem   unsafe.Pointer
	index []C.int
	kind  []C.int
	vals  []C.gm_value
}

// newOGRValues allocates the block for fields (nil when out of memory).
func newOGRValues(fields []ogrField) *ogrValues {
	n := len(fields)
	const intSize = int(unsafe.Sizeof(C.int(0)))
	mem := C.calloc(C.size_t(max(n, 1)), C.size_t(2*intSize+int(unsafe.Sizeof(C.gm_value{}))))
	if mem == nil {
		return nil
	}
	v := &ogrValues{
		mem:   mem,
		index: unsafe.Slice((*C.int)(mem), n),
		kind:  unsafe.Slice((*C.int)(unsafe.Add(mem, n*intSize)), n),
		vals:  unsafe.Slice((*C.gm_value)(unsafe.Add(mem, 2*n*intSize)), n),
	}
	for i, f := range fields {
		v.index[i], v.kind[i] = f.index, valueKind(f)
	}
	return v
}

// pointers are what a C reader struct takes: the field count and the
// first index, kind and value (nil for no fields).
func (v *ogrValues) pointers() (n C.int, index, kind *C.int, vals *C.gm_value) {
	if len(v.vals) == 0 {
		return 0, nil, nil, (*C.gm_value)(v.mem)
	}
	return C.int(len(v.vals)), &v.index[0], &v.kind[0], &v.vals[0]
}

func (v *ogrValues) free() {
	if v != nil {
		C.free(v.mem)
	}
}

// read is field i's value as the reader read it: nil when the field is
// null or unset; ok false when the reader left it to fieldValue
// (FK_OTHER: dates, lists, binary, fields written as text).
func (v *ogrValues) read(i int, fd ogrField) (x any, ok bool) {
	s := &v.vals[i]
	if s.set == 0 {
		return nil, true
	}
	switch k := v.kind[i]; {
	case k == C.FK_INT && fd.out == geoparquet.Bool:
		return s.i != 0, true
	case k == C.FK_INT:
		return int32(s.i), true
	case k == C.FK_INT64:
		return int64(s.i), true
	case k == C.FK_REAL:
		return float64(s.d), true
	case k == C.FK_STRING:
		// Bytes as stored: the writer refuses text that is not UTF-8.
		return C.GoString(s.s), true
	}
	return nil, false
}

// valueKind is what a feature reader reads of a field itself: the values
// fieldValue reads with one OGR call and converts without another.
func valueKind(f ogrField) C.int {
	if f.asText {
		return C.FK_OTHER
	}
	switch f.out {
	case geoparquet.Int32, geoparquet.Bool:
		return C.FK_INT
	case geoparquet.Int64:
		return C.FK_INT64
	case geoparquet.Float64:
		return C.FK_REAL
	case geoparquet.String:
		return C.FK_STRING
	}
	return C.FK_OTHER
}
