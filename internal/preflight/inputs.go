package preflight

// Size: the checks preflight makes on an input's files (zip, shapefile, KML, DBF): each small, all about one source's files.

// Inputs that need more than "hand the file to GDAL": archives (zipped
// Shapefile, KMZ, zipped File Geodatabase), KML (which can name URLs), and
// the .prj sidecar (whose content GDAL drops silently when it cannot parse
// it). Everything here is pure Go reading of the LOCAL source: GDAL is only
// handed an archive through /vsizip/ after Go's archive/zip has checked
// every entry of it.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
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
	"unicode/utf8"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Archive limits. The declared uncompressed total is also held to the
// recipe's byte budget; GDAL's /vsizip/ never inflates an entry past its
// declared size, so the declared sizes are the real bound.
const (
	// MaxZipEntries is the most entries an archive may hold.
	MaxZipEntries = 10_000
	// maxZipRatio refuses an entry that inflates more than this many times
	// (deflate tops out near 1032:1, so only degenerate content comes
	// close). It applies only to entries that inflate past zipRatioFloor:
	// below it, mostly constant rasters compress as well as a bomb (a
	// 1201 x 1201 Int16 SRTM tile of sea level, 2.9 MB, zips to 3.4 kB,
	// 850:1; a 3601 x 3601 one is 26 MB), and inflating 64 MiB costs a
	// conversion nothing that the byte budget has not already allowed.
	// The harm of a bomb is its size, which the declared sizes (held to
	// the recipe's byte budget) bound; the ratio is a second line for
	// large entries only (docs/decisions/0092).
	maxZipRatio   = 200
	zipRatioFloor = 64 << 20
	maxPRJBytes   = 64 << 10
)

func isZipMagic(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
}

// vsiZipPath is GDAL's name of entry inside the local archive file zipPath.
// The braces let the archive path itself contain ".zip".
func vsiZipPath(zipPath, entry string) string {
	return "/vsizip/{" + zipPath + "}/" + entry
}

// ignoredEntry: macOS resource forks and Finder files, which zips made on
// a Mac carry beside every file.
func ignoredEntry(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(name, "__MACOSX/") || strings.HasPrefix(base, "._") || base == ".DS_Store" || base == "Thumbs.db"
}

// zipFile checks a local zip archive entry by entry and picks what
// GDAL is to open inside it:
//   - a File Geodatabase directory (x.gdb/…), opened with OpenFileGDB;
//   - else exactly one Shapefile, with its .shx, .dbf and .prj;
//   - else a KML document (doc.kml for a KMZ, else the only .kml);
//   - else the only file in it (a zipped GeoTIFF, GeoJSON, GeoPackage …).
//
// Refusals: not a readable zip → CorruptSource; too many entries, declared
// size over budget, or an inflation ratio of a bomb → BudgetExceeded;
// absolute or ".." names, symbolic links, nested archives, KML NetworkLinks
// → UnsafeSource; encrypted or unusually compressed entries, several
// datasets → UnsupportedFormat.
func zipFile(src string, r recipe.Recipe, p Probe) (*Source, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, fault.Systemic("preflight.Local", err)
	}
	zr, err := zip.OpenReader(abs)
	if err != nil {
		return nil, fault.DataWrap(fault.CorruptSource, err, "source is named like a zip archive but is not a readable one")
	}
	defer zr.Close()
	return zipArchive(&zr.Reader, src, abs, r, p)
}

// zipArchive is zipFile on an open archive: name is the
// source as given, gdalPath the archive's name for GDAL (a local file or
// one of our own VSI keys).
func zipArchive(zr *zip.Reader, name, gdalPath string, r recipe.Recipe, p Probe) (*Source, error) {
	files, declared, err := zipEntries(zr, r)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: "", Name: name, Archive: gdalPath, Bytes: int64(declared)}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if err := s.zipDataset(names, files, r, p); err != nil {
		return nil, err
	}
	if s.Driver == "" {
		s.Driver = p.Identify(s.Path, IdentifyAllowed, s.Siblings)
	}
	if err := s.checkDriver(p, r); err != nil {
		return nil, err
	}
	switch s.Driver {
	case "netCDF", "HDF5":
		// Both libraries want a real file; they cannot read through /vsizip/.
		return nil, fault.Data(fault.UnsupportedFormat, "a zipped %s file cannot be read in place; upload the file itself", s.Driver)
	}
	return s, nil
}

// zipEntries checks every entry of the archive and returns its regular
// files by cleaned name with the bytes they declare uncompressed.
func zipEntries(zr *zip.Reader, r recipe.Recipe) (map[string]*zip.File, uint64, error) {
	if len(zr.File) > MaxZipEntries {
		return nil, 0, fault.Data(fault.BudgetExceeded, "archive holds %d entries, over the limit of %d", len(zr.File), MaxZipEntries)
	}
	var declared uint64
	files := map[string]*zip.File{} // cleaned name → entry (regular files only)
	for _, f := range zr.File {
		name := f.Name
		if err := checkEntryName(name); err != nil {
			return nil, 0, err
		}
		regular, err := checkEntryMode(f)
		if err != nil {
			return nil, 0, err
		}
		if !regular || ignoredEntry(name) {
			continue
		}
		if err := checkEntryEncoding(f); err != nil {
			return nil, 0, err
		}
		if _, dup := files[name]; dup {
			return nil, 0, fault.Data(fault.CorruptSource, "archive holds %q twice", name)
		}
		declared += f.UncompressedSize64
		if r.MaxBytes > 0 && declared > uint64(r.MaxBytes) {
			return nil, 0, fault.Data(fault.BudgetExceeded, "archive entries declare %d bytes uncompressed (at %q), over the byte budget of %d (recipe max_bytes)", declared, name, r.MaxBytes)
		}
		if f.UncompressedSize64 > zipRatioFloor && f.UncompressedSize64 > maxZipRatio*max(f.CompressedSize64, 1) {
			return nil, 0, fault.Data(fault.BudgetExceeded, "archive entry %q inflates %d bytes into %d (over %d:1): refused as a zip bomb",
				name, f.CompressedSize64, f.UncompressedSize64, maxZipRatio)
		}
		files[name] = f
	}
	if len(files) == 0 {
		return nil, 0, fault.Data(fault.EmptyDataset, "archive holds no files")
	}
	return files, declared, nil
}

// checkEntryMode refuses links and special files; regular is false for a
// directory, which is skipped.
func checkEntryMode(f *zip.File) (regular bool, err error) {
	name, mode := f.Name, f.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return false, fault.Data(fault.UnsafeSource, "archive entry %q is a symbolic link; links are not followed", name)
	case mode.IsDir() || strings.HasSuffix(name, "/"):
		return false, nil
	case mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0:
		return false, fault.Data(fault.UnsafeSource, "archive entry %q is not a regular file", name)
	}
	return true, nil
}

// checkEntryEncoding refuses what GDAL's /vsizip/ would not read plainly:
// encryption, other compression methods, archives inside the archive.
func checkEntryEncoding(f *zip.File) error {
	name := f.Name
	if f.Flags&0x1 != 0 {
		return fault.Data(fault.UnsupportedFormat, "archive entry %q is encrypted; upload it without a password", name)
	}
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return fault.Data(fault.UnsupportedFormat, "archive entry %q uses compression method %d; use deflate (a plain zip)", name, f.Method)
	}
	if formats.IsArchive(name) {
		// GDAL would chain /vsizip/ on its own.
		return fault.Data(fault.UnsafeSource, "archive entry %q is itself an archive; nested archives are not opened: unpack it and upload its content", name)
	}
	return nil
}

// zipDataset picks the one dataset among the archive's sorted file names:
// a File Geodatabase, a shapefile, a KMZ's document, or one file with its
// sidecars.
func (s *Source) zipDataset(names []string, files map[string]*zip.File, r recipe.Recipe, p Probe) error {
	abs := s.Archive
	// A File Geodatabase: the one directory named *.gdb.
	gdbs := map[string]bool{}
	for _, n := range names {
		parts := strings.Split(n, "/")
		for i, p := range parts[:len(parts)-1] {
			if formats.Lookup(p).Directory {
				gdbs[strings.Join(parts[:i+1], "/")] = true
				break
			}
		}
	}
	byExt := func(ext string) []string {
		var out []string
		for _, n := range names {
			if formats.Lookup(n).Ext == ext {
				out = append(out, n)
			}
		}
		return out
	}
	switch shps, kmls := byExt(".shp"), byExt(".kml"); {
	case len(gdbs) > 1:
		return fault.Data(fault.UnsupportedFormat, "archive holds %d File Geodatabases; upload one per archive", len(gdbs))
	case len(gdbs) == 1:
		for g := range gdbs {
			s.Path = vsiZipPath(abs, g)
			s.Siblings = nil
		}
		s.Driver = "OpenFileGDB"
	case len(shps) > 1:
		return fault.Data(fault.UnsupportedFormat, "archive holds %d shapefiles (%s); upload one per archive", len(shps), strings.Join(shps, ", "))
	case len(shps) == 1:
		return zipShapefile(s, shps[0], files, p, r.AssignCRS != "")
	case len(kmls) > 0:
		doc, err := kmzDocument(kmls)
		if err != nil {
			return err
		}
		rc, err := files[doc].Open()
		if err != nil {
			return fault.DataWrap(fault.CorruptSource, err, "archive entry %q cannot be read", doc)
		}
		err = scanKML(rc, doc)
		rc.Close()
		if err != nil {
			return err
		}
		s.Path = vsiZipPath(abs, doc)
		s.Siblings = []string{path.Base(doc)}
	default:
		stem, err := zipMainFile(names)
		if err != nil {
			return err
		}
		s.Path = vsiZipPath(abs, stem)
		s.Siblings = zipSiblings(stem, names)
	}
	return nil
}

// kmzDocument is the KMZ's document: doc.kml, or else its one top-level
// .kml.
func kmzDocument(kmls []string) (string, error) {
	doc := ""
	for _, k := range kmls {
		if strings.EqualFold(k, "doc.kml") {
			doc = k
		}
	}
	if doc != "" {
		return doc, nil
	}
	var top []string
	for _, k := range kmls {
		if !strings.Contains(k, "/") {
			top = append(top, k)
		}
	}
	if len(top) != 1 {
		return "", fault.Data(fault.UnsupportedFormat, "KMZ has no doc.kml and %d top-level .kml documents; want exactly one", len(top))
	}
	return top[0], nil
}

// zipMainFile is the archive's one dataset file, its other files being
// sidecars of the same stem.
func zipMainFile(names []string) (string, error) {
	stem := ""
	for _, n := range names {
		if formats.IsSidecar(n) || (formats.Conditional(n) && hasMainAmong(n, names)) {
			continue
		}
		if stem != "" {
			return "", fault.Data(fault.UnsupportedFormat, "archive holds several files (%s); upload one dataset per archive", strings.Join(names, ", "))
		}
		stem = n
	}
	if stem == "" {
		return "", fault.Data(fault.UnsupportedFormat, "archive holds only sidecar files (%s)", strings.Join(names, ", "))
	}
	return stem, nil
}

// checkEntryName refuses names that would climb out of, or sit outside,
// the archive if it were ever extracted, and names GDAL's VSI layer would
// read as something other than a plain entry.
func checkEntryName(name string) error {
	bad := name == "" || strings.ContainsAny(name, "\\\x00{}") || strings.HasPrefix(name, "/") ||
		(len(name) >= 2 && name[1] == ':') || strings.HasPrefix(name, "/vsi")
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." {
			bad = true
		}
	}
	if bad {
		return fault.Data(fault.UnsafeSource, "archive entry name %q is absolute or climbs out of the archive (path traversal); refused", name)
	}
	return nil
}

// hasMainAmong reports whether one of names (archive entries) is the main
// file of the sidecar named name, in the same directory.
func hasMainAmong(name string, names []string) bool {
	dir, base := path.Split(name)
	for _, n := range names {
		if d, b := path.Split(n); d == dir && formats.SidecarOf(b, base) {
			return true
		}
	}
	return false
}

// zipSiblings lists the entries GDAL reads beside main (same directory,
// formats.SidecarOf and Format.ReadByGDAL), main's own base name first.
func zipSiblings(main string, names []string) []string {
	dir, base := path.Split(main)
	out := []string{base}
	for _, n := range names {
		d, b := path.Split(n)
		if d == dir && formats.SidecarOf(base, b) && formats.Lookup(b).ReadByGDAL {
			out = append(out, b)
		}
	}
	sort.Strings(out[1:])
	return out
}

// zipShapefile requires the three files a Shapefile is made of and a CRS
// (a .prj, or the recipe's assign_crs: assigned).
func zipShapefile(s *Source, shp string, files map[string]*zip.File, p Probe, assigned bool) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sib := zipSiblings(shp, names)
	find := func(ext string) string {
		for _, b := range sib {
			if strings.EqualFold(path.Ext(b), ext) && strings.EqualFold(strings.TrimSuffix(b, path.Ext(b)), formats.Stem(path.Base(shp))) {
				return path.Join(path.Dir(shp), b)
			}
		}
		return ""
	}
	for _, ext := range []string{".shx", ".dbf"} {
		if find(ext) == "" {
			return shapefileMissing(ext, path.Base(shp))
		}
	}
	prj := find(".prj")
	if prj == "" && assigned {
		s.Path = vsiZipPath(s.Archive, shp)
		s.Siblings = sib
		return nil
	}
	if prj == "" {
		return shapefileMissing(".prj", path.Base(shp))
	}
	f := files[prj]
	if f.UncompressedSize64 > maxPRJBytes {
		return fault.Data(fault.InvalidCRS, "%s is %d bytes: not a .prj", prj, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "archive entry %q cannot be read", prj)
	}
	text, err := io.ReadAll(io.LimitReader(rc, maxPRJBytes))
	rc.Close()
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "archive entry %q cannot be read", prj)
	}
	if err := checkPRJText(text, path.Base(prj), p); err != nil {
		return err
	}
	if cpg := find(".cpg"); cpg != "" && files[cpg].UncompressedSize64 < 256 {
		if rc, err := files[cpg].Open(); err == nil {
			text, _ := io.ReadAll(io.LimitReader(rc, 256))
			rc.Close()
			if declaresUTF8(text) {
				rc, err := files[find(".dbf")].Open()
				if err != nil {
					return fault.DataWrap(fault.CorruptSource, err, "archive entry %q cannot be read", find(".dbf"))
				}
				err = checkDBFUTF8(rc, path.Base(find(".dbf")))
				rc.Close()
				if err != nil {
					return err
				}
			}
		}
	}
	s.Path = vsiZipPath(s.Archive, shp)
	s.Siblings = sib
	return nil
}

func shapefileMissing(ext, shp string) error {
	switch ext {
	case ".prj":
		return fault.Data(fault.MissingCRS, "shapefile %s has no .prj: its coordinate reference system is unknown; add the .prj to the archive beside it, or a recipe rule matching it with assign_crs: \"EPSG:xxxx\", then migrate or replay again", shp)
	case ".shx":
		return fault.Data(fault.CorruptSource, "shapefile %s has no .shx index; upload it together with the .shp (or rebuild it: ogr2ogr --config SHAPE_RESTORE_SHX YES)", shp)
	default:
		return fault.Data(fault.CorruptSource, "shapefile %s has no %s attribute table; upload it together with the .shp", shp, ext)
	}
}

// checkPRJText refuses a .prj that is present but not a CRS: GDAL would
// drop it with a warning and the data would look as if it had none.
func checkPRJText(text []byte, name string, p Probe) error {
	t := strings.TrimSpace(string(bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))))
	if t == "" {
		return fault.Data(fault.MissingCRS, "%s is empty: the coordinate reference system is unknown", name)
	}
	if err := p.ParseCRS(t); err != nil {
		return fault.DataWrap(fault.InvalidCRS, err, "%s is not a WKT coordinate reference system (%q…); replace it with a valid .prj", name, clip(t, 40))
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// checkLocalPRJ checks the .prj sidecar of a local file, when there is one.
func checkLocalPRJ(src string, siblings []string, pr Probe) error {
	dir := filepath.Dir(src)
	stem := strings.ToLower(formats.Stem(filepath.Base(src)))
	for _, b := range siblings[1:] {
		if strings.ToLower(b) != stem+".prj" {
			continue
		}
		p := filepath.Join(dir, b)
		fi, err := os.Stat(p)
		if err != nil {
			return nil
		}
		if fi.Size() > maxPRJBytes {
			return fault.Data(fault.InvalidCRS, "%s is %d bytes: not a .prj", b, fi.Size())
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return fault.DataWrap(fault.CorruptSource, err, "%s cannot be read", b)
		}
		return checkPRJText(text, b, pr)
	}
	return nil
}

// checkLocalShapefile requires .shx and .dbf beside a .shp (the .prj is
// checked by the layer's CRS check, which names the layer).
func checkLocalShapefile(src string, siblings []string) error {
	stem := strings.ToLower(formats.Stem(filepath.Base(src)))
	have := map[string]bool{}
	for _, b := range siblings {
		have[strings.ToLower(b)] = true
	}
	for _, ext := range []string{".shx", ".dbf"} {
		if !have[stem+ext] {
			return shapefileMissing(ext, filepath.Base(src))
		}
	}
	return nil
}

// kmlUnsafe are KML elements that make a reader fetch other documents
// (NetworkLink, and the super-overlays built from it) or expand entities.
var kmlUnsafe = []struct{ needle, why string }{
	{"<networklink", "a NetworkLink, which makes a KML reader fetch another document (a super-overlay or a remote layer)"},
	{":networklink", "a NetworkLink, which makes a KML reader fetch another document (a super-overlay or a remote layer)"},
	{"<!entity", "an XML entity declaration (entity expansion or external entities)"},
}

// scanKML reads a KML document once, in bounded chunks, and refuses it if
// it holds anything in kmlUnsafe. Case-insensitive: a reader may be lenient.
func scanKML(r io.Reader, name string) error {
	const chunk = 64 << 10
	keep := 0
	for _, k := range kmlUnsafe {
		keep = max(keep, len(k.needle)-1)
	}
	buf := make([]byte, 0, chunk+keep)
	tmp := make([]byte, chunk)
	for {
		n, err := r.Read(tmp)
		if n > 0 {
			buf = append(buf, bytes.ToLower(tmp[:n])...)
			for _, k := range kmlUnsafe {
				if bytes.Contains(buf, []byte(k.needle)) {
					return fault.Data(fault.UnsafeSource, "%s holds %s; refused: flatten it to plain placemarks", name, k.why)
				}
			}
			if len(buf) > keep {
				buf = append(buf[:0], buf[len(buf)-keep:]...)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fault.DataWrap(fault.CorruptSource, err, "%s cannot be read", name)
		}
	}
}

// checkLocalKML scans a local KML file.
func checkLocalKML(src string) error {
	f, err := os.Open(src)
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "source cannot be read")
	}
	defer f.Close()
	return scanKML(f, filepath.Base(src))
}

// checkDriver refuses a driver outside the allow-list, by kind, and the
// inputs that need a recipe or a bound of their own.
func (s *Source) checkDriver(p Probe, r recipe.Recipe) error {
	switch {
	case s.Driver == "":
		return s.unidentified(p)
	case slices.Contains(UnsafeDrivers, s.Driver):
		return fault.Data(fault.UnsafeSource, "source is a %s dataset, which can make GDAL read other files or URLs; refused", s.Driver)
	case slices.Contains(unsupportedDrivers, s.Driver):
		return fault.Data(fault.UnsupportedFormat, "source is %s, which is not a supported input format", s.Driver)
	case s.Driver == "CSV" && r.CSVGeometry == "":
		return fault.Data(fault.UnsupportedFormat,
			"source is a CSV table, whose geometry GDAL cannot guess safely; add a recipe rule for it naming its geometry columns and CRS, e.g. csv: {geometry: wkt, wkt_column: WKT} or csv: {geometry: xy, x_column: lon, y_column: lat}, with assign_crs: EPSG:4326")
	case s.Driver == "TopoJSON" && r.MaxMemory > 0 && s.Bytes > r.MaxMemory/topoJSONParseFactor:
		return fault.Data(fault.BudgetExceeded,
			"source is a TopoJSON document of %d bytes; GDAL parses it whole (about %d times its size), over the memory budget of %d bytes: split it, or convert it to GeoJSON",
			s.Bytes, topoJSONParseFactor, r.MaxMemory)
	}
	return nil
}

// topoJSONParseFactor: GDAL's TopoJSON reader holds the whole document as
// a json-c tree, which takes about this many times the text (as a GeoJSON
// feature does: budget.GeoJSONObjectLimit).
const topoJSONParseFactor = 24

// Stem names outputs after the uploaded file ("roads.shp.zip" → "roads",
// "city.gdb.zip" → "city", "places.kmz" → "places").
func (s *Source) Stem() string {
	return formats.Stem(filepath.Base(s.Name))
}

func (s *Source) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.Driver) }

// declaresUTF8 reports a .cpg that names UTF-8.
func declaresUTF8(cpg []byte) bool {
	switch strings.ToUpper(strings.TrimSpace(string(cpg))) {
	case "UTF-8", "UTF8", "65001", "UTF_8":
		return true
	}
	return false
}

// checkDBFUTF8 reads a DBF attribute table once and refuses it when a
// character field holds bytes that are not UTF-8 although the .cpg says
// they are: GDAL would pass them through into an output that readers then
// reject or mangle. The usual cause is a Latin-1/Windows-1252 export with a
// wrong .cpg; the fix is to correct the .cpg.
func checkDBFUTF8(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head := make([]byte, 32)
	if _, err := io.ReadFull(br, head); err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "%s: attribute table header cannot be read", name)
	}
	nrec := binary.LittleEndian.Uint32(head[4:8])
	hlen := int(binary.LittleEndian.Uint16(head[8:10]))
	rlen := int(binary.LittleEndian.Uint16(head[10:12]))
	if hlen < 33 || rlen < 1 {
		return fault.Data(fault.CorruptSource, "%s: attribute table header is damaged", name)
	}
	rest := make([]byte, hlen-32)
	if _, err := io.ReadFull(br, rest); err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "%s: attribute table header cannot be read", name)
	}
	type field struct {
		name     string
		off, len int
	}
	var fields []field
	off := 1 // deletion flag
	for i := 0; i+32 <= len(rest) && rest[i] != 0x0D; i += 32 {
		d := rest[i : i+32]
		f := field{name: strings.TrimRight(string(d[:11]), "\x00"), off: off, len: int(d[16])}
		off += f.len
		if d[11] == 'C' {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	rec := make([]byte, rlen)
	for n := uint32(0); n < nrec; n++ {
		if _, err := io.ReadFull(br, rec); err != nil {
			return nil // a short table is GDAL's to report
		}
		for _, f := range fields {
			if f.off+f.len > rlen {
				return fault.Data(fault.CorruptSource, "%s: field %s lies outside the record", name, f.name)
			}
			if v := rec[f.off : f.off+f.len]; !utf8.Valid(v) {
				return fault.Data(fault.SchemaMismatch,
					"%s: field %s of record %d is not UTF-8 (%q) although the .cpg declares UTF-8; correct the .cpg to the real encoding (e.g. ISO-8859-1 or 1252) and upload again",
					name, f.name, n+1, bytes.TrimSpace(v))
			}
		}
	}
	return nil
}

// checkLocalDBF applies checkDBFUTF8 to a local shapefile whose .cpg declares UTF-8.
func checkLocalDBF(src string, siblings []string) error {
	dir := filepath.Dir(src)
	stem := strings.ToLower(formats.Stem(filepath.Base(src)))
	var cpg, dbf string
	for _, b := range siblings {
		switch strings.ToLower(b) {
		case stem + ".cpg":
			cpg = filepath.Join(dir, b)
		case stem + ".dbf":
			dbf = filepath.Join(dir, b)
		}
	}
	if cpg == "" || dbf == "" {
		return nil
	}
	text, err := readHead(cpg, 256)
	if err != nil || !declaresUTF8(text) {
		return nil
	}
	f, err := os.Open(dbf)
	if err != nil {
		return fault.DataWrap(fault.CorruptSource, err, "%s cannot be read", filepath.Base(dbf))
	}
	defer f.Close()
	return checkDBFUTF8(f, filepath.Base(dbf))
}
