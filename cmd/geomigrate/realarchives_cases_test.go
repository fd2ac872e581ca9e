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
		Name: "pam_and_external_overviews", Class: "GDAL PAM .aux.xml (metadata, scale/offset, a domain) and external .ovr",
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
		Name: "external_mask", Class: "external mask (.tif + .tif.msk)",
		Make: makeExternalMask,
		Files: map[string]fileWant{
			"ortho.tif":     {Status: "completed", Checks: []string{"pixels", "masks"}},
			"ortho.tif.msk": {Status: "sidecar"},
		},
	},
	{
		Name: "digitalglobe_sidecars", Class: "DigitalGlobe metadata sidecars (.IMD, .RPB, .XML)",
		Make: makeDigitalGlobe,
		Files: map[string]fileWant{
			// The IMD and IMAGERY domains have no place in a COG: carried
			// no further, each named in a warning; the RPCs are kept.
			"scene.tif": {Status: "completed", Checks: []string{"pixels", "rpc"}, Warn: []string{"IMD", "IMAGERY"}},
			"scene.IMD": {Status: "sidecar"}, "scene.RPB": {Status: "sidecar"}, "scene.XML": {Status: "sidecar"},
		},
	},
	{
		Name: "gcps", Class: "GCP-georeferenced raster (210 GCPs, GCP CRS, no geotransform)",
		Make: makeGCPs,
		Files: map[string]fileWant{
			"gcps.tif": {Status: "completed", Checks: []string{"pixels", "gcps"}},
		},
	},
	{
		Name: "rpc", Class: "RPC-georeferenced raster",
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
		// GeoParquet 1.1 has no M (its schema's geometry_types end in " Z"
		// at most): the M values are dropped, named in a warning that
		// points at FlatGeobuf, and every X, Y and Z is kept.
		Name: "linestring_zm", Class: "LineString ZM layer to GeoParquet (M dropped with a warning; X, Y, Z kept)",
		Make: makeLineStringZM,
		Files: map[string]fileWant{
			"tracks.gpkg": {Status: "completed", Checks: []string{"features", "geometries"}, Warn: []string{"M values", "FlatGeobuf"},
				Allow: map[string][]string{"geometry:M": {"M values"}}},
		},
	},
	{
		Name: "linestring_zm_flatgeobuf", Class: "LineString ZM layer to FlatGeobuf (M values kept)",
		Make:   makeLineStringZM,
		Recipe: "version: 1\nrules:\n  - match: \"**\"\n    vector:\n      format: FlatGeobuf\n",
		Files: map[string]fileWant{
			"tracks.gpkg": {Status: "completed", Checks: []string{"features", "geometries"}},
		},
	},
	{
		Name: "curves", Class: "curve geometries (CircularString, CurvePolygon, MultiSurface) refused by default",
		Make: makeCurves,
		Files: map[string]fileWant{
			"curves.gpkg": {Status: "remediation", Code: "CurveGeometry", Message: []string{"FlatGeobuf"}},
		},
	},
	{
		Name: "curves_linearized", Class: "curve geometries linearised on a recipe's request",
		Make:   makeCurves,
		Recipe: "version: 1\nrules:\n  - match: \"**\"\n    vector:\n      curves: linearize\n      curve_step_degrees: 1\n",
		Files: map[string]fileWant{
			"curves.gpkg": {Status: "completed", Warn: []string{"lineari"}, Allow: map[string][]string{"geometry": {"lineari"}, "geometry:": {"lineari"}, "geometry_type": {"lineari"}}},
		},
	},
	{
		Name: "invalid_polygons", Class: "invalid polygons (bow-tie) kept unchanged by default, counted in a warning",
		Make: makeInvalidPolygons,
		Files: map[string]fileWant{
			"bowtie.gpkg": {Status: "completed", Warn: []string{"invalid"}},
		},
	},
	{
		Name: "invalid_polygons_repaired", Class: "invalid polygons repaired on request, the layer's geometry type unchanged",
		Make:   makeInvalidPolygons,
		Recipe: "version: 1\ndefaults:\n  vector:\n    geometry_policy: repair\n",
		Files: map[string]fileWant{
			// A repaired polygon is another geometry (allowed, warned); a
			// changed layer type (geometry_type) never is.
			"bowtie.gpkg": {Status: "completed", Warn: []string{"repair"}, Allow: map[string][]string{"geometry": {"repair"}, "geometry:type": nil, "geometry_type": nil}},
		},
	},
	{
		Name: "no_geometry", Class: "attribute-only table (no geometry column)",
		Make: makeNoGeometry,
		Files: map[string]fileWant{
			"codes.gpkg": {Status: "remediation", Code: "NoGeometry"},
		},
	},
	{
		Name: "no_geometry_parquet", Class: "attribute-only table written as plain Parquet on a recipe's request",
		Make:   makeNoGeometry,
		Recipe: "version: 1\ndefaults:\n  vector:\n    attribute_tables: parquet\n",
		Files: map[string]fileWant{
			"codes.gpkg": {Status: "completed", Checks: []string{"features", "fields"}},
		},
	},
	{
		// The issue names the wrong refusal (EmptyDataset); the end chosen
		// here is a completed layer whose null geometries are counted.
		Name: "all_null_geometries", Class: "layer whose geometries are all null",
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
		Name: "timestamp_offsets", Class: "timestamps with +07 offsets",
		Make: makeTimestamps,
		Files: map[string]fileWant{
			"readings.geojson": {Status: "completed", WarnAny: []string{"UTC", "offset"}},
		},
	},
	{
		Name: "list_fields", Class: "list fields (IntegerList, RealList, StringList) as Parquet LIST columns",
		Make: makeListFields,
		Files: map[string]fileWant{
			// Written as text with a warning is not enough: a list's
			// values must arrive as a list (no Allow words for fields).
			"lists.geojson": {Status: "completed", Allow: map[string][]string{"field:": nil}},
		},
	},

	// ---- archives, clashes, directories ----
	{
		Name: "srtm_zip", Class: "compressed SRTM-like zip (N45E006.hgt in N45E006.hgt.zip), never a zip bomb",
		Make: makeSRTMZip,
		Files: map[string]fileWant{
			"N45E006.hgt.zip": {Status: "completed", Judge: "/vsizip/{dir}/N45E006.hgt.zip/N45E006.hgt", Checks: []string{"pixels"}},
		},
	},
	{
		Name: "clashing_names", Class: "clashing names (dem.tif + dem.tiff, lakes.geojson + lakes.json) routed and all listed by plan, a GML's .xsd never a clash, the rest migrates",
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
		Name: "filegdb", Class: "a FileGDB folder is one source, never walked into",
		Make: makeFileGDB,
		Files: map[string]fileWant{
			"parcels.gdb": {Status: "completed"},
			"other.tif":   {Status: "completed"},
		},
	},

	// ---- input formats ----
	{
		Name: "gpx", Class: "GPX (waypoints and tracks)",
		Make: makeGPX,
		Files: map[string]fileWant{
			"walk.gpx": {Status: "completed"},
		},
	},
	{
		Name: "gml", Class: "GML with its .xsd",
		Make: makeGML,
		Files: map[string]fileWant{
			"towns.gml": {Status: "completed"},
			"towns.xsd": {Status: "sidecar"},
		},
	},
	{
		Name: "csv_wkt", Class: "CSV with a WKT geometry column (recipe csv block, assign_crs)",
		Make:   makeCSV,
		Recipe: "version: 1\nrules:\n  - match: \"**/*.csv\"\n    assign_crs: \"EPSG:4326\"\n    csv:\n      geometry: wkt\n      wkt_column: WKT\n",
		Files: map[string]fileWant{
			"wells.csv": {Status: "completed", AssignCRS: "EPSG:4326",
				// The other columns stay text exactly as written (no type guessed).
				Open: []string{"GEOM_POSSIBLE_NAMES=WKT", "KEEP_GEOM_COLUMNS=NO"}},
		},
	},
	{
		Name: "geojsonseq", Class: "GeoJSONSeq",
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
		// GDAL gives a TopoJSON layer no CRS (the format names none), so
		// the file is refused MissingCRS until a recipe assigns one.
		Name: "topojson", Class: "TopoJSON without a CRS: refused MissingCRS",
		Make: makeTopoJSON,
		Files: map[string]fileWant{
			"regions.topojson": {Status: "remediation", Code: "MissingCRS"},
		},
	},
	{
		Name: "topojson_assigned", Class: "TopoJSON with a recipe assign_crs rule",
		Make:   makeTopoJSON,
		Recipe: "version: 1\nrules:\n  - match: \"**/*.topojson\"\n    assign_crs: \"EPSG:4326\"\n",
		Files: map[string]fileWant{
			"regions.topojson": {Status: "completed", AssignCRS: "EPSG:4326"},
		},
	},
	{
		Name: "assign_crs", Class: "missing CRS fixed by a recipe assign_crs rule (lineage, STAC item)",
		Make:   makeNoCRS,
		Recipe: "version: 1\nrules:\n  - match: \"**/*.tif\"\n    assign_crs: \"EPSG:32633\"\n",
		Files: map[string]fileWant{
			"scan.tif": {Status: "completed", AssignCRS: "EPSG:32633", STAC: []string{"32633"}},
		},
	},
}
