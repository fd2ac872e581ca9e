package gdal

// A recipe's assign_crs: the CRS given to a source that declares none,
// without an edit of the source (gdal_translate / ogr2ogr -a_srs). A
// source that declares a CRS keeps it when it is the same one and is
// refused when it differs: a glob written for files without a CRS must
// not re-georeference those that have one (docs/decisions/0092).

/*
#include <ogr_srs_api.h>
*/
import "C"

import (
	"fmt"
	"strings"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// assignedSRS is the recipe's assign_crs as a spatial reference, in the
// traditional GIS axis order: the data's x is the easting or longitude,
// as ogr2ogr -a_srs and gdal_translate -a_srs take it. An unknown code is
// the recipe's fault, not the source's.
func assignedSRS(code string) (*godal.SpatialRef, error) {
	sr, err := godal.NewSpatialRef(code, godal.ErrLogger(quietLogger))
	if err != nil {
		return nil, fault.Systemic("gdal.assignCRS", fmt.Errorf("assign_crs %s is unknown to PROJ: %w", code, err))
	}
	C.OSRSetAxisMappingStrategy(spatialRefHandle(sr), C.OAMS_TRADITIONAL_GIS_ORDER)
	return sr, nil
}

// checkDeclaredCRS is the refusal of an assign_crs over a CRS the source
// declares, when the two differ.
func checkDeclaredCRS(declared *godal.SpatialRef, code, what string) error {
	want, err := assignedSRS(code)
	if err != nil {
		return err
	}
	defer want.Close()
	if declared.IsSame(want) {
		return nil
	}
	name := "its own"
	if wkt, err := declared.WKT(); err == nil {
		name = crsName(wkt)
	}
	return fault.Data(fault.InvalidInput,
		"%s declares a CRS (%s) and the recipe's assign_crs is %s: assign_crs is only for sources without one; narrow the rule's glob to the files that lack a CRS, or correct the source's CRS (gdal_edit.py / ogr2ogr -a_srs) and upload it again",
		what, name, code)
}

// crsName is the name in a WKT's first quotes ("WGS 84"), else the WKT's
// start.
func crsName(wkt string) string {
	if _, rest, ok := strings.Cut(wkt, `"`); ok {
		if name, _, ok := strings.Cut(rest, `"`); ok {
			return name
		}
	}
	return clip(wkt, 40)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// assignRasterCRS applies r.AssignCRS to a raster: ds itself when it has
// no assign_crs or declares the same CRS, else a virtual copy of ds with
// the CRS (which the caller closes, and which stands for the source from
// then on: the COG is written from it and compared with it). The source
// file is never written to (no .aux.xml beside it).
func assignRasterCRS(ds *godal.Dataset, r recipe.Recipe, what string, rec *recorder) (*godal.Dataset, bool, error) {
	if r.AssignCRS == "" {
		return ds, false, nil
	}
	if wkt := strings.TrimSpace(ds.Projection()); wkt != "" {
		declared, err := godal.NewSpatialRefFromWKT(wkt, godal.ErrLogger(quietLogger))
		if err != nil {
			return nil, false, fault.DataWrap(fault.InvalidCRS, err, "%s has a CRS that cannot be parsed", what)
		}
		defer declared.Close()
		return ds, false, checkDeclaredCRS(declared, r.AssignCRS, what)
	}
	// GCPs with their CRS, or RPCs, georeference the raster already: a CRS
	// given to its grid would contradict them.
	if (len(ds.GCPs()) > 0 && strings.TrimSpace(ds.GCPProjection()) != "") || len(ds.Metadatas(godal.Domain("RPC"))) > 0 {
		rec.warn(fmt.Sprintf("%s is georeferenced by its GCPs or RPCs: assign_crs %s not applied", what, r.AssignCRS))
		return ds, false, nil
	}
	sr, err := assignedSRS(r.AssignCRS)
	if err != nil {
		return nil, false, err
	}
	sr.Close()
	vrt, err := ds.Translate("", []string{"-of", "VRT", "-a_srs", r.AssignCRS}, rec.opt())
	if err != nil {
		return nil, false, classify("gdal.Translate(-a_srs)", err, "", fault.CorruptSource, "%s cannot be given the CRS %s", what, r.AssignCRS)
	}
	rec.warn(fmt.Sprintf("%s declares no CRS: assigned %s (recipe assign_crs)", what, r.AssignCRS))
	return vrt, true, nil
}

// layerSRS is the CRS a layer's output is written with: its own, or the
// recipe's assign_crs when it has none (assigned: the caller closes it).
func layerSRS(l godal.Layer, r recipe.Recipe) (sr *godal.SpatialRef, assigned bool, err error) {
	if own := l.SpatialRef(); own != nil && !isNullHandle(own) {
		return own, false, nil
	}
	if r.AssignCRS == "" {
		return nil, false, nil
	}
	sr, err = assignedSRS(r.AssignCRS)
	return sr, err == nil, err
}
