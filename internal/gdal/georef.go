package gdal

// Georeferencing beyond a geotransform: a raster is placed on Earth by a
// CRS and a geotransform, by ground control points (GCPs) in a CRS of
// their own, or by rational polynomial coefficients (RPCs, whose ground
// coordinates are WGS 84 by definition). The COG driver keeps all three
// (GCPs as GeoTIFF tie points, RPCs in the RPCCoefficientTag), so each is
// converted and compared (docs/decisions/0089).

import (
	"strings"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// georef is how a raster is placed on Earth.
type georef struct {
	geoTransform bool // a CRS and a geotransform
	gcps         int  // GCPs with a GCP CRS
	rpc          bool // an RPC metadata domain
}

// checkGeoreferencing requires a raster to be georeferenced one way or
// another, and what it has to be valid.
func checkGeoreferencing(ds *godal.Dataset, what string, rec *recorder) (georef, error) {
	var g georef
	g.rpc = len(ds.Metadatas(godal.Domain("RPC"))) > 0
	gcps := ds.GCPs()
	gcpWKT := strings.TrimSpace(ds.GCPProjection())
	if len(gcps) > 0 && gcpWKT != "" {
		if err := checkCRS(gcpWKT, what+" (its GCPs)", rec); err != nil {
			return g, err
		}
		g.gcps = len(gcps)
	}
	wkt := ds.Projection()
	gt, gtErr := ds.GeoTransform(rec.opt())
	switch {
	case strings.TrimSpace(wkt) != "":
		if err := checkCRS(wkt, what, rec); err != nil {
			return g, err
		}
		if gtErr != nil {
			if g.gcps > 0 || g.rpc {
				return g, nil
			}
			return g, fault.Data(fault.MissingCRS, "%s has a CRS but no geotransform, GCPs or RPCs: it is not georeferenced", what)
		}
		if err := checkGeoTransform(gt, what); err != nil {
			return g, err
		}
		g.geoTransform = true
	case g.gcps > 0 || g.rpc:
		// GCPs or RPCs alone: no CRS for the raster grid itself.
	case len(gcps) > 0:
		return g, fault.Data(fault.MissingCRS, "%s has %d GCPs but no CRS for them, and no other georeferencing; give them one in a NAME.aux.xml sidecar (<PAMDataset><GCPList Projection=\"EPSG:xxxx\">…) or in the file (gdal_edit.py -a_srs EPSG:xxxx), then migrate or replay again", what, len(gcps))
	default:
		return g, fault.Data(fault.MissingCRS, "%s has no coordinate reference system; %s", what, crsFixes)
	}
	return g, nil
}
