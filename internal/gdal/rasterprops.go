package gdal

// The raster fidelity check beyond pixels (docs/decisions/0089):
// georeferencing by geotransform, GCPs or RPCs; masks (per dataset, per
// band, alpha) pixel by pixel; metadata domains; and each band's colour
// table, scale/offset, unit, description and colour interpretation.
//
// Georeferencing and masks are held by a COG: an output that lost or
// changed them was altered on our side (SystemicError, like pixels). The
// other properties are named in a warning when they do not come back the
// same, because the COG cannot hold some of them (metadata domains other
// than the default one and RPC, per-band masks, GCP identifiers).

/*
#cgo pkg-config: gdal
#include <gdal.h>
#include <cpl_string.h>

static double gm_scale(GDALRasterBandH b, int *ok) { return GDALGetRasterScale(b, ok); }
static double gm_offset(GDALRasterBandH b, int *ok) { return GDALGetRasterOffset(b, ok); }
static const char *gm_unit(GDALRasterBandH b) { return GDALGetRasterUnitType(b); }
static CPLErr gm_read_mask_rows(GDALRasterBandH b, int y, int w, int h, void *buf) {
	return GDALRasterIO(b, GF_Read, 0, y, w, h, buf, w, h, GDT_Byte, 0, 0);
}
static char **gm_file_list(GDALDatasetH ds) { return GDALGetFileList(ds); }
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// GDAL mask flags (gdal.h GMF_*).
const (
	maskAllValid   = 0x01
	maskPerDataset = 0x02
	maskAlpha      = 0x04
	maskNoData     = 0x08
)

// notComparedDomains are metadata domains that describe how a file is
// stored or derived, not its content.
var notComparedDomains = map[string]bool{
	"IMAGE_STRUCTURE": true, "DERIVED_SUBDATASETS": true, "SUBDATASETS": true,
	"RPC": true, // compared as georeferencing
	// JPEG 2000's GMLJP2 box: how that format stores the georeferencing,
	// which is compared as such.
	"xml:gml.root-instance": true,
}

// datasetHandle is the GDALDatasetH of a godal Dataset (a struct holding
// only the handle, like a Band: bandHandle).
func datasetHandle(ds *godal.Dataset) C.GDALDatasetH {
	return *(*C.GDALDatasetH)(unsafe.Pointer(ds))
}

// sameGeoreferencing compares the geotransform and CRS, the GCPs and their
// CRS, and the RPCs of src and out; it returns the checks it made.
func sameGeoreferencing(src, out *godal.Dataset, what string, rec *recorder, altered func(string, ...any) error) ([]string, error) {
	var checks []string
	sgt, serr := src.GeoTransform(rec.opt())
	ogt, oerr := out.GeoTransform(rec.opt())
	switch {
	case serr == nil && (oerr != nil || !sameGeoTransform(sgt, ogt)):
		return nil, altered("geotransform %v written as %v", sgt, ogt)
	case serr != nil && oerr == nil:
		return nil, altered("a raster without a geotransform written with %v", ogt)
	case serr == nil:
		checks = append(checks, "geotransform")
	}
	if err := sameCRS(src.Projection(), out.Projection(), what); err != nil {
		return nil, err
	}
	if src.Projection() != "" {
		checks = append(checks, "crs")
	}
	sg, og := src.GCPs(), out.GCPs()
	switch {
	case len(sg) > 0 && len(og) == 0 && serr == nil:
		// GeoTIFF holds either a geotransform or tie points, not both.
		rec.warn(fmt.Sprintf("%s: its %d GCPs are not carried: a GeoTIFF holds either a geotransform or GCPs, and the geotransform was kept", what, len(sg)))
	case len(sg) != len(og):
		return nil, altered("%d GCPs written as %d", len(sg), len(og))
	case len(sg) > 0:
		ids := false
		for i := range sg {
			a, b := sg[i], og[i]
			if a.DfGCPPixel != b.DfGCPPixel || a.DfGCPLine != b.DfGCPLine || a.DfGCPX != b.DfGCPX || a.DfGCPY != b.DfGCPY || a.DfGCPZ != b.DfGCPZ {
				return nil, altered("GCP %d (pixel %v, line %v → %v, %v, %v) written as (pixel %v, line %v → %v, %v, %v)", i+1,
					a.DfGCPPixel, a.DfGCPLine, a.DfGCPX, a.DfGCPY, a.DfGCPZ, b.DfGCPPixel, b.DfGCPLine, b.DfGCPX, b.DfGCPY, b.DfGCPZ)
			}
			ids = ids || a.PszId != b.PszId || a.PszInfo != b.PszInfo
		}
		if err := sameCRS(src.GCPProjection(), out.GCPProjection(), what+" (its GCPs)"); err != nil {
			return nil, err
		}
		if ids {
			rec.warn(fmt.Sprintf("%s: the identifiers and descriptions of its GCPs are not carried (GeoTIFF tie points hold none); their pixel, line, x, y and z are", what))
		}
		checks = append(checks, "gcps", "gcp_crs")
	}
	srpc := src.Metadatas(godal.Domain("RPC"))
	orpc := out.Metadatas(godal.Domain("RPC"))
	if len(srpc) > 0 {
		if len(orpc) == 0 {
			return nil, altered("its RPCs are missing")
		}
		var lost []string
		for k, v := range srpc {
			w, ok := orpc[k]
			switch {
			case !ok:
				lost = append(lost, k)
			case !sameNumbers(v, w):
				return nil, altered("RPC %s %q written as %q", k, v, w)
			}
		}
		if len(lost) > 0 {
			sort.Strings(lost)
			rec.warn(fmt.Sprintf("%s: RPC items %s are not carried (the GeoTIFF RPC tag holds only the coefficients, offsets, scales and errors)", what, strings.Join(lost, ", ")))
		}
		checks = append(checks, "rpc")
	}
	return checks, nil
}

// sameNumbers compares two metadata values as lists of numbers when both
// are, else as text. The GeoTIFF RPC tag holds each number as the double
// GDAL parsed from the source's text, and GDAL reads it back printed with
// 15 significant digits ("%.15g"): numbers are compared at those digits,
// all that a reader of the COG through GDAL can see.
func sameNumbers(a, b string) bool {
	if a == b {
		return true
	}
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		x, err1 := strconv.ParseFloat(fa[i], 64)
		y, err2 := strconv.ParseFloat(fb[i], 64)
		x, y = digits15(x), digits15(y)
		if err1 != nil || err2 != nil || (x != y && !(math.IsNaN(x) && math.IsNaN(y))) {
			return false
		}
	}
	return true
}

func digits15(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	return r
}

// metadataOwner is what holds metadata domains: a dataset or a band.
type metadataOwner interface {
	MetadataDomains() []string
	Metadatas(opts ...godal.MetadataOption) map[string]string
}

// sameMetadata compares every metadata domain of src (and of each band)
// with out's; each item not carried, or carried with another value, is
// named in a warning. It reports whether all came back the same.
func sameMetadata(src, out *godal.Dataset, what string, rec *recorder) bool {
	same := sameDomains(src, out, what, rec)
	sb, ob := src.Bands(), out.Bands()
	for i := range sb {
		same = sameDomains(sb[i], ob[i], fmt.Sprintf("%s, band %d", what, i+1), rec) && same
	}
	return same
}

func sameDomains(src, out metadataOwner, what string, rec *recorder) bool {
	// IMAGERY is derived from sidecars (IMD, XML …) and is not always
	// listed among the domains.
	domains := append(src.MetadataDomains(), "IMAGERY")
	sort.Strings(domains)
	domains = slices.Compact(domains)
	same := true
	for _, d := range domains {
		if notComparedDomains[d] {
			continue
		}
		sm := src.Metadatas(godal.Domain(d))
		if len(sm) == 0 {
			continue
		}
		om := out.Metadatas(godal.Domain(d))
		var lost, changed []string
		for k, v := range sm {
			w, ok := om[k]
			switch {
			case !ok:
				lost = append(lost, k)
			case v != w:
				changed = append(changed, fmt.Sprintf("%s %q → %q", k, v, w))
			}
		}
		name := "the default metadata domain"
		if d != "" {
			name = "metadata domain " + d
		}
		switch {
		case len(om) == 0:
			rec.warn(fmt.Sprintf("%s: %s (%d items) is not carried: the COG cannot hold it", what, name, len(sm)))
			same = false
		case len(lost) > 0 || len(changed) > 0:
			sort.Strings(lost)
			sort.Strings(changed)
			msg := fmt.Sprintf("%s: %s is not carried whole:", what, name)
			if len(lost) > 0 {
				msg += " items " + strings.Join(lost, ", ") + " are missing"
			}
			if len(changed) > 0 {
				if len(lost) > 0 {
					msg += ";"
				}
				msg += " items changed: " + strings.Join(changed, ", ")
			}
			rec.warn(msg)
			same = false
		}
	}
	return same
}

// sameBandProperties compares each band's colour table, scale and offset,
// unit, description and colour interpretation; a difference is named in
// a warning. It returns the checks that found no difference.
func sameBandProperties(src, out *godal.Dataset, what string, rec *recorder) []string {
	sb, ob := src.Bands(), out.Bands()
	diff := map[string]bool{}
	note := func(check string, i int, format string, args ...any) {
		diff[check] = true
		rec.warn(fmt.Sprintf("%s, band %d: %s", what, i+1, fmt.Sprintf(format, args...)))
	}
	for i := range sb {
		s, o := sb[i], ob[i]
		sct, oct := s.ColorTable(), o.ColorTable()
		if len(sct.Entries) != len(oct.Entries) || !slices.Equal(sct.Entries, oct.Entries) {
			note("colour_table", i, "its colour table (%d entries) is written with %d entries or other colours", len(sct.Entries), len(oct.Entries))
		}
		var sok, ook C.int
		ss, os := C.gm_scale(bandHandle(s), &sok), C.gm_scale(bandHandle(o), &ook)
		sof, oof := C.gm_offset(bandHandle(s), &sok), C.gm_offset(bandHandle(o), &ook)
		if ss != os || sof != oof {
			note("scale_offset", i, "scale %v and offset %v are written as %v and %v", float64(ss), float64(sof), float64(os), float64(oof))
		}
		if su, ou := C.GoString(C.gm_unit(bandHandle(s))), C.GoString(C.gm_unit(bandHandle(o))); su != ou {
			note("unit", i, "unit %q is written as %q", su, ou)
		}
		if sd, od := s.Description(), o.Description(); sd != od {
			note("description", i, "description %q is written as %q", sd, od)
		}
		// A one-band GeoTIFF has no "undefined" photometric: such a band
		// reads back as grey.
		if sc, oc := s.ColorInterp(), o.ColorInterp(); sc != oc && !(sc == godal.CIUndefined && oc == godal.CIGray) {
			note("colour_interpretation", i, "colour interpretation %s is written as %s", sc.Name(), oc.Name())
		}
	}
	var checks []string
	for _, c := range []string{"colour_table", "scale_offset", "unit", "description", "colour_interpretation"} {
		if !diff[c] {
			checks = append(checks, c)
		}
	}
	return checks
}

// sameMasks compares the mask of every band of src with out's: the same
// kind (all valid, nodata, alpha, per dataset, per band) and, for a mask
// held as pixels (per dataset or per band), the same mask values, read in
// strips of rows within checkStripBytes. A per-dataset mask is compared
// once. The COG holds one mask per dataset: a source's per-band masks are
// written as it, which is named in a warning when they differ.
//
// assignedNoData: the recipe gave every band a nodata value, so a band
// that had no mask of its own has one from nodata in the output.
func sameMasks(ctx context.Context, src, out *godal.Dataset, assignedNoData bool, what string, rec *recorder, altered func(string, ...any) error) (string, error) {
	sb, ob := src.Bands(), out.Bands()
	st := src.Structure()
	checked := false
	for i := range sb {
		sf, of := sb[i].MaskFlags(), ob[i].MaskFlags()
		if assignedNoData && sf&(maskAllValid|maskNoData) != 0 {
			sf = maskNoData
		}
		stored := sf&(maskAllValid|maskNoData|maskAlpha) == 0 // mask pixels of their own
		perBand := stored && sf&maskPerDataset == 0
		if sf != of && !perBand {
			return "", altered("band %d mask %s written as %s", i+1, maskKind(sf), maskKind(of))
		}
		if !stored || (sf&maskPerDataset != 0 && i > 0) {
			continue
		}
		differ, err := sameMaskPixels(ctx, sb[i].MaskBand(), ob[i].MaskBand(), st.SizeX, st.SizeY)
		if err != nil {
			return "", fault.Systemic("gdal.fidelity", fmt.Errorf("%s: band %d mask: %w", what, i+1, err))
		}
		switch {
		case differ >= 0 && perBand:
			rec.warn(fmt.Sprintf("%s: band %d has a mask of its own, which a COG cannot hold (one mask for all bands): %d of its pixels are valid in the output's mask and not in the source's, or the reverse", what, i+1, differ))
		case differ >= 0:
			return "", altered("band %d mask: %d pixels differ", i+1, differ)
		case perBand && sf != of:
			rec.warn(fmt.Sprintf("%s: band %d's own mask is written as the output's mask for all bands (same pixels)", what, i+1))
		}
		checked = true
	}
	if !checked {
		return "mask_flags", nil
	}
	return "masks", nil
}

// sameMaskPixels counts the pixels whose validity differs between two
// mask bands (-1 when none), reading them as Byte strips of rows.
func sameMaskPixels(ctx context.Context, a, b godal.Band, w, h int) (int64, error) {
	rows := max(1, min(h, checkStripBytes/max(1, w)))
	abuf, bbuf := make([]byte, w*rows), make([]byte, w*rows)
	differ := int64(-1)
	for y := 0; y < h; y += rows {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := min(rows, h-y)
		if C.gm_read_mask_rows(bandHandle(a), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&abuf[0])) != C.CE_None {
			return 0, fmt.Errorf("the source's mask cannot be read at rows %d–%d: %s", y, y+n-1, lastErrorMsg())
		}
		if C.gm_read_mask_rows(bandHandle(b), C.int(y), C.int(w), C.int(n), unsafe.Pointer(&bbuf[0])) != C.CE_None {
			return 0, fmt.Errorf("the output's mask cannot be read at rows %d–%d: %s", y, y+n-1, lastErrorMsg())
		}
		if bytes.Equal(abuf[:w*n], bbuf[:w*n]) {
			continue
		}
		// A mask is 0 (invalid) or not; GDAL reads 255 for valid.
		for k := range w * n {
			if (abuf[k] == 0) != (bbuf[k] == 0) {
				differ = max(differ, 0) + 1
			}
		}
	}
	return differ, nil
}

// perBandMasks: some band has a mask of its own (neither per dataset,
// nor alpha, nodata or all valid).
func perBandMasks(ds *godal.Dataset) bool {
	for _, b := range ds.Bands() {
		if b.MaskFlags() == 0 {
			return true
		}
	}
	return false
}

func maskKind(flags int) string {
	switch {
	case flags&maskAllValid != 0:
		return "all valid"
	case flags&maskNoData != 0:
		return "from nodata"
	case flags&maskAlpha != 0:
		return "alpha band"
	case flags&maskPerDataset != 0:
		return "per dataset"
	}
	return "per band"
}

// besideOutput lists the files GDAL associates with the dataset at dst
// other than dst itself (a PAM .aux.xml, an .IMD or .RPB sidecar).
func besideOutput(ds *godal.Dataset, dst string) []string {
	list := C.gm_file_list(datasetHandle(ds))
	if list == nil {
		return nil
	}
	defer C.CSLDestroy(list)
	var out []string
	for p := list; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		f := C.GoString(*p)
		if filepath.Clean(f) != filepath.Clean(dst) {
			out = append(out, f)
		}
	}
	return out
}
