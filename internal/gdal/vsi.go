package gdal

// Reading a source through ranged reads instead of a whole-file copy:
// ConvertReader hands GDAL an io.ReaderAt (e.g. an object store's ranged
// GETs) through a godal VSI handler registered once per process on
// readerPrefix. Each conversion gets its own key under the prefix, valid
// only for the duration of the call.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/budget"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/preflight"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// readerPrefix is our VSI namespace. The user-facing preflight refuses
// every /vsi name, so a source file can never name a key here.
const readerPrefix = "/vsigeomigrate/"

type readerAt struct {
	ra    io.ReaderAt
	size  int64
	state *readState
}

// readState records what the reader did for one conversion: a read error
// (which GDAL would report as a damaged file) and the bytes read.
type readState struct {
	mu    sync.Mutex
	err   error
	bytes int64
}

func (st *readState) record(n int, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.bytes += int64(n)
	// Only a bare io.EOF is the end of the object: a transport error may
	// wrap io.EOF too (`Get "…": EOF`, a response the connection lost).
	if err != nil && err != io.EOF && st.err == nil { //nolint:errorlint // see above
		st.err = err
	}
}

func (st *readState) result() (int64, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.bytes, st.err
}

// readerRegistry is the godal.KeySizerReaderAt behind readerPrefix; keys
// are "<id>/<base name>" (the prefix stripped).
type readerRegistry struct {
	mu   sync.RWMutex
	next uint64
	m    map[string]readerAt
}

var (
	readers        = &readerRegistry{m: map[string]readerAt{}}
	readersOnce    sync.Once
	readersErr     error
	errUnknownKey  = fmt.Errorf("gdal: source reader: %w", fs.ErrNotExist)
	errNegativeOff = errors.New("gdal: source reader: negative offset")
)

func (r *readerRegistry) get(key string) (readerAt, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.m[key]
	if !ok {
		return readerAt{}, errUnknownKey
	}
	return e, nil
}

func (r *readerRegistry) ReadAt(key string, buf []byte, off int64) (int, error) {
	e, err := r.get(key)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errNegativeOff
	}
	if off >= e.size {
		return 0, io.EOF
	}
	if rest := e.size - off; int64(len(buf)) > rest {
		n, err := e.ra.ReadAt(buf[:rest], off)
		e.state.record(n, err)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	n, err := e.ra.ReadAt(buf, off)
	e.state.record(n, err)
	return n, err
}

// ReadAtMulti implements godal.KeyMultiReader, which the GTiff driver uses
// for pixel data. godal's fallback ignores io.EOF on each range, so a tile
// that lies past the end of a truncated object would come back as whatever
// the buffer held; here a range past the end is an error (of the data: it
// is not recorded as a read failure).
func (r *readerRegistry) ReadAtMulti(key string, bufs [][]byte, offs []int64) ([]int, error) {
	e, err := r.get(key)
	if err != nil {
		return nil, err
	}
	ns := make([]int, len(bufs))
	for i, b := range bufs {
		if offs[i] < 0 || offs[i]+int64(len(b)) > e.size {
			return ns, fmt.Errorf("range %d+%d lies past the end of the %d-byte source (truncated file)", offs[i], len(b), e.size)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bufs))
	for i := range bufs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			n, err := e.ra.ReadAt(bufs[i], offs[i])
			if errors.Is(err, io.EOF) && n == len(bufs[i]) {
				err = nil
			}
			e.state.record(n, err)
			if err == nil && n < len(bufs[i]) {
				err = io.ErrUnexpectedEOF
			}
			ns[i], errs[i] = n, err
		}(i)
	}
	wg.Wait()
	return ns, errors.Join(errs...)
}

func (r *readerRegistry) Size(key string) (int64, error) {
	e, err := r.get(key)
	if err != nil {
		return 0, err
	}
	return e.size, nil
}

// add registers ra under a new key named name and returns GDAL's path to
// it and a function that removes it.
func (r *readerRegistry) add(ra io.ReaderAt, size int64, name string) (string, *readState, func()) {
	r.mu.Lock()
	r.next++
	key := fmt.Sprintf("%d/%s", r.next, name)
	st := &readState{}
	r.m[key] = readerAt{ra, size, st}
	r.mu.Unlock()
	return readerPrefix + key, st, func() {
		r.mu.Lock()
		delete(r.m, key)
		r.mu.Unlock()
	}
}

func (r *readerRegistry) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}

func registerReaders() error {
	readersOnce.Do(func() {
		readersErr = godal.RegisterVSIHandler(readerPrefix, readers,
			godal.VSIHandlerStripPrefix(true),
			godal.VSIHandlerBufferSize(256<<10), godal.VSIHandlerCacheSize(4<<20))
	})
	return readersErr
}

// ConvertReader converts a source read through ra (size bytes, named name,
// e.g. the object key's base name: drivers use the extension) instead of a
// local file: GDAL reads only the byte ranges it needs. The same checks
// apply as for Convert (preflight, budgets, CRS …), with these limits: a
// source made of several files (a bare .shp with sidecars, a world file)
// cannot arrive this way — a zipped Shapefile can — and netCDF/HDF5, whose
// libraries want a real file, are refused with UnsupportedFormat (download
// them and use Convert).
func (e *Engine) ConvertReader(ctx context.Context, ra io.ReaderAt, size int64, name, workDir string, r recipe.Recipe) ([]recipe.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
	if err := registerReaders(); err != nil {
		return nil, fault.Systemic("gdal.ConvertReader: register VSI handler", err)
	}
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" || name == ".." || strings.ContainsAny(name, "\x00{}") {
		return nil, fault.Data(fault.UnsafeSource, "source name %q cannot name a file", name)
	}
	vsiPath, st, done := readers.add(ra, size, name)
	defer done()
	// Preflight reads through the same recorder, so that a failing store
	// is told apart from a damaged source there too.
	rec := readerAt{ra, size, st}
	s, err := preflight.Reader(recordingReader{rec}, size, name, vsiPath, r, probe{})
	if err == nil {
		var outs []recipe.Output
		outs, err = e.convertSource(ctx, s, workDir, r)
		if err == nil {
			n, _ := st.result()
			for i := range outs {
				outs[i].Stats["source_bytes_read"] = n
			}
			return outs, nil
		}
	}
	// A read that failed is the store's fault, whatever GDAL made of it.
	if _, rerr := st.result(); rerr != nil {
		if fault.TierOf(rerr) != fault.TierUnknown {
			return nil, rerr
		}
		return nil, fault.Transient("gdal.ConvertReader: read source", rerr)
	}
	return nil, err
}

type recordingReader struct{ e readerAt }

func (r recordingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.e.ra.ReadAt(p, off)
	r.e.state.record(n, err)
	return n, err
}
