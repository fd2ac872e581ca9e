package main

// The real-archives corpus: one case per class of file found in agency
// deliveries and public GIS test suites, each generated in the test with
// GDAL's own tools (realarchives_corpus_test.go), and the end each must reach
// through `geomigrate migrate`. This table is the one place that names
// expected statuses, codes, warning words, fidelity checks and recipe
// options: adjust it here when a name changes.

// fileWant is the end one source file must reach.
type fileWant struct {
	// Status is the report's files[].status; "sidecar" means the key must
	// not be a job of its own: absent from the report, or listed as
	// ignored, and never written.
	Status string
	// Code is files[].code of a routed file.
	Code string
	// Message holds words files[].message (or the hint) must contain, e.g.
	// a clash's partner.
	Message []string
	// Warn holds words some warning of the file must contain (case
	// folded), each; WarnAny: at least one of them.
	Warn    []string
	WarnAny []string
	// Checks must all appear in the file's files[].fidelity[].checks.
	Checks []string
	// Allow maps a property the outside judge may find different (its
	// name, or a prefix ending in ":") to the words a warning must contain
	// for that difference to be accepted (an entry without words: never
	// accepted, warned or not). Without an entry a difference is
	// accepted only when a warning names the property's last segment
	// (a field's name, a metadata domain, "mask", "GCP" ...), and never for
	// geometries.
	Allow map[string][]string
	// Judge: how the outside judge opens the source: a GDAL dataset name
	// relative to the case's source directory ("" = the key itself); Open
	// are OGR open options for it.
	Judge string
	Open  []string
	// AssignCRS: the judge reads the source as having this CRS (a recipe's
	// assign_crs supplies it).
	AssignCRS string
	// STAC words the file's STAC item must contain.
	STAC []string
}

// archiveCase is one class of the corpus.
type archiveCase struct {
	Name  string // subtest name
	Class string // the class of the list it proves
	// Make writes the case's files into dir (the migration's source).
	Make func(g *gen, dir string)
	// Recipe is a recipe file's YAML ("" = none).
	Recipe string
	// Plan holds words `geomigrate plan` must print before the migration
	// (every clash, in one pass).
	Plan []string
	// Files: every key of the source the report must show, and its end.
	Files map[string]fileWant
	// Pending names what the case waits for while its feature is on
	// another branch: its failures are logged, not failed, and a pending
	// case that passes fails, so the mark is removed when the work lands.
	Pending string
}

const (
	pendClash   = "clash routing and sidecar classification"
	pendRaster  = "raster masks, GCP, RPC, overviews and raster fidelity"
	pendVector  = "vector M/ZM, curves, repair policy, all-null geometries and value fidelity"
	pendValues  = "vector timestamps, list fields and NoGeometry"
	pendFormats = "archive budgets, refusal messages, new formats and assign_crs"
)

var archiveCases = []archiveCase{
	// ---- what already converts: the harness proven on ordinary files ----
	{
		Name: "ordinary_geotiff", Class: "ordinary GeoTIFF (nodata, scale/offset, units, descriptions, metadata, colour table)",
		Make: makeOrdinaryGeoTIFF,
		Files: map[string]fileWant{
			"dem.tif":     {Status: "completed", Checks: []string{"pixels", "nodata", "crs", "geotransform"}},
			"classes.tif": {Status: "completed", Checks: []string{"pixels", "crs", "geotransform"}},
		},
	},
	{
		Name: "ordinary_geopackage", Class: "ordinary GeoPackage, two layers → GeoParquet",
		Make: makeOrdinaryGeoPackage,
		Files: map[string]fileWant{
			"places.gpkg": {Status: "completed", Checks: []string{"features", "fields"}},
		},
	},
	{
		Name: "geopackage_to_flatgeobuf", Class: "ordinary GeoPackage → FlatGeobuf (OGR reads both sides)",
		Make:   makeOrdinaryGeoPackage,
		Recipe: "version: 1\ndefaults:\n  vector:\n    format: FlatGeobuf\n",
		Files: map[string]fileWant{
			"places.gpkg": {Status: "completed", Checks: []string{"features", "fields"}},
		},
	},
	{
		Name: "shapefile", Class: "shapefile with .prj, .dbf and .cpg (UTF-8 attributes)",
		Make: makeShapefile,
		Files: map[string]fileWant{
			"communes.shp": {Status: "completed", Checks: []string{"features", "fields"}},
			"communes.shx": {Status: "sidecar"}, "communes.dbf": {Status: "sidecar"},
			"communes.prj": {Status: "sidecar"}, "communes.cpg": {Status: "sidecar"},
		},
	},
	{
		Name: "missing_crs", Class: "missing CRS without a recipe rule (the remediation assign_crs answers)",
		Make: makeNoCRS,
		Files: map[string]fileWant{
			"scan.tif": {Status: "remediation", Code: "MissingCRS"},
		},
	},

	// ---- sidecars and georeferencing ----
	{
		// On main the PAM's own metadata domain is lost without a warning.
		Name: "pam_and_external_overviews", Class: "GDAL PAM .aux.xml (metadata, scale/offset, a domain) and external .ovr", Pending: pendRaster,
		Make: makePAM,
		Files: map[string]fileWant{
			"survey.tif":         {Status: "completed", Checks: []string{"pixels"}},
			"survey.tif.aux.xml": {Status: "sidecar"},
			"survey.tif.ovr":     {Status: "sidecar"},
		},
	},
	{
		Name: "world_file", Class: "geotransform from a world file (.tfw) beside a TIFF",
		Make: makeWorldFile,
		Files: map[string]fileWant{
			"plan.tif": {Status: "completed", Checks: []string{"crs", "geotransform"}},
			"plan.tfw": {Status: "sidecar"},
		},
	},
	{
		Name: "external_mask", Class: "external mask (.tif + .tif.msk)", Pending: pendRaster,
		Make: makeExternalMask,
		Files: map[string]fileWant{
			"ortho.tif":     {Status: "completed", Checks: []string{"pixels", "mask"}},
			"ortho.tif.msk": {Status: "sidecar"},
		},
	},
	{
		Name: "digitalglobe_sidecars", Class: "DigitalGlobe metadata sidecars (.IMD, .RPB, .XML)", Pending: pendClash + "; " + pendRaster,
		Make: makeDigitalGlobe,
		Files: map[string]fileWant{
			"scene.tif": {Status: "completed", Checks: []string{"pixels", "metadata"}},
			"scene.IMD": {Status: "sidecar"}, "scene.RPB": {Status: "sidecar"}, "scene.XML": {Status: "sidecar"},
		},
	},
	{
		Name: "gcps", Class: "GCP-georeferenced raster (210 GCPs, GCP CRS, no geotransform)", Pending: pendRaster,
		Make: makeGCPs,
		Files: map[string]fileWant{
			"gcps.tif": {Status: "completed", Checks: []string{"pixels", "gcps"}},
		},
	},
	{
		Name: "rpc", Class: "RPC-georeferenced raster", Pending: pendRaster,
		Make: makeRPC,
		Files: map[string]fileWant{
			"rpc.tif": {Status: "completed", Checks: []string{"pixels", "rpc"}},
		},
	},
	{
		// Converts on main already (a valid COG, pixels equal): kept as the
		// guard that such a source never reaches the DLQ.
		Name: "unsorted_overviews", Class: "internal overviews not sorted by size (a data outcome, never the DLQ)",
		Make: makeUnsortedOverviews,
		Files: map[string]fileWant{
			"ovr.tif": {Status: "completed", Checks: []string{"pixels"}},
		},
	},

	// ---- geometries ----
	{
		Name: "linestring_zm", Class: "LineString ZM layer (M values kept in GeoParquet)", Pending: pendVector,
		Make: makeLineStringZM,
		Files: map[string]fileWant{
			"tracks.gpkg": {Status: "completed", Checks: []string{"features", "geometries"}},
		},
	},
	{
		Name: "curves", Class: "curve geometries (CircularString, CurvePolygon, MultiSurface) refused by default", Pending: pendVector,
		Make: makeCurves,
		Files: map[string]fileWant{
			"curves.gpkg": {Status: "remediation", Code: "CurveGeometry", Message: []string{"FlatGeobuf"}},
		},
	},
	{
		Name: "curves_linearized", Class: "curve geometries linearised on a recipe's request", Pending: pendVector,
		Make:   makeCurves,
		Recipe: "version: 1\nrules:\n  - match: \"**\"\n    vector:\n      curves: linearize\n      curve_step_degrees: 1\n",
		Files: map[string]fileWant{
			"curves.gpkg": {Status: "completed", Warn: []string{"lineari"}, Allow: map[string][]string{"geometry": {"lineari"}, "geometry:": {"lineari"}}},
		},
	},
	{
		Name: "invalid_polygons", Class: "invalid polygons (bow-tie) kept unchanged by default, counted in a warning", Pending: pendVector,
		Make: makeInvalidPolygons,
		Files: map[string]fileWant{
			"bowtie.gpkg": {Status: "completed", Warn: []string{"invalid"}},
		},
	},
	{
		Name: "invalid_polygons_repaired", Class: "invalid polygons repaired on request, the layer's geometry type unchanged", Pending: pendVector,
		Make:   makeInvalidPolygons,
		Recipe: "version: 1\ndefaults:\n  vector:\n    geometry_policy: repair\n",
		Files: map[string]fileWant{
			// A repaired polygon is another geometry (allowed, warned); a
			// changed layer type (geometry_type) never is.
			"bowtie.gpkg": {Status: "completed", Warn: []string{"repair"}, Allow: map[string][]string{"geometry": {"repair"}, "geometry:type": nil, "geometry_type": nil}},
		},
	},
	{
		Name: "no_geometry", Class: "attribute-only table (no geometry column)", Pending: pendValues,
		Make: makeNoGeometry,
		Files: map[string]fileWant{
			"codes.gpkg": {Status: "remediation", Code: "NoGeometry"},
		},
	},
	{
		Name: "no_geometry_parquet", Class: "attribute-only table written as plain Parquet on a recipe's request", Pending: pendValues,
		Make:   makeNoGeometry,
		Recipe: "version: 1\ndefaults:\n  vector:\n    attribute_tables: parquet\n",
		Files: map[string]fileWant{
			"codes.gpkg": {Status: "completed", Checks: []string{"features", "fields"}},
		},
	},
	{
		// The issue names the wrong refusal (EmptyDataset); the end chosen
		// here is a completed layer whose null geometries are counted.
		Name: "all_null_geometries", Class: "layer whose geometries are all null", Pending: pendVector,
		Make: makeAllNull,
		Files: map[string]fileWant{
			"nulls.gpkg": {Status: "completed", Warn: []string{"null"}},
		},
	},

	// ---- values ----
	{
		// Offsets kept, or a documented UTC normalisation that a warning
		// names: the instants must be equal either way (the judge compares
		// UTC instants).
		Name: "timestamp_offsets", Class: "timestamps with +07 offsets", Pending: pendValues,
		Make: makeTimestamps,
		Files: map[string]fileWant{
			"readings.geojson": {Status: "completed", WarnAny: []string{"UTC", "offset"}},
		},
	},
	{
		Name: "list_fields", Class: "list fields (IntegerList, RealList, StringList) as Parquet LIST columns", Pending: pendValues,
		Make: makeListFields,
		Files: map[string]fileWant{
			// Written as text with a warning is not enough: a list's
			// values must arrive as a list (no Allow words for fields).
			"lists.geojson": {Status: "completed", Allow: map[string][]string{"field:": nil}},
		},
	},

	// ---- archives, clashes, directories ----
	{
		Name: "srtm_zip", Class: "compressed SRTM-like zip (N45E006.hgt in N45E006.hgt.zip), never a zip bomb", Pending: pendFormats,
		Make: makeSRTMZip,
		Files: map[string]fileWant{
			"N45E006.hgt.zip": {Status: "completed", Judge: "/vsizip/{dir}/N45E006.hgt.zip/N45E006.hgt", Checks: []string{"pixels"}},
		},
	},
	{
		Name: "clashing_names", Class: "clashing names (dem.tif + dem.tiff, lakes.geojson + lakes.json) routed and all listed by plan, a GML's .xsd never a clash, the rest migrates", Pending: pendClash + "; " + pendFormats,
		Make: makeClashes,
		Plan: []string{"dem.tiff", "lakes.json"},
		Files: map[string]fileWant{
			"dem.tif":       {Status: "remediation", Code: "DestinationConflict", Message: []string{"dem.tiff"}},
			"dem.tiff":      {Status: "remediation", Code: "DestinationConflict", Message: []string{"dem.tif"}},
			"roads.gml":     {Status: "completed"},
			"roads.xsd":     {Status: "sidecar"},
			"other.tif":     {Status: "completed"},
			"lakes.geojson": {Status: "remediation", Code: "DestinationConflict", Message: []string{"lakes.json"}},
			"lakes.json":    {Status: "remediation", Code: "DestinationConflict", Message: []string{"lakes.geojson"}},
		},
	},
	{
		Name: "filegdb", Class: "a FileGDB folder is one source, never walked into", Pending: pendClash,
		Make: makeFileGDB,
		Files: map[string]fileWant{
			"parcels.gdb": {Status: "completed"},
			"other.tif":   {Status: "completed"},
		},
	},

	// ---- input formats ----
	{
		Name: "gpx", Class: "GPX (waypoints and tracks)", Pending: pendFormats,
		Make: makeGPX,
		Files: map[string]fileWant{
			"walk.gpx": {Status: "completed"},
		},
	},
	{
		Name: "gml", Class: "GML with its .xsd", Pending: pendFormats,
		Make: makeGML,
		Files: map[string]fileWant{
			"towns.gml": {Status: "completed"},
			"towns.xsd": {Status: "sidecar"},
		},
	},
	{
		Name: "csv_wkt", Class: "CSV with a WKT geometry column (recipe csv block, assign_crs)", Pending: pendFormats,
		Make:   makeCSV,
		Recipe: "version: 1\nrules:\n  - match: \"**/*.csv\"\n    assign_crs: \"EPSG:4326\"\n    csv:\n      geometry: wkt\n      wkt_column: WKT\n",
		Files: map[string]fileWant{
			"wells.csv": {Status: "completed", AssignCRS: "EPSG:4326",
				Open: []string{"GEOM_POSSIBLE_NAMES=WKT", "KEEP_GEOM_COLUMNS=NO", "AUTODETECT_TYPE=YES"}},
		},
	},
	{
		Name: "geojsonseq", Class: "GeoJSONSeq", Pending: pendFormats,
		Make: makeGeoJSONSeq,
		Files: map[string]fileWant{
			"stream.geojsonl": {Status: "completed"},
		},
	},
	{
		Name: "flatgeobuf_input", Class: "FlatGeobuf as input",
		Make: makeFlatGeobufInput,
		Files: map[string]fileWant{
			"lines.fgb": {Status: "completed"},
		},
	},
	{
		Name: "topojson", Class: "TopoJSON", Pending: pendFormats,
		Make: makeTopoJSON,
		Files: map[string]fileWant{
			"regions.topojson": {Status: "completed"},
		},
	},
	{
		Name: "assign_crs", Class: "missing CRS fixed by a recipe assign_crs rule (lineage, STAC item)", Pending: pendFormats,
		Make:   makeNoCRS,
		Recipe: "version: 1\nrules:\n  - match: \"**/*.tif\"\n    assign_crs: \"EPSG:32633\"\n",
		Files: map[string]fileWant{
			"scan.tif": {Status: "completed", AssignCRS: "EPSG:32633", STAC: []string{"32633"}},
		},
	},
}
