package gdal

// Size: Convert's raster path from the source to a checked COG, its named steps in the order they run.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"golang.org/x/sys/unix"
)

// Convert converts the local file src into workDir following r.
//
// Order of work: recipe and work dir checks (systemic), preflight without a
// full open (UnsafeSource, UnsupportedFormat, CorruptSource,
// BudgetExceeded on bytes), full open with the identified driver only,
// declared pixel / feature budgets, CRS, then the conversion itself. A
// failed conversion leaves nothing in workDir.
func (e *Engine) Convert(ctx context.Context, src, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// One OS thread for the whole conversion: GDAL keeps per-thread state
	// (PROJ context, error handler stack, thread-local config options) and
	// a conversion should see one consistent set of it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r = r.WithDefaults()
	if err := r.Validate(); err != nil {
		return nil, err
	}
	r.MaxMemory = budget.Effective(r.MaxMemory, e.cfg.MemoryLimit)
	if err := checkWorkDir(workDir); err != nil {
		return nil, err
	}
	s, err := preflight.Local(src, r, probe{})
	if err != nil {
		return nil, err
	}
	return e.convertSource(ctx, s, workDir, r)
}

// convertSource is the conversion of a preflighted source.
func (e *Engine) convertSource(ctx context.Context, s *preflight.Source, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	// A recipe is checked before a run (recipe.Book.Check); one that
	// reaches a conversion unchecked (a Lambda reads its recipe file
	// where no GDAL is) is the recipe's fault, not the engine's: the file
	// waits in remediation for the fixed recipe and a replay.
	if err := r.Check(e.Capabilities()); err != nil {
		return nil, fault.Data(fault.InvalidInput, "the recipe of this file cannot be applied by GDAL %s: %v; fix the recipe (geomigrate recipe show checks it), then replay", e.version, err)
	}
	rec := newRecorder()
	// This engine's temp dir and threads, whatever another Engine of the
	// process set process-wide (perConversion).
	defer setThreadConfig("CPL_TMPDIR", e.cfg.TmpDir)()
	defer setThreadConfig("GDAL_NUM_THREADS", strconv.Itoa(e.threads()))()
	// GDAL parses a GeoJSON feature whole (at ~24 times its text): the
	// largest one it accepts follows the memory budget.
	if lim := budget.GeoJSONObjectLimit(r.MaxMemory); lim != "" {
		defer setThreadConfig("OGR_GEOJSON_MAX_OBJ_SIZE", lim)()
	}
	ds, err := openSource(s, r, rec)
	if err != nil {
		if be := geoJSONObjectError(err, r.MaxMemory); be != nil {
			return nil, be
		}
		return nil, err
	}
	defer ds.Close()

	var outs []recipe.Output
	switch {
	case len(ds.Bands()) > 0 || len(subdatasets(ds)) > 0:
		outs, err = e.convertRaster(ctx, ds, s, workDir, r, rec)
	case len(ds.Layers()) > 0:
		outs, err = e.convertVector(ctx, ds, s, workDir, r, rec)
	default:
		err = fault.Data(fault.EmptyDataset, "%s source has neither raster bands nor vector layers", s.Driver)
	}
	if err != nil {
		for _, o := range outs {
			os.Remove(o.Path)
		}
		return nil, err
	}
	return outs, nil
}

func checkWorkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fault.Systemic("gdal.Convert: work dir", err)
	}
	if !fi.IsDir() {
		return fault.Systemic("gdal.Convert: work dir", fmt.Errorf("%s is not a directory", dir))
	}
	// access(2) rather than a probe file: one system call, no inode made
	// and removed per conversion; it reports a read-only mount (EROFS) too.
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fault.Systemic("gdal.Convert: work dir not writable", fmt.Errorf("%s: %w", dir, err))
	}
	return nil
}

// subdatasets lists SUBDATASET_n_NAME values in order (netCDF, HDF5 …).
func subdatasets(ds *godal.Dataset) []string {
	md := ds.Metadatas(godal.Domain("SUBDATASETS"))
	type sub struct {
		n    int
		name string
	}
	var subs []sub
	for k, v := range md {
		if !strings.HasSuffix(k, "_NAME") || !strings.HasPrefix(k, "SUBDATASET_") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k, "SUBDATASET_"), "_NAME"))
		if err == nil {
			subs = append(subs, sub{n, v})
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].n < subs[j].n })
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.name
	}
	return out
}

// ---- raster ----

func (e *Engine) convertRaster(ctx context.Context, ds *godal.Dataset, s *preflight.Source, workDir string, r recipe.Recipe, rec *recorder) ([]recipe.Output, error) {
	stem := s.Stem()
	if len(ds.Bands()) > 0 {
		o, err := e.rasterOne(ctx, ds, s, filepath.Join(workDir, stem+".tif"), "", r, rec)
		if err != nil {
			return nil, err
		}
		return []recipe.Output{o}, nil
	}
	// A container of subdatasets: one COG per subdataset, all or nothing,
	// never two in one file name.
	var outs []recipe.Output
	files := map[string]string{}
	for _, name := range subdatasets(ds) {
		file := stem + "." + recipe.SafeName(subdatasetLayer(name)) + ".tif"
		if other, dup := files[file]; dup {
			return nil, fault.Data(fault.SchemaMismatch, "subdatasets %q and %q would both be written as %s", other, name, file)
		}
		files[file] = name
	}
	for _, name := range subdatasets(ds) {
		if err := ctx.Err(); err != nil {
			return outs, err
		}
		layer := subdatasetLayer(name)
		if !strings.Contains(name, s.Path) {
			return outs, fault.Data(fault.UnsafeSource, "subdataset %q refers to a file other than the source", name)
		}
		sub, err := godal.Open(name, godal.Drivers(subdatasetDrivers(s.Driver)...), godal.RasterOnly(), rec.opt())
		if err != nil {
			return outs, classify("gdal.Open", err, "", fault.CorruptSource, "cannot open subdataset %s", layer)
		}
		o, err := e.rasterOne(ctx, sub, s, filepath.Join(workDir, stem+"."+recipe.SafeName(layer)+".tif"), layer, r, rec.child())
		sub.Close()
		if err != nil {
			return outs, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// subdatasetDrivers: the drivers that open a container's subdatasets (the
// HDF5 driver hands each array to HDF5Image).
func subdatasetDrivers(container string) []string {
	switch container {
	case "HDF5":
		return []string{"HDF5", "HDF5Image"}
	}
	return []string{container}
}

func subdatasetLayer(name string) string {
	if i := strings.LastIndex(name, ":"); i >= 0 && i < len(name)-1 {
		return strings.TrimLeft(name[i+1:], "/")
	}
	return name
}

// COGOptions are the pinned gdal_translate switches for a raster: every
// creation option that shapes the bytes is explicit, none is left to a
// GDAL default that may move between releases. categorical is what
// categoricalReason found; the resampling chosen is recorded in the
// file's metadata (resamplingMetadataKey), and so is the output's
// lineage (lineageItems): r's SourceSHA256 and hash, and the versions.
func COGOptions(r recipe.Recipe, categorical bool, numThreads int) []string {
	r = r.WithDefaults()
	resampling := r.OverviewResamplingFor(categorical)
	co := []string{
		"BLOCKSIZE=" + strconv.Itoa(r.BlockSize),
		"COMPRESS=" + r.Compression,
		"OVERVIEW_COMPRESS=" + r.Compression,
	}
	switch r.Compression {
	case "ZSTD", "LERC_ZSTD":
		co = append(co, "LEVEL="+strconv.Itoa(r.ZSTDLevel))
	case "DEFLATE", "LERC_DEFLATE":
		co = append(co, "LEVEL="+strconv.Itoa(r.DeflateLevel))
	case "JPEG", "WEBP":
		q := strconv.Itoa(r.Quality)
		co = append(co, "QUALITY="+q, "OVERVIEW_QUALITY="+q)
	}
	if predictor := predictorFor(r, categorical); predictor != "" {
		co = append(co, "PREDICTOR="+predictor, "OVERVIEW_PREDICTOR="+predictor)
	}
	overviews := "OVERVIEWS=IGNORE_EXISTING"
	switch {
	case r.OverviewLevels == recipe.OverviewsNone:
		overviews = "OVERVIEWS=NONE"
	case r.OverviewLevels > 0:
		co = append(co, "OVERVIEW_COUNT="+strconv.Itoa(r.OverviewLevels))
	}
	co = append(co,
		overviews,
		"RESAMPLING="+strings.ToUpper(resampling),
		"OVERVIEW_RESAMPLING="+strings.ToUpper(resampling),
		"BIGTIFF=IF_SAFER",
		"SPARSE_OK=FALSE",
		"TILING_SCHEME=CUSTOM",
		"NUM_THREADS="+strconv.Itoa(max(numThreads, 1)),
	)
	// The recipe's pass-through options win over ours (the keys geomigrate
	// must set itself are refused by recipe.CreationOption).
	for _, kv := range r.CreationOptions {
		k, _, _ := strings.Cut(kv, "=")
		co = slices.DeleteFunc(co, func(c string) bool { return strings.HasPrefix(c, k+"=") })
		co = append(co, kv)
	}
	args := []string{"-of", cogDriver, "-mo", resamplingMetadataKey + "=" + strings.ToUpper(resampling)}
	if r.NoData != "" {
		args = append(args, "-a_nodata", r.NoData)
	}
	for _, kv := range lineageItems(r.RasterLineage()) {
		args = append(args, "-mo", kv[0]+"="+kv[1])
	}
	for _, c := range co {
		args = append(args, "-co", c)
	}
	return args
}

// predictorFor is the COG PREDICTOR value ("" for none set). A predictor
// helps continuous data (elevation, imagery); on class indices it only
// adds noise to the compressor, and LERC and uncompressed tiles take none.
func predictorFor(r recipe.Recipe, categorical bool) string {
	switch r.Compression {
	case "LERC", "LERC_DEFLATE", "LERC_ZSTD", "NONE", "PACKBITS", "JPEG", "WEBP":
		return ""
	}
	switch r.Predictor {
	case "none":
		return "NO"
	case "standard":
		return "STANDARD"
	case "floating_point":
		return "FLOATING_POINT"
	}
	if categorical {
		return "NO"
	}
	return "YES" // the COG driver picks 2 (integers) or 3 (floats)
}

// checkLossy refuses a raster a lossy recipe (JPEG, WEBP) cannot be
// applied to: they are made for 8-bit imagery, grey (JPEG only), RGB or
// RGBA (WEBP only: JPEG has no alpha, GDAL turns it into a 1-bit mask).
// A colour table's indices or a nodata value would be altered into other
// classes or into valid data.
func checkLossy(ds *godal.Dataset, r recipe.Recipe, what string) error {
	if !r.Lossy() {
		return nil
	}
	bands := ds.Bands()
	refuse := func(why string) error {
		return fault.Data(fault.InvalidInput, "%s %s: the recipe's %s compression is lossy and made for 8-bit grey (JPEG only), RGB or RGBA (WEBP only) imagery; convert this file losslessly (a rule for its glob with compression: ZSTD)", what, why, r.Compression)
	}
	for i, b := range bands {
		if dt := b.Structure().DataType; dt != godal.Byte {
			return refuse(fmt.Sprintf("has %s band %d", dt, i+1))
		}
		if isPaletted(b) {
			return refuse("has a colour table")
		}
		if _, ok := b.NoData(); ok || r.NoData != "" {
			return refuse("has a nodata value")
		}
	}
	switch n := len(bands); {
	case n == 1 && r.Compression == "JPEG", n == 3:
	case n == 4 && r.Compression == "WEBP" && bands[3].ColorInterp() == godal.CIAlpha:
	case n == 4 && bands[3].ColorInterp() != godal.CIAlpha:
		return refuse("has 4 bands, the 4th not alpha")
	default:
		return refuse(fmt.Sprintf("has %d bands", n))
	}
	return nil
}

// resamplingMetadataKey is the dataset metadata item of a COG that names
// the resampling its overviews were built with.
const resamplingMetadataKey = "GEOMIGRATE_OVERVIEW_RESAMPLING"

func isPaletted(b godal.Band) bool {
	return b.ColorInterp() == godal.CIPalette || len(b.ColorTable().Entries) > 0
}

func (e *Engine) rasterOne(ctx context.Context, ds *godal.Dataset, s *preflight.Source, dst, layer string, r recipe.Recipe, rec *recorder) (recipe.Output, error) {
	what := "the raster"
	if layer != "" {
		what = "subdataset " + layer
	}
	pixels, err := checkRasterSize(ds, what, r)
	if err != nil {
		return recipe.Output{}, err
	}
	if err := checkBlocks(ds, what, r); err != nil {
		return recipe.Output{}, err
	}
	ds, assigned, err := assignRasterCRS(ds, r, what, rec)
	if err != nil {
		return recipe.Output{}, err
	}
	if assigned {
		defer ds.Close()
	}
	geo, err := checkGeoreferencing(ds, what, rec)
	if err != nil {
		return recipe.Output{}, err
	}
	categorical, resampling, err := overviewResampling(ctx, ds, r, what, rec)
	if err != nil {
		return recipe.Output{}, err
	}
	if err := checkRasterRecipe(ds, r, what); err != nil {
		return recipe.Output{}, err
	}
	checks := []string(nil)
	orig := ds
	if r.TargetCRS != "" && !alreadyIn(ds, r.TargetCRS) {
		warped, wp, err := reprojectRaster(ds, r, categorical, geo, what, rec)
		if err != nil {
			return recipe.Output{}, err
		}
		defer warped.Close()
		// From here on the source is the warp: the COG is written from it
		// and compared with it.
		ds, pixels, checks = warped, wp, []string{"warp"}
	}
	// GDAL_NUM_THREADS (the overviews) follows the COG driver's
	// NUM_THREADS, read once here for both: SetConversions may have moved
	// the share since convertSource set the thread's value.
	threads := e.threads()
	if err := writeCOG(ds, dst, r, categorical, threads, what, rec); err != nil {
		return recipe.Output{}, err
	}
	ost, ovr, err := readBackCOG(dst, what, rec)
	if err != nil {
		return recipe.Output{}, err
	}
	chk, err := e.checkCOG(ctx, ds, orig, dst, what, r, threads, checks, rec)
	if err != nil {
		return recipe.Output{}, err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return recipe.Output{}, fault.Systemic("gdal.Translate(COG)", err)
	}
	info := recipe.Formats[recipe.FormatCOG]
	return recipe.Output{
		Path: dst, Format: info.Format, Extension: info.Extension, ContentType: info.ContentType,
		Kind: recipe.Raster, Layer: layer, Warnings: rec.list(), OverviewResampling: resampling,
		Stats: map[string]int64{
			"width": int64(ost.SizeX), "height": int64(ost.SizeY), "bands": int64(ost.NBands),
			"overviews": int64(ovr), "pixels": pixels, "bytes": fi.Size(), "source_bytes": s.Bytes,
			"fidelity_ns": chk.took.Nanoseconds(), "fidelity_raw_tiles": chk.raw.tiles, "fidelity_gdal_tiles": chk.raw.fallbacks,
		},
		Fidelity: chk.fid, SHA256: chk.sha, MD5: chk.md5,
	}, nil
}

// cogCheck is what checking a written COG found: its fidelity, its
// digests, how the check read it and how long it took.
type cogCheck struct {
	fid      *recipe.Fidelity
	sha, md5 string
	raw      rawCheck
	took     time.Duration
}

// checkCOG compares the written COG with its source while hashing it, and
// removes it when either fails.
func (e *Engine) checkCOG(ctx context.Context, ds, orig *godal.Dataset, dst, what string, r recipe.Recipe, threads int, checks []string, rec *recorder) (cogCheck, error) {
	if e.beforeCheck != nil {
		e.beforeCheck(dst)
	}
	checkStart := time.Now()
	// The file is final: it is hashed while the check decodes it.
	digests := digestOutput(ctx, dst, e.cfg.OutputMD5)
	var rawStats rawCheck
	var lossy *recipe.LossyFidelity
	if r.Lossy() {
		lossy = &recipe.LossyFidelity{Compression: r.Compression, Quality: r.Quality, MinPSNR: r.MinPSNR}
	}
	fid, err := rasterFidelity(ctx, ds, orig, dst, what, r.NoData, threads, rec, &rawStats, lossy)
	if fid != nil {
		fid.Checks = append(fid.Checks, checks...)
	}
	sha, md5sum, derr := digests.wait()
	checkTime := time.Since(checkStart)
	if err == nil && derr != nil {
		err = ctx.Err()
		if err == nil {
			err = fault.Systemic("gdal.Translate(COG): hash output", derr)
		}
	}
	if err != nil {
		removeOutput(dst)
		return cogCheck{}, err
	}
	return cogCheck{fid: fid, sha: sha, md5: md5sum, raw: rawStats, took: checkTime}, nil
}

// checkRasterSize refuses a raster with no pixels or more than the budget,
// and returns its pixel count (all bands).
func checkRasterSize(ds *godal.Dataset, what string, r recipe.Recipe) (int64, error) {
	st := ds.Structure()
	pixels := int64(st.SizeX) * int64(st.SizeY) * int64(st.NBands)
	if st.SizeX <= 0 || st.SizeY <= 0 || st.NBands <= 0 {
		return 0, fault.Data(fault.EmptyDataset, "%s has no pixels (%dx%d, %d bands)", what, st.SizeX, st.SizeY, st.NBands)
	}
	if r.MaxPixels > 0 && pixels > r.MaxPixels {
		return 0, fault.Data(fault.BudgetExceeded,
			"%s declares %d x %d pixels x %d bands = %d, over the budget of %d; not attempted",
			what, st.SizeX, st.SizeY, st.NBands, pixels, r.MaxPixels)
	}
	return pixels, nil
}

// overviewResampling says whether the raster looks categorical and which
// resampling its overviews get, warning when the recipe's would invent
// values between classes.
func overviewResampling(ctx context.Context, ds *godal.Dataset, r recipe.Recipe, what string, rec *recorder) (bool, string, error) {
	reason, err := categoricalReason(ctx, ds, rec)
	if err != nil {
		return false, "", err
	}
	categorical := reason != ""
	resampling := r.OverviewResamplingFor(categorical)
	if categorical && r.OverviewResampling != recipe.ResamplingNearest && r.OverviewResampling != recipe.ResamplingMode && r.OverviewResampling != recipe.ResamplingAuto {
		rec.warn(fmt.Sprintf("%s looks categorical (%s) but the recipe asks for %s overviews, which invent values between classes", what, reason, resampling))
	}
	return categorical, resampling, nil
}

// checkRasterRecipe refuses a recipe the raster cannot be written with: a
// nodata value its bands cannot hold, a lossy compression it does not fit,
// a floating-point predictor on integer bands.
func checkRasterRecipe(ds *godal.Dataset, r recipe.Recipe, what string) error {
	if err := checkNoData(ds, r.NoData, what); err != nil {
		return err
	}
	if err := checkLossy(ds, r, what); err != nil {
		return err
	}
	if r.Predictor == "floating_point" && !allFloat(ds) {
		return fault.Data(fault.InvalidInput, "%s has integer bands: the recipe's floating_point predictor applies to Float32/Float64 rasters only (use standard)", what)
	}
	return nil
}

// reprojectRaster warps the raster to the recipe's target CRS within the
// pixel budget and returns the warp with its pixel count; the caller
// closes it.
func reprojectRaster(ds *godal.Dataset, r recipe.Recipe, categorical bool, geo georef, what string, rec *recorder) (*godal.Dataset, int64, error) {
	if geo.gcps > 0 || geo.rpc {
		rec.warn(fmt.Sprintf("%s is reprojected to %s through its GCPs or RPCs, which the reprojected COG does not carry (its geotransform replaces them)", what, r.TargetCRS))
	}
	warped, err := warp(ds, r, categorical, geo, rec)
	if err != nil {
		return nil, 0, err
	}
	wst := warped.Structure()
	if wp := int64(wst.SizeX) * int64(wst.SizeY) * int64(wst.NBands); r.MaxPixels > 0 && wp > r.MaxPixels {
		warped.Close()
		return nil, 0, fault.Data(fault.BudgetExceeded, "%s reprojected to %s would be %d x %d pixels x %d bands, over the budget of %d; not attempted", what, r.TargetCRS, wst.SizeX, wst.SizeY, wst.NBands, r.MaxPixels)
	}
	return warped, int64(wst.SizeX) * int64(wst.SizeY) * int64(wst.NBands), nil
}

// writeCOG writes the raster to dst as a COG, removing what it wrote on
// failure.
func writeCOG(ds *godal.Dataset, dst string, r recipe.Recipe, categorical bool, threads int, what string, rec *recorder) error {
	args := COGOptions(r, categorical, threads)
	if perBandMasks(ds) {
		// A COG holds one mask for all bands: the first band's is written
		// (the fidelity check names the bands whose own mask differs).
		args = append(args, "-mask", "mask,1")
	}

	os.Remove(dst)
	out, err := ds.Translate(dst, args, rec.opt(), godal.ConfigOption("GDAL_NUM_THREADS="+strconv.Itoa(threads)))
	if err != nil {
		removeOutput(dst)
		return classify("gdal.Translate(COG)", err, filepath.Dir(dst), fault.CorruptSource, "%s cannot be read in full", what)
	}
	if err := out.Close(rec.opt()); err != nil {
		removeOutput(dst)
		return classify("gdal.Close(COG)", err, filepath.Dir(dst), fault.CorruptSource, "%s cannot be written", what)
	}
	return nil
}

// readBackCOG reopens the written COG, removes what GDAL wrote beside it,
// refuses it unless GDAL reads it as laid out as a COG, and returns its
// structure and overview count.
func readBackCOG(dst, what string, rec *recorder) (godal.DatasetStructure, int, error) {
	// Read back what was written: the GTiff driver reports LAYOUT=COG
	// only for a file whose structure is that of a COG.
	chk, err := godal.Open(dst, godal.Drivers("GTiff"), godal.RasterOnly(), rec.opt())
	if err != nil {
		removeOutput(dst)
		return godal.DatasetStructure{}, 0, fault.Systemic("gdal.Translate(COG): reopen output", err)
	}
	ost := chk.Structure()
	ovr := len(chk.Bands()[0].Overviews())
	layout := chk.Metadata("LAYOUT", godal.Domain("IMAGE_STRUCTURE"))
	// Whatever GDAL could not put in the TIFF it writes beside it (a PAM
	// .aux.xml, an .IMD for the IMD metadata domain): the COG stands alone,
	// so these go, and the fidelity check names what they held.
	for _, f := range besideOutput(chk, dst) {
		if exists(f) {
			os.Remove(f)
			rec.warn(fmt.Sprintf("GDAL wrote %s beside the COG for what the COG cannot hold; it is not kept (the metadata it held is named in the other warnings)", filepath.Base(f)))
		}
	}
	chk.Close()
	if layout != "COG" {
		// GDAL wrote it from what the source holds: a data outcome
		// (docs/decisions/0089).
		removeOutput(dst)
		return godal.DatasetStructure{}, 0, fault.Data(fault.CorruptSource, "%s was written as a GeoTIFF that is not laid out as a COG (LAYOUT=%q): its structure (overviews, tiling, masks) is unusual; rewrite it (gdal_translate -of GTiff -co TILED=YES SRC FIXED.tif) and upload again", what, layout)
	}
	return ost, ovr, nil
}

// checkBlocks bounds what GDAL holds at once for any raster format: one
// source block of each band, and one output tile of all bands.
func checkBlocks(ds *godal.Dataset, what string, r recipe.Recipe) error {
	if r.MaxMemory <= 0 {
		return nil
	}
	perBlock := r.MaxMemory / budget.BlockShare
	var widest int64
	for i, b := range ds.Bands() {
		st := b.Structure()
		size := int64(st.DataType.Size())
		widest = max(widest, size)
		if blk := int64(st.BlockSizeX) * int64(st.BlockSizeY) * size; blk > perBlock {
			return fault.Data(fault.BudgetExceeded,
				"%s, band %d, is read in blocks of %d x %d pixels (%d bytes), over the memory budget of %d bytes per block; not attempted: retile it (gdal_translate -co TILED=YES)",
				what, i+1, st.BlockSizeX, st.BlockSizeY, blk, perBlock)
		}
		// A mask of its own (an external .msk in a zip is not seen by
		// preflight's TIFF checks) is read block by block too.
		if b.MaskFlags()&(maskAllValid|maskNoData|maskAlpha) == 0 {
			mst := b.MaskBand().Structure()
			if blk := int64(mst.BlockSizeX) * int64(mst.BlockSizeY) * int64(mst.DataType.Size()); blk > perBlock {
				return fault.Data(fault.BudgetExceeded,
					"%s, band %d, has a mask read in blocks of %d x %d pixels (%d bytes), over the memory budget of %d bytes per block; not attempted: retile it",
					what, i+1, mst.BlockSizeX, mst.BlockSizeY, blk, perBlock)
			}
		}
	}
	return budget.CheckOutputTile(int64(len(ds.Bands())), widest, r)
}

// checkGeoTransform refuses a geotransform that places no pixel anywhere:
// NaN or infinite terms, or a singular matrix (zero pixel size).
func checkGeoTransform(gt [6]float64, what string) error {
	for _, v := range gt {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fault.Data(fault.CorruptSource, "%s has a geotransform with NaN or infinite terms %v: its georeferencing is damaged; fix it (gdal_edit.py -a_ullr …) and upload again", what, gt)
		}
	}
	if det := gt[1]*gt[5] - gt[2]*gt[4]; det == 0 {
		return fault.Data(fault.CorruptSource, "%s has a degenerate geotransform %v (zero pixel size): its georeferencing is damaged", what, gt)
	}
	return nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func removeOutput(p string) {
	os.Remove(p)
	os.Remove(p + ".aux.xml")
}
