// Package formats is the project's one answer to "what is this file?" by
// its name: a geospatial source (raster or vector), an archive, a sidecar
// of another file, a file no geodata migration needs, and which output
// format an extension stands for.
//
// It is written by hand because it is policy, not fact: which files travel
// with which (a .dbf with its .shp, a .tfw with its .tif), which of those
// GDAL is given, which names are never sources, which sources cannot be
// read through ranged reads. No library holds this project's choices, and
// every caller (HashCheck, the CLI listers, GDAL preflight, the ranged
// reader, output naming, the validate command) must get the same answer,
// which four separate lists used to give differently.
//
// Names only: content is identified by GDAL. An unknown extension (or
// none) stays a candidate source, since GDAL may still recognise it.
package formats

import (
	"path"
	"strings"
)

// Kind is what a file is, judged by its name.
type Kind uint8

const (
	Unknown       Kind = iota // not in the table: a candidate GDAL identifies by content
	Raster                    // a raster source
	Vector                    // a vector source
	Archive                   // an archive; Format.Holds is what it most likely contains
	Sidecar                   // part of another file's dataset, never a source of its own
	NotGeospatial             // documents, text, code, media: never a source
)

func (k Kind) String() string {
	return [...]string{"unknown", "raster", "vector", "archive", "sidecar", "not geospatial"}[k]
}

// Mains are the kinds of main file a sidecar belongs to.
type Mains uint8

const (
	OfShapefile Mains = 1 << iota // the parts of an ESRI Shapefile
	OfRaster                      // world files, GDAL auxiliary files
	OfAny                         // any main file (QGIS metadata, GDAL's PAM .aux.xml)
	OfGML                         // the schema files GDAL's GML driver reads beside a .gml
)

// Format is one row of the table.
type Format struct {
	Ext  string // lower case, with the dot; may be compound (".aux.xml")
	Kind Kind
	// Drivers are the GDAL drivers the extension suggests (messages only:
	// GDAL identifies the content).
	Drivers []string
	// Holds is an archive's most likely content (Raster or Vector), to
	// predict the output key before the archive is opened.
	Holds Kind
	// Zip: an archive GDAL is handed through /vsizip/ after Go checked it.
	Zip bool
	// Directory: the source is a directory (a File Geodatabase).
	Directory bool
	// Of: the main files a sidecar belongs to. Set on a row of Kind
	// Unknown, it makes a conditional sidecar (see Conditional): a sidecar
	// beside a main file of its stem, a candidate source elsewhere.
	Of Mains
	// ReadByGDAL: a sidecar GDAL is given beside its main file. Others are
	// part of the source's identity (an edit of them migrates it again)
	// but are not opened.
	ReadByGDAL bool
	// LocalFile: the source cannot be converted through ranged reads: it is
	// made of several files, or its library opens the file itself.
	LocalFile bool
	// Output is the output format written with this extension ("COG",
	// "GeoParquet", "FlatGeobuf"; the names of convert.Format*), or "".
	Output string
}

// table is the registry. Where the former lists disagreed, the answer
// chosen here holds for every caller:
//   - .rrd and .ige (Erdas Imagine reduced-resolution and spill files) are
//     sidecars of a raster, never sources: GDAL needs them to read the .img
//     (an .ige holds the pixels of a large .img), and HashCheck used to
//     convert them on their own.
//   - .ovr, .msk and .qmd are sidecars everywhere (never sources, part of
//     the source's identity). An external .msk is the source's mask and
//     an .ovr its overviews: both are TIFFs that GDAL is given and that
//     preflight's TIFF budget checks cover like the main file (the output
//     builds its own overviews all the same); .qmd is QGIS metadata that
//     no GDAL driver reads. GDAL preflight used to treat them as datasets
//     (a zip of dem.tif and dem.tif.ovr was "several files").
//   - a sidecar belongs only to the main kinds in Of: roads.dbf is a part
//     of roads.shp, not of roads.tif (the lists used to accept any sidecar
//     extension beside any main file).
//   - archives predict their content from the inner extension
//     (dem.tif.zip → raster), else Holds; every .zip used to count as vector.
//   - .tiff and .geoparquet name the same output formats as .tif and
//     .parquet (the validate command accepts both; output naming writes
//     the first).
var table = []Format{
	// Raster sources.
	{Ext: ".tif", Kind: Raster, Drivers: []string{"GTiff", "COG"}, Output: "COG"},
	{Ext: ".tiff", Kind: Raster, Drivers: []string{"GTiff", "COG"}, Output: "COG"},
	{Ext: ".jp2", Kind: Raster, Drivers: []string{"JP2OpenJPEG"}},
	{Ext: ".img", Kind: Raster, Drivers: []string{"HFA"}, LocalFile: true},
	{Ext: ".asc", Kind: Raster, Drivers: []string{"AAIGrid"}, LocalFile: true},
	{Ext: ".png", Kind: Raster, Drivers: []string{"PNG"}, LocalFile: true},
	{Ext: ".jpg", Kind: Raster, Drivers: []string{"JPEG"}, LocalFile: true},
	{Ext: ".jpeg", Kind: Raster, Drivers: []string{"JPEG"}, LocalFile: true},
	{Ext: ".nc", Kind: Raster, Drivers: []string{"netCDF"}, LocalFile: true},
	{Ext: ".nc4", Kind: Raster, Drivers: []string{"netCDF"}, LocalFile: true},
	{Ext: ".h5", Kind: Raster, Drivers: []string{"HDF5"}, LocalFile: true},
	{Ext: ".hdf5", Kind: Raster, Drivers: []string{"HDF5"}, LocalFile: true},
	{Ext: ".he5", Kind: Raster, Drivers: []string{"HDF5"}, LocalFile: true},
	{Ext: ".hdf", Kind: Raster, Drivers: []string{"HDF4", "HDF5"}, LocalFile: true},
	// SRTMHGT knows a tile by its name (N45E006.hgt) and size.
	{Ext: ".hgt", Kind: Raster, Drivers: []string{"SRTMHGT"}},

	// Vector sources.
	{Ext: ".shp", Kind: Vector, Drivers: []string{"ESRI Shapefile"}, LocalFile: true},
	{Ext: ".gpkg", Kind: Vector, Drivers: []string{"GPKG"}, LocalFile: true},
	{Ext: ".gdb", Kind: Vector, Drivers: []string{"OpenFileGDB"}, Directory: true, LocalFile: true},
	{Ext: ".kml", Kind: Vector, Drivers: []string{"KML", "LIBKML"}},
	{Ext: ".geojson", Kind: Vector, Drivers: []string{"GeoJSON"}},
	{Ext: ".json", Kind: Vector, Drivers: []string{"GeoJSON"}},
	{Ext: ".fgb", Kind: Vector, Drivers: []string{"FlatGeobuf"}, Output: "FlatGeobuf"},
	{Ext: ".topojson", Kind: Vector, Drivers: []string{"TopoJSON"}},
	{Ext: ".geojsonl", Kind: Vector, Drivers: []string{"GeoJSONSeq"}},
	{Ext: ".geojsons", Kind: Vector, Drivers: []string{"GeoJSONSeq"}},
	{Ext: ".gpx", Kind: Vector, Drivers: []string{"GPX"}},
	// The GML driver reads a .xsd beside the document and, without
	// one, scans the whole file for its schema.
	{Ext: ".gml", Kind: Vector, Drivers: []string{"GML"}, LocalFile: true},
	// A CSV is a vector source only with a recipe rule naming its
	// geometry columns (csv:); preflight says so when none does.
	{Ext: ".csv", Kind: Vector, Drivers: []string{"CSV"}},

	// Read by GDAL but not a supported source; SQLite opens its own file.
	{Ext: ".sqlite", Kind: Unknown, Drivers: []string{"SQLite"}, LocalFile: true},

	// Outputs that are not sources.
	{Ext: ".parquet", Output: "GeoParquet"},
	{Ext: ".geoparquet", Output: "GeoParquet"},

	// Archives. Only zips are opened (after Go checked every entry); inside
	// one, any archive is refused as nested.
	{Ext: ".zip", Kind: Archive, Holds: Vector, Zip: true},
	{Ext: ".shp.zip", Kind: Archive, Holds: Vector, Zip: true, Drivers: []string{"ESRI Shapefile"}},
	{Ext: ".gdb.zip", Kind: Archive, Holds: Vector, Zip: true, Drivers: []string{"OpenFileGDB"}},
	{Ext: ".kmz", Kind: Archive, Holds: Vector, Zip: true, Drivers: []string{"KML", "LIBKML"}},
	{Ext: ".hgt.zip", Kind: Archive, Holds: Raster, Zip: true, Drivers: []string{"SRTMHGT"}},
	{Ext: ".tar.gz", Kind: Archive},
	{Ext: ".tgz", Kind: Archive},
	{Ext: ".gz", Kind: Archive},
	{Ext: ".tar", Kind: Archive},
	{Ext: ".7z", Kind: Archive},
	{Ext: ".rar", Kind: Archive},
	{Ext: ".bz2", Kind: Archive},
	{Ext: ".xz", Kind: Archive},
	{Ext: ".zst", Kind: Archive},
	{Ext: ".lz4", Kind: Archive},

	// Sidecars of a Shapefile.
	{Ext: ".shx", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	{Ext: ".dbf", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	{Ext: ".cpg", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	{Ext: ".qix", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	{Ext: ".sbn", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	{Ext: ".sbx", Kind: Sidecar, Of: OfShapefile, ReadByGDAL: true},
	// A .prj gives a Shapefile, an ASCII grid or a world-file raster its CRS.
	{Ext: ".prj", Kind: Sidecar, Of: OfShapefile | OfRaster, ReadByGDAL: true},
	// Sidecars of a raster.
	{Ext: ".tfw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".tifw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".wld", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".pgw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".pngw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".jgw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".jpgw", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".j2w", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".rrd", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".ige", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".ovr", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".msk", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	// The metadata GDAL reads beside a satellite image (DigitalGlobe/Maxar
	// and others): the IMD, RPC and IMAGERY metadata domains and the RPC
	// model. image_RPC.TXT is the stem and "_rpc.txt", not "stem.", as
	// GDAL names it (the main file's extension replaced).
	{Ext: ".imd", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: ".rpb", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	{Ext: "_rpc.txt", Kind: Sidecar, Of: OfRaster, ReadByGDAL: true},
	// image.XML is DigitalGlobe metadata beside image.tif, but .xml is
	// also a format of its own: only beside a raster of its stem is it a
	// sidecar (Conditional).
	{Ext: ".xml", Kind: Unknown, Of: OfRaster, ReadByGDAL: true},
	// Sidecars of a GML file: its application schema and GDAL's own
	// description of its layers.
	{Ext: ".xsd", Kind: Sidecar, Of: OfGML, ReadByGDAL: true},
	{Ext: ".gfs", Kind: Sidecar, Of: OfGML, ReadByGDAL: true},
	// Sidecars of anything.
	{Ext: ".aux.xml", Kind: Sidecar, Of: OfAny, ReadByGDAL: true},
	{Ext: ".qmd", Kind: Sidecar, Of: OfAny},
}

// notGeospatial are extensions of documents, text, code and media. A
// deny-list on purpose: an unknown extension may still be a format GDAL
// identifies by content, and formats GDAL reads but the pipeline refuses
// (PDF, DXF …) stay candidates so that remediation says what to do.
var notGeospatial = []string{
	".txt", ".md", ".rst", ".htm", ".html", ".css", ".js",
	".doc", ".docx", ".odt", ".rtf", ".ppt", ".pptx", ".odp",
	".log", ".ini", ".cfg", ".conf", ".yaml", ".yml", ".toml",
	".bak", ".tmp", ".temp", ".swp", ".lock", ".lnk", ".url",
	".py", ".sh", ".bat", ".ps1", ".exe", ".dll", ".so", ".dylib",
	".eml", ".msg", ".mp3", ".wav", ".mp4", ".mov", ".avi", ".db",
}

var (
	byExt    = map[string]Format{}
	compound []string // multi-dot and suffix ("_rpc.txt") extensions, matched before path.Ext
)

func init() {
	for _, e := range notGeospatial {
		table = append(table, Format{Ext: e, Kind: NotGeospatial})
	}
	for _, f := range table {
		if _, dup := byExt[f.Ext]; dup {
			panic("formats: " + f.Ext + " declared twice")
		}
		byExt[f.Ext] = f
		if strings.Count(f.Ext, ".") > 1 || !strings.HasPrefix(f.Ext, ".") {
			compound = append(compound, f.Ext)
		}
	}
}

// Table returns a copy of the registry, for tests and documentation.
func Table() []Format { return append([]Format(nil), table...) }

// ext is name's registered extension (compound first), or its last
// extension when none is registered; lower case.
func ext(name string) string {
	lower := strings.ToLower(path.Base(name))
	for _, c := range compound {
		if strings.HasSuffix(lower, c) && len(lower) > len(c) {
			return c
		}
	}
	if e := path.Ext(lower); e != lower {
		return e
	}
	return ""
}

// Lookup is the row for name's extension (a key or path; case does not
// matter). A name not in the table gets a Format of Kind Unknown with its
// extension.
func Lookup(name string) Format {
	e := ext(name)
	if f, ok := byExt[e]; ok {
		return f
	}
	return Format{Ext: e}
}

// KindOf is Lookup(name).Kind.
func KindOf(name string) Kind { return Lookup(name).Kind }

// IsSidecar reports whether name is part of another file's dataset.
func IsSidecar(name string) bool { return KindOf(name) == Sidecar }

// Conditional reports whether name is a sidecar only beside a main file
// (SidecarOf), and a candidate source of its own otherwise ("image.XML").
func Conditional(name string) bool {
	f := Lookup(name)
	return f.Kind != Sidecar && f.Of != 0
}

// IsArchive reports whether name is an archive of any kind.
func IsArchive(name string) bool { return KindOf(name) == Archive }

// IsZip reports whether name is an archive opened as a zip.
func IsZip(name string) bool { return Lookup(name).Zip }

// Stem is the base name without its extension, compound extensions
// stripped whole ("a/b/roads.shp.zip" → "roads", "dem.tif.aux.xml" →
// "dem.tif", "image_RPC.TXT" → "image").
func Stem(name string) string {
	base := path.Base(name)
	if e := ext(base); e != "" {
		return base[:len(base)-len(e)]
	}
	return base
}

// mainsOf is the Mains a main file takes sidecars of; an unknown one takes
// all (GDAL may find it to be a raster by content).
func mainsOf(main string) Mains {
	f := Lookup(main)
	switch {
	case f.Ext == ".shp":
		return OfShapefile | OfAny
	case f.Ext == ".gml":
		return OfGML | OfAny
	case f.Kind == Raster:
		return OfRaster | OfAny
	case f.Kind == Unknown && f.Output == "" && f.Of == 0:
		return OfShapefile | OfRaster | OfGML | OfAny
	}
	return OfAny
}

// SidecarOf reports whether the base name name is a sidecar of the main
// file named main: name is main's stem, or main's whole name, followed by a
// sidecar extension of main's kind ("roads.shp" → "roads.dbf"; "dem.tif" →
// "dem.tfw", "dem.tif.aux.xml", "dem_RPC.TXT"; not "roads.tif" →
// "roads.dbf"); a Conditional one ("image.XML") counts here too. The stem
// is compared exactly, as an object store lists by prefix; the extension
// without case, as GDAL tries both ("roads.DBF").
func SidecarOf(main, name string) bool {
	main, name = path.Base(main), path.Base(name)
	if IsSidecar(main) || strings.EqualFold(main, name) {
		return false
	}
	f := Lookup(name)
	if f.Of&mainsOf(main) == 0 {
		return false
	}
	rest, ok := strings.CutPrefix(name, Stem(main))
	if !ok {
		return false
	}
	rest = strings.ToLower(rest)
	// GDAL looks for a suffix sidecar ("_rpc.txt") in place of the main
	// file's extension only.
	return rest == f.Ext || (strings.HasPrefix(f.Ext, ".") && rest == strings.ToLower(main[len(Stem(main)):])+f.Ext)
}

// PredictKind guesses whether name becomes a Raster or a Vector output,
// before it is opened (the conversion decides for real). An archive is
// judged by its inner extension ("dem.tif.zip" → Raster), else by what it
// usually holds; an unknown name is guessed Raster.
func PredictKind(name string) Kind {
	f := Lookup(name)
	if f.Kind == Archive {
		inner := strings.TrimSuffix(strings.ToLower(path.Base(name)), f.Ext)
		if k := KindOf(inner); k == Raster || k == Vector {
			return k
		}
		if f.Holds != Unknown {
			return f.Holds
		}
	}
	if f.Kind == Vector {
		return Vector
	}
	return Raster
}

// ReadableByRange reports whether a source can be converted through ranged
// reads of the object alone.
func ReadableByRange(name string) bool { return !Lookup(name).LocalFile }

// OutputFormat is the output format an extension stands for ("" if none).
func OutputFormat(name string) string { return Lookup(name).Output }
