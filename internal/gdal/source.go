package gdal

// Opening a source that internal/preflight has checked, and the two
// answers preflight needs from GDAL (probe).

import (
	"errors"
	"strings"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// outputDrivers are the GDAL drivers the engine writes with: COG for
// rasters, FlatGeobuf for vectors on request. GeoParquet is written in Go
// (internal/geoparquet), through no GDAL driver. The Lambda layer
// (layers/gdal/manifest.json) builds exactly these and the input drivers
// of internal/preflight.
const (
	cogDriver        = "COG"
	flatGeobufDriver = "FlatGeobuf"
)

var outputDrivers = []string{cogDriver, flatGeobufDriver}

// probe answers preflight's questions with GDAL.
type probe struct{}

var (
	_ preflight.Probe       = probe{}
	_ preflight.DriverProbe = probe{}
)

func (probe) Identify(path string, allowed, siblings []string) string {
	return identify(path, allowed, siblings)
}

func (probe) ParseCRS(wkt string) error {
	sr, err := godal.NewSpatialRefFromWKT(wkt, godal.ErrLogger(quietLogger))
	if err != nil {
		return err
	}
	sr.Close()
	return nil
}

// quietLogger fails a call on CE_Failure and drops warnings.
func quietLogger(ec godal.ErrorCategory, _ int, msg string) error {
	if ec >= godal.CE_Failure {
		return errors.New(msg)
	}
	return nil
}

// openSource fully opens a preflighted source with its identified driver
// only, and only the sibling files preflight named.
func openSource(s *preflight.Source, r recipe.Recipe, rec *recorder) (*godal.Dataset, error) {
	opts := []godal.OpenOption{godal.Drivers(s.Driver), rec.opt()}
	if len(s.Siblings) > 1 {
		opts = append(opts, godal.SiblingFiles(s.Siblings[1:]...))
	}
	if oo := openOptions(s.Driver, r); len(oo) > 0 {
		opts = append(opts, godal.DriverOpenOption(oo...))
	}
	ds, err := godal.Open(s.Path, opts...)
	if err != nil {
		return nil, classify("gdal.Open", err, "", fault.CorruptSource, "%s cannot open the source", s.Driver)
	}
	return ds, nil
}

// crsFixes is how a source without a CRS gets one, cheapest first: the
// first two leave the file as it is, so nothing is uploaded again, and
// both change the job (recipe hash, sidecar fingerprint), so the next run
// or a replay converts the refused file. GDAL's GeoTIFF driver reads a
// CRS from a .aux.xml, not from a .prj.
const crsFixes = `give it one without editing the file: a recipe rule matching it with assign_crs: "EPSG:xxxx", ` +
	`or a sidecar GDAL reads (NAME.aux.xml holding <PAMDataset><SRS>EPSG:xxxx</SRS></PAMDataset> beside a raster, NAME.prj beside a Shapefile), ` +
	`then migrate or replay again; or set it in the file (gdal_edit.py -a_srs EPSG:xxxx, ogr2ogr -a_srs EPSG:xxxx)`

// checkCRS requires a valid, georeferencing CRS.
func checkCRS(wkt string, what string, rec *recorder) error {
	if strings.TrimSpace(wkt) == "" {
		return fault.Data(fault.MissingCRS, "%s has no coordinate reference system; %s", what, crsFixes)
	}
	sr, err := godal.NewSpatialRefFromWKT(wkt, rec.opt())
	if err != nil {
		return fault.DataWrap(fault.InvalidCRS, err, "%s has a CRS that cannot be parsed", what)
	}
	defer sr.Close()
	if !sr.Geographic() && !sr.Projected() {
		return fault.Data(fault.InvalidCRS, "%s has a local/engineering CRS that does not locate it on Earth; reproject it to a geographic or projected CRS (EPSG) and upload again", what)
	}
	if err := sr.Validate(rec.opt()); err != nil {
		return fault.DataWrap(fault.InvalidCRS, err, "%s has an invalid CRS", what)
	}
	return nil
}

// HasDriver reports whether this GDAL has the driver name at all.
func (probe) HasDriver(name string) bool { return hasDriver(name) }

// openOptions are the open options a driver is given:
//   - GML: never write a .gfs schema beside the source (the driver does by
//     default, into the caller's directory), never download a schema
//     (the engine's settings also keep xlinks unresolved and every fetch
//     refused);
//   - CSV: the geometry columns the recipe names, which become the
//     geometry and leave the attributes (KEEP_GEOM_COLUMNS=NO); the other
//     columns stay text, as written (no type guessing: "007" stays "007").
func openOptions(driver string, r recipe.Recipe) []string {
	switch driver {
	case "GML":
		return []string{"WRITE_GFS=NO", "DOWNLOAD_SCHEMA=NO"}
	case "CSV":
		switch r.CSVGeometry {
		case recipe.CSVGeometryWKT:
			return []string{"GEOM_POSSIBLE_NAMES=" + r.CSVWKTColumn, "KEEP_GEOM_COLUMNS=NO"}
		case recipe.CSVGeometryXY:
			return []string{"X_POSSIBLE_NAMES=" + r.CSVXColumn, "Y_POSSIBLE_NAMES=" + r.CSVYColumn, "KEEP_GEOM_COLUMNS=NO"}
		}
	}
	return nil
}
