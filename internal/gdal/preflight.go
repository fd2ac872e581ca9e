package gdal

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Drivers a source may be opened with. Each reads only the source file and
// the sidecars we name; none follows references to other files or URLs.
var (
	RasterDrivers = []string{"GTiff", "COG", "JP2OpenJPEG", "netCDF", "HDF5", "HFA", "AAIGrid", "PNG", "JPEG"}
	VectorDrivers = []string{"ESRI Shapefile", "OpenFileGDB", "GPKG", "KML", "LIBKML", "GeoJSON", "FlatGeobuf"}
)

// outputDrivers are the GDAL drivers the engine writes with: COG for
// rasters, FlatGeobuf for vectors on request. GeoParquet is written in Go
// (internal/geoparquet), through no GDAL driver. The Lambda layer
// (layers/gdal/manifest.json) builds exactly these and the drivers above.
const (
	cogDriver        = "COG"
	flatGeobufDriver = "FlatGeobuf"
)

var outputDrivers = []string{cogDriver, flatGeobufDriver}

// unsafeDrivers open other files or URLs named inside the source. They take
// part in identification only so that such a source is refused by name.
var unsafeDrivers = []string{
	"VRT", "OGR_VRT", "GTI", "DERIVED", "WMS", "WMTS", "WCS", "WFS", "OAPIF", "STACIT", "STACTA",
	"KMLSUPEROVERLAY", "PLMOSAIC", "EEDA", "EEDAI", "DAAS", "NGW", "ESRIC", "Rasterlite", "OGCAPI",
	"GDALG", "VICAR", "PDS", "PDS4", "ISIS3",
}

// unsupportedDrivers are recognised to give a precise message, but not converted.
var unsupportedDrivers = []string{"MBTiles", "SQLite", "CSV", "ENVI", "EHdr", "GPX", "DXF", "MapInfo File", "GML", "XLSX", "PDF", "BMP", "GIF"}

// identifyAllowed is what identification may answer.
var identifyAllowed = concat(RasterDrivers, VectorDrivers, unsafeDrivers, unsupportedDrivers)

// texts that open other files or URLs: refused before GDAL looks at them.
var unsafeHeaders = [][]byte{
	[]byte("<VRTDataset"), []byte("<OGRVRTDataSource"), []byte("<GDALTileIndexDataset"),
	[]byte("<GDAL_WMS"), []byte("<GDAL_WMTS"), []byte("<WCS_GDAL"), []byte("<WFS_GDAL"),
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// source is what preflight learnt about a source before a full open.
type source struct {
	path     string // what GDAL opens: the file, or a /vsizip/ path into it
	name     string // the local file as given (for stems and messages)
	archive  string // absolute path of the zip archive path points into, if any
	driver   string
	siblings []string // base names GDAL may open beside path (path's own name first)
	bytes    int64    // total size with sidecars
}

// preflight checks a local source without a full open: a regular,
// non-empty, readable file (or an OpenFileGDB directory), not pointing
// elsewhere, within the byte budget, recognised by an allowed driver.
func preflight(src string, r recipe.Recipe) (*source, error) {
	if strings.HasPrefix(src, "/vsi") || strings.Contains(src, "://") || strings.ContainsAny(src, "\x00\n") {
		return nil, fault.Data(fault.UnsafeSource, "source name %q is a GDAL virtual path or URL; only local files are converted", src)
	}
	fi, err := os.Lstat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fault.Systemic("gdal.preflight", err) // the caller lost its own download
	case err != nil:
		return nil, fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fault.Data(fault.UnsafeSource, "source is a symbolic link")
	}
	s := &source{path: src, name: src}
	if fi.IsDir() {
		// Only a File Geodatabase is a directory source.
		if !formats.Lookup(src).Directory {
			return nil, fault.Data(fault.UnsupportedFormat, "source is a directory, not a .gdb File Geodatabase")
		}
		s.bytes = dirSize(src)
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
			return preflightZip(src, r)
		}
		s.siblings, s.bytes = siblings(src, fi.Size())
	}
	if r.MaxBytes > 0 && s.bytes > r.MaxBytes {
		return nil, fault.Data(fault.BudgetExceeded, "source is %d bytes, over the budget of %d bytes", s.bytes, r.MaxBytes)
	}

	s.driver = identify(src, identifyAllowed, s.siblings)
	if err := s.checkDriver(); err != nil {
		return nil, err
	}
	switch s.driver {
	case "ESRI Shapefile":
		if formats.Lookup(src).Ext == ".shp" {
			if err := checkLocalShapefile(src, s.siblings); err != nil {
				return nil, err
			}
			if err := checkLocalDBF(src, s.siblings); err != nil {
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
	if len(s.siblings) > 1 {
		if err := checkLocalPRJ(src, s.siblings); err != nil {
			return nil, err
		}
	}
	return s, nil
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
	entries, err := os.ReadDir(dir)
	if err != nil {
		return names, total
	}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !formats.SidecarOf(base, n) || !formats.Lookup(n).ReadByGDAL {
			continue
		}
		if info, err := e.Info(); err == nil {
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

// checkLocalTIFF applies checkTIFFBudget to a local file.
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
	return checkTIFFBudget(f, fi.Size(), r)
}

// open fully opens a preflighted source with its identified driver only.
func (s *source) open(rec *recorder) (*godal.Dataset, error) {
	opts := []godal.OpenOption{godal.Drivers(s.driver), rec.opt()}
	if len(s.siblings) > 1 {
		opts = append(opts, godal.SiblingFiles(s.siblings[1:]...))
	}
	ds, err := godal.Open(s.path, opts...)
	if err != nil {
		return nil, classify("gdal.Open", err, "", fault.CorruptSource, "%s cannot open the source", s.driver)
	}
	return ds, nil
}

// checkCRS requires a valid, georeferencing CRS.
func checkCRS(wkt string, what string, rec *recorder) error {
	if strings.TrimSpace(wkt) == "" {
		return fault.Data(fault.MissingCRS, "%s has no coordinate reference system; assign one (e.g. gdal_edit.py -a_srs EPSG:xxxx) and upload again", what)
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
