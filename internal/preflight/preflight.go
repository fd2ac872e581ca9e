// Package preflight decides, in Go and before GDAL opens anything, what a
// source is and whether it may be converted: a regular local file or
// archive, not pointing elsewhere (VRT, KML NetworkLink, zip traversal),
// within the byte budget and the sizes its TIFF headers declare
// (internal/budget), recognised by an allowed GDAL driver, with the
// sidecars GDAL may read. The two questions only GDAL can answer (which
// driver recognises a header, does a .prj parse as a CRS) are asked
// through Probe, which internal/gdal implements; this package has no cgo.
package preflight

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/dirindex"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Probe is what preflight asks GDAL.
type Probe interface {
	// Identify names the driver, among allowed, that recognises path from
	// its header, or "" when none does; siblings are the only other files
	// GDAL is told exist beside it (path's own base name first).
	Identify(path string, allowed, siblings []string) string
	// ParseCRS fails when wkt is not a coordinate reference system GDAL
	// can read.
	ParseCRS(wkt string) error
}

// DriverProbe is what a Probe may also answer, for a refusal that says
// what GDAL says: whether this GDAL has a driver at all. internal/gdal's
// probe implements it; a Probe without it gets the plainer message.
type DriverProbe interface {
	HasDriver(name string) bool
}

// Drivers a source may be opened with. Each reads only the source file and
// the sidecars we name; none follows references to other files or URLs.
var (
	RasterDrivers = []string{"GTiff", "COG", "JP2OpenJPEG", "netCDF", "HDF5", "HFA", "AAIGrid", "PNG", "JPEG", "SRTMHGT"}
	// GML and GPX are read with Expat, never resolving xlinks nor
	// fetching schemas (gml* settings of the engine); CSV only with a
	// recipe's csv: rule.
	VectorDrivers = []string{"ESRI Shapefile", "OpenFileGDB", "GPKG", "KML", "LIBKML", "GeoJSON", "FlatGeobuf",
		"GeoJSONSeq", "TopoJSON", "GPX", "GML", "CSV"}
)

// UnsafeDrivers open other files or URLs named inside the source. They take
// part in identification only so that such a source is refused by name.
var UnsafeDrivers = []string{
	"VRT", "OGR_VRT", "GTI", "DERIVED", "WMS", "WMTS", "WCS", "WFS", "OAPIF", "STACIT", "STACTA",
	"KMLSUPEROVERLAY", "PLMOSAIC", "EEDA", "EEDAI", "DAAS", "NGW", "ESRIC", "Rasterlite", "OGCAPI",
	"GDALG", "VICAR", "PDS", "PDS4", "ISIS3",
}

// unsupportedDrivers are recognised to give a precise message, but not converted.
var unsupportedDrivers = []string{"MBTiles", "SQLite", "ENVI", "EHdr", "DXF", "MapInfo File", "XLSX", "PDF", "BMP", "GIF"}

// IdentifyAllowed is what identification may answer.
var IdentifyAllowed = slices.Concat(RasterDrivers, VectorDrivers, UnsafeDrivers, unsupportedDrivers)

// texts that open other files or URLs: refused before GDAL looks at them.
var unsafeHeaders = [][]byte{
	[]byte("<VRTDataset"), []byte("<OGRVRTDataSource"), []byte("<GDALTileIndexDataset"),
	[]byte("<GDAL_WMS"), []byte("<GDAL_WMTS"), []byte("<WCS_GDAL"), []byte("<WFS_GDAL"),
}

// Source is what preflight learnt about a source before a full open.
type Source struct {
	Path     string // what GDAL opens: the file, or a /vsizip/ path into it
	Name     string // the local file as given (for stems and messages)
	Archive  string // absolute path of the zip archive Path points into, if any
	Driver   string
	Siblings []string // base names GDAL may open beside Path (Path's own name first)
	Bytes    int64    // total size with sidecars
}

// Local checks a local source without a full open: a regular,
// non-empty, readable file (or an OpenFileGDB directory), not pointing
// elsewhere, within the byte budget, recognised by an allowed driver.
func Local(src string, r recipe.Recipe, p Probe) (*Source, error) {
	if strings.HasPrefix(src, "/vsi") || strings.Contains(src, "://") || strings.ContainsAny(src, "\x00\n") {
		return nil, fault.Data(fault.UnsafeSource, "source name %q is a GDAL virtual path or URL; only local files are converted", src)
	}
	fi, err := os.Lstat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fault.Systemic("preflight.Local", err) // the caller lost its own download
	case err != nil:
		return nil, fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fault.Data(fault.UnsafeSource, "source is a symbolic link")
	}
	s := &Source{Path: src, Name: src}
	if fi.IsDir() {
		// Only a File Geodatabase is a directory source.
		if !formats.Lookup(src).Directory {
			return nil, fault.Data(fault.UnsupportedFormat, "source is a directory, not a .gdb File Geodatabase")
		}
		s.Bytes = dirSize(src)
	} else {
		if !fi.Mode().IsRegular() {
			return nil, fault.Data(fault.UnsafeSource, "source is not a regular file (%s)", fi.Mode().Type())
		}
		if fi.Size() == 0 {
			return nil, fault.Data(fault.CorruptSource, "source file is empty (0 bytes)")
		}
		head, err := readHead(src, 4096)
		if err != nil {
			return nil, fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
		}
		trimmed := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
		for _, h := range unsafeHeaders {
			if bytes.HasPrefix(trimmed, h) {
				return nil, fault.Data(fault.UnsafeSource, "source is a %s document, which makes GDAL open the files or URLs it names; refused", h[1:])
			}
		}
		if r.MaxBytes > 0 && fi.Size() > r.MaxBytes {
			return nil, fault.Data(fault.BudgetExceeded, "source is %d bytes, over the budget of %d bytes", fi.Size(), r.MaxBytes)
		}
		if isZipMagic(head) || formats.IsZip(src) {
			return zipFile(src, r, p)
		}
		s.Siblings, s.Bytes = siblings(src, fi.Size())
	}
	if r.MaxBytes > 0 && s.Bytes > r.MaxBytes {
		return nil, fault.Data(fault.BudgetExceeded, "source is %d bytes, over the budget of %d bytes", s.Bytes, r.MaxBytes)
	}

	s.Driver = p.Identify(src, IdentifyAllowed, s.Siblings)
	if err := s.checkDriver(p, r); err != nil {
		return nil, err
	}
	if err := checkCompanions(src, s.Driver); err != nil {
		return nil, err
	}
	switch s.Driver {
	case "ESRI Shapefile":
		if formats.Lookup(src).Ext == ".shp" {
			if err := checkLocalShapefile(src, s.Siblings); err != nil {
				return nil, err
			}
			if err := checkLocalDBF(src, s.Siblings); err != nil {
				return nil, err
			}
		}
	case "KML", "LIBKML":
		if err := checkLocalKML(src); err != nil {
			return nil, err
		}
	case "GTiff", "COG":
		if err := checkLocalTIFF(src, r); err != nil {
			return nil, err
		}
	}
	if len(s.Siblings) > 1 {
		if err := checkLocalPRJ(src, s.Siblings, p); err != nil {
			return nil, err
		}
		if err := checkLocalTIFFSidecars(src, s.Siblings, r); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// companions are the files a driver opens by name beside its source,
// whatever sibling list it is given: the CSV driver a .csvt (column types)
// and a .prj, the GML driver a .gfs (layer schema) and a .xsd.
var companions = map[string][]string{
	"CSV": {".csvt", ".prj"},
	"GML": {".gfs", ".xsd"},
}

// checkCompanions refuses a source whose companion names are anything
// but regular files: GDAL would open a FIFO and block, follow a link, or
// read a device.
func checkCompanions(src, driver string) error {
	stem := strings.TrimSuffix(src, filepath.Ext(src))
	for _, ext := range companions[driver] {
		for _, e := range []string{ext, strings.ToUpper(ext)} {
			fi, err := os.Lstat(stem + e)
			if err != nil || fi.Mode().IsRegular() {
				continue
			}
			return fault.Data(fault.UnsafeSource, "%s beside the source is not a regular file (%s); GDAL's %s driver would read it: remove it or make it a plain file",
				filepath.Base(stem+e), fi.Mode().Type(), driver)
		}
	}
	return nil
}

// checkLocalTIFFSidecars applies the TIFF budget checks to the external
// mask (.msk) and overviews (.ovr) GDAL is given beside src: each is a
// TIFF of its own that GDAL opens, whatever the main file's format.
func checkLocalTIFFSidecars(src string, sibs []string, r recipe.Recipe) error {
	dir := filepath.Dir(src)
	for _, n := range sibs[1:] {
		ext := formats.Lookup(n).Ext
		if ext != ".msk" && ext != ".ovr" {
			continue
		}
		p := filepath.Join(dir, n)
		head, err := readHead(p, 4)
		if err != nil {
			return fault.DataWrap(fault.CorruptSource, err, "sidecar %s cannot be read", n)
		}
		if !isTIFFMagic(head) {
			return fault.Data(fault.CorruptSource, "sidecar %s is not a TIFF (an external %s is one): it is damaged or misnamed; remove or repair it and upload again", n, ext)
		}
		if err := checkLocalTIFF(p, r); err != nil {
			var de *fault.DataError
			if errors.As(err, &de) {
				de.Msg = "sidecar " + n + ": " + de.Msg
			}
			return err
		}
	}
	return nil
}

// isTIFFMagic: classic or BigTIFF, either byte order.
func isTIFFMagic(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	switch string(b[:4]) {
	case "II*\x00", "MM\x00*", "II+\x00", "MM\x00+":
		return true
	}
	return false
}

func extHint(src string) string {
	f := formats.Lookup(src)
	switch {
	case f.Ext == "":
		return ""
	case len(f.Drivers) > 0:
		return " (its extension " + f.Ext + " suggests " + strings.Join(f.Drivers, " or ") + ": the file is mislabelled or damaged)"
	}
	return " (its extension " + f.Ext + " suggests otherwise: the file is mislabelled or damaged)"
}

// driversByExt are GDAL drivers that a build may lack (optional
// libraries, proprietary SDKs), by the extensions of their files: when no
// driver identifies such a file and this GDAL has none of them, the
// refusal says a driver is missing rather than that the file is damaged.
var driversByExt = map[string][]string{
	".parquet": {"Parquet"}, ".geoparquet": {"Parquet"}, ".arrow": {"Arrow"}, ".feather": {"Arrow"}, ".arrows": {"Arrow"},
	".ecw": {"ECW"}, ".jp2": {"JP2OpenJPEG", "JP2ECW", "JP2KAK", "JP2MrSID"}, ".sid": {"MrSID"},
	".pbf": {"OSM"}, ".osm": {"OSM"}, ".fgb": {"FlatGeobuf"}, ".hgt": {"SRTMHGT"},
	".gpx": {"GPX"}, ".gml": {"GML"}, ".kml": {"KML", "LIBKML"}, ".gdb": {"OpenFileGDB", "FileGDB"},
	".hdf": {"HDF4", "HDF5"}, ".nc": {"netCDF"}, ".h5": {"HDF5"}, ".mbtiles": {"MBTiles"}, ".pmtiles": {"PMTiles"},
	".xlsx": {"XLSX"}, ".ods": {"ODS"}, ".dwg": {"CAD"}, ".dxf": {"DXF"}, ".tab": {"MapInfo File"}, ".mif": {"MapInfo File"},
}

// fgbMagic starts a FlatGeobuf file; the fourth byte is its major version.
var fgbMagic = []byte("fgb")

// fgbVersion is the FlatGeobuf major version GDAL reads.
const fgbVersion = 3

// unidentified is the refusal of a file no allowed driver recognises,
// telling apart what GDAL tells apart: (a) a driver of this GDAL
// recognises it but the pipeline does not take that driver; (b) the file
// needs a driver, or a format version, this GDAL lacks; (c) it is
// mislabelled or damaged.
func (s *Source) unidentified(p Probe) error {
	if d := p.Identify(s.Path, nil, s.Siblings); d != "" {
		return fault.Data(fault.UnsupportedFormat,
			"GDAL identifies this file as %s, which is not a supported input format (rasters: %s; vectors: %s); convert it to one of them",
			d, strings.Join(RasterDrivers, ", "), strings.Join(VectorDrivers, ", "))
	}
	name := strings.ToLower(filepath.Base(s.Name))
	if s.Archive != "" {
		name = strings.ToLower(path.Base(s.Path))
	}
	ext := path.Ext(name) // "planet.osm.pbf" → ".pbf"
	if ext == ".fgb" && s.Archive == "" {
		if head, err := readHead(s.Path, 8); err == nil && bytes.HasPrefix(head, fgbMagic) && len(head) >= 4 && head[3] != fgbVersion {
			return fault.Data(fault.DriverUnavailable,
				"the file is FlatGeobuf version %d; this GDAL's FlatGeobuf driver reads version %d only: convert it with a GDAL that reads version %d, or re-export it",
				head[3], fgbVersion, head[3])
		}
	}
	if drivers, ok := driversByExt[ext]; ok {
		if dp, ok := p.(DriverProbe); ok {
			var have []string
			for _, d := range drivers {
				if dp.HasDriver(d) {
					have = append(have, d)
				}
			}
			if len(have) == 0 {
				return fault.Data(fault.DriverUnavailable,
					"no driver of this GDAL recognises the file, and its extension %s is read by GDAL's %s driver, which this GDAL is built without; convert it with a GDAL that has it, or re-export it in a supported format",
					ext, strings.Join(drivers, " or "))
			}
		}
	}
	// No header GDAL knows: mislabelled, damaged in its header, or a format
	// nobody here reads. A file whose header a driver knows but whose
	// content it cannot read is refused by the full open (CorruptSource).
	return fault.Data(fault.UnsupportedFormat,
		"GDAL recognises no supported format in this file%s (rasters: %s; vectors: %s)",
		extHint(s.Name), strings.Join(RasterDrivers, ", "), strings.Join(VectorDrivers, ", "))
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:k], nil
}

// siblings lists the sidecars of src that GDAL reads (formats.SidecarOf
// and Format.ReadByGDAL; regular files) and the total size. Only these
// names are given to GDAL.
func siblings(src string, size int64) ([]string, int64) {
	dir, base := filepath.Split(src)
	if dir == "" {
		dir = "."
	}
	names := []string{base}
	total := size
	// Every sidecar name starts with the stem: the others are not read.
	entries, err := dirindex.Entries(dir, formats.Stem(base))
	if err != nil {
		return names, total
	}
	for _, e := range entries {
		n := e.Name
		if !e.Type.IsRegular() || !formats.SidecarOf(base, n) || !formats.Lookup(n).ReadByGDAL {
			continue
		}
		if info, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			total += info.Size()
		}
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names, total
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// checkLocalTIFF applies budget.CheckTIFF to a local file.
func checkLocalTIFF(src string, r recipe.Recipe) error {
	f, err := os.Open(src)
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	}
	return budget.CheckTIFF(f, fi.Size(), r)
}

// Reader is Local for a source read through ra (size bytes, named name,
// e.g. an object key's base name) that GDAL opens as gdalPath (a path
// under internal/gdal's VSI handler). A bare Shapefile (its sidecars cannot
// come along) and netCDF/HDF5 (their libraries want a real file) are
// refused with UnsupportedFormat.
func Reader(ra io.ReaderAt, size int64, name, gdalPath string, r recipe.Recipe, p Probe) (*Source, error) {
	switch {
	case size == 0:
		return nil, fault.Data(fault.CorruptSource, "source file is empty (0 bytes)")
	case size < 0:
		return nil, fault.Systemic("preflight.Reader", fmt.Errorf("negative size %d", size))
	case r.MaxBytes > 0 && size > r.MaxBytes:
		return nil, fault.Data(fault.BudgetExceeded, "source is %d bytes, over the budget of %d bytes", size, r.MaxBytes)
	}
	head := make([]byte, min(size, 4096))
	if n, err := ra.ReadAt(head, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(head)) {
		return nil, fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	for _, h := range unsafeHeaders {
		if bytes.HasPrefix(trimmed, h) {
			return nil, fault.Data(fault.UnsafeSource, "source is a %s document, which makes GDAL open the files or URLs it names; refused", h[1:])
		}
	}
	if isZipMagic(head) || formats.IsZip(name) {
		zr, err := zip.NewReader(ra, size)
		if err != nil {
			return nil, fault.DataWrap(fault.CorruptSource, err, "source is named like a zip archive but is not a readable one")
		}
		return zipArchive(zr, name, gdalPath, r, p)
	}
	s := &Source{Path: gdalPath, Name: name, Siblings: []string{name}, Bytes: size}
	s.Driver = p.Identify(s.Path, IdentifyAllowed, s.Siblings)
	if err := s.checkDriver(p, r); err != nil {
		return nil, err
	}
	switch s.Driver {
	case "netCDF", "HDF5":
		return nil, fault.Data(fault.UnsupportedFormat, "%s cannot be read by ranges; it must be downloaded first", s.Driver)
	case "ESRI Shapefile":
		return nil, fault.Data(fault.UnsupportedFormat, "a bare .shp cannot be read by ranges without its .shx/.dbf/.prj; upload the shapefile zipped")
	case "KML", "LIBKML":
		if err := scanKML(io.NewSectionReader(ra, 0, size), name); err != nil {
			return nil, err
		}
	case "GTiff", "COG":
		if err := budget.CheckTIFF(ra, size, r); err != nil {
			return nil, err
		}
	}
	return s, nil
}
