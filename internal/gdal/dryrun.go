package gdal

import (
	"context"
	"io"
	"path"
	"runtime"
	"strings"

	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Preflight runs the checks Convert makes before it opens a source in full
// (preflight: a regular, non-empty, readable file not pointing elsewhere,
// within the byte budget, recognised by an allowed driver, with sound
// Shapefile, DBF, KML, TIFF and .prj headers) and returns the driver GDAL
// identified, or the error Convert would fail with. It writes nothing: a
// dry run (geomigrate plan) reports what a migrate would refuse.
func (e *Engine) Preflight(ctx context.Context, src string, r recipe.Recipe) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r = r.WithDefaults()
	if err := r.Validate(); err != nil {
		return "", err
	}
	r.MaxMemory = budget.Effective(r.MaxMemory, e.cfg.MemoryLimit)
	s, err := preflight.Local(src, r, probe{})
	if err != nil {
		return "", err
	}
	return s.Driver, nil
}

// PreflightReader is Preflight for a source read through ra (as
// ConvertReader reads it: ranged reads of an object, named name).
func (e *Engine) PreflightReader(ctx context.Context, ra io.ReaderAt, size int64, name string, r recipe.Recipe) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r = r.WithDefaults()
	if err := r.Validate(); err != nil {
		return "", err
	}
	r.MaxMemory = budget.Effective(r.MaxMemory, e.cfg.MemoryLimit)
	if err := registerReaders(); err != nil {
		return "", fault.Systemic("gdal.PreflightReader: register VSI handler", err)
	}
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" || name == ".." || strings.ContainsAny(name, "\x00{}") {
		return "", fault.Data(fault.UnsafeSource, "source name %q cannot name a file", name)
	}
	vsiPath, st, done := readers.add(ra, size, name)
	defer done()
	s, err := preflight.Reader(recordingReader{readerAt{ra, size, st}}, size, name, vsiPath, r, probe{})
	if _, rerr := st.result(); rerr != nil {
		if fault.TierOf(rerr) != fault.TierUnknown {
			return "", rerr
		}
		return "", fault.Transient("gdal.PreflightReader: read source", rerr)
	}
	if err != nil {
		return "", err
	}
	return s.Driver, nil
}
