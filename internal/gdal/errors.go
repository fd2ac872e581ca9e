package gdal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/fault"
)

// recorder is the error policy of every godal call made for one
// conversion: CE_Warning is recorded (deduplicated, bounded) and ignored,
// CE_Failure and CE_Fatal fail the call, debug output is dropped.
type recorder struct {
	mu       sync.Mutex
	warnings []string
	seen     map[string]bool
	dropped  int
}

const maxWarnings = 50

func newRecorder() *recorder { return &recorder{seen: map[string]bool{}} }

func (r *recorder) handle(ec godal.ErrorCategory, code int, msg string) error {
	switch {
	case ec >= godal.CE_Failure:
		return &gdalError{Code: code, Msg: strings.TrimSpace(msg)}
	case ec == godal.CE_Warning:
		r.warn(strings.TrimSpace(msg))
	}
	return nil
}

// child is a recorder for one output: it starts with the warnings recorded
// so far (those of the source) and records its own apart from its siblings.
func (r *recorder) child() *recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := newRecorder()
	c.warnings = append(c.warnings, r.warnings...)
	for k := range r.seen {
		c.seen[k] = true
	}
	c.dropped = r.dropped
	return c
}

func (r *recorder) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg == "" || r.seen[msg] {
		return
	}
	r.seen[msg] = true
	if len(r.warnings) >= maxWarnings {
		r.dropped++
		return
	}
	r.warnings = append(r.warnings, msg)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.warnings...)
	if r.dropped > 0 {
		out = append(out, fmt.Sprintf("… and %d more warnings", r.dropped))
	}
	return out
}

// opt is the godal option installing the recorder.
func (r *recorder) opt() interface {
	godal.OpenOption
	godal.DatasetTranslateOption
	godal.DatasetVectorTranslateOption
	godal.CloseOption
	godal.FeatureCountOption
	godal.GetGeoTransformOption
	godal.CreateSpatialRefOption
	godal.SpatialRefValidateOption
	godal.DatasetWarpOption
	godal.DatasetCreateOption
} {
	return godal.ErrLogger(r.handle)
}

// gdalError is a CE_Failure/CE_Fatal message from GDAL.
type gdalError struct {
	Code int // CPLErrorNum
	Msg  string
}

func (e *gdalError) Error() string { return e.Msg }

// CPLErrorNum values that mean the machine, not the data, failed.
const (
	cpleOutOfMemory = 2
	cpleFileIO      = 3
)

var systemicHints = []string{
	"no space left on device", "free disk space", "disk full", "enospc",
	"out of memory", "cannot allocate", "memory allocation", "std::bad_alloc",
	"too many open files",
}

// outsideReads are GDAL's messages (and ours, networkRefused) for a
// source that asks to read a URL or another file: GDAL 3.6 refuses a CRS
// given as a path or URL (ALLOW_FILE_ACCESS / ALLOW_NETWORK_ACCESS=NO) and
// a "link" CRS that is not an http(s) URL; our HTTP callback refuses the rest.
var outsideReads = []string{
	networkRefused, "ALLOW_NETWORK_ACCESS=NO", "ALLOW_FILE_ACCESS=NO", "is not recognized as a URL",
}

// classify turns a GDAL failure into the taxonomy: exhausted memory or disk,
// and failures writing into the work dir, are systemic; anything else that
// GDAL raised while reading a source is a fault of the data (code).
func classify(op string, err error, workDir string, code fault.Code, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var d *fault.DataError
	var s *fault.SystemicError
	if errors.As(err, &d) || errors.As(err, &s) {
		return err
	}
	for _, m := range outsideReads {
		if strings.Contains(err.Error(), m) {
			return fault.DataWrap(fault.UnsafeSource, err, "the source names a URL or a file that GDAL would read (e.g. a GeoJSON CRS given as a link or a path); reads outside the source are refused: replace it with the CRS itself (an EPSG code or WKT)")
		}
	}
	msg := strings.ToLower(err.Error())
	var ge *gdalError
	if errors.As(err, &ge) && ge.Code == cpleOutOfMemory {
		return fault.Systemic(op, err)
	}
	for _, h := range systemicHints {
		if strings.Contains(msg, h) {
			return fault.Systemic(op, err)
		}
	}
	if workDir != "" && strings.Contains(err.Error(), workDir) && !strings.Contains(msg, "read") {
		return fault.Systemic(op, err)
	}
	if m, ok := shortRead(err.Error()); ok {
		err = &reworded{msg: m, err: err}
	} else if code == fault.CorruptSource && anonymous.MatchString(err.Error()) {
		// A failure reported from one of GDAL's decoding threads reaches
		// no handler of this call: only its status is left.
		err = &reworded{msg: "GDAL failed reading the file without saying why (" + err.Error() + "); a truncated or damaged file is the usual cause: check it with gdalinfo -checksum", err: err}
	}
	return fault.DataWrap(code, err, format, args...)
}

// libtiffShortRead is libtiff's report of a strip or tile the file holds
// only part of. The row, column or scanline it names is 4294967295 (-1)
// when the read was of a whole block, so the block number and the byte
// counts are what it says about the file.
var libtiffShortRead = regexp.MustCompile(`Read error (?:at row \d+, col \d+, tile (\d+)|on strip (\d+)|on tile (\d+)|at (?:row \d+, col \d+|scanline \d+)); got (\d+) bytes, expected (\d+)`)

// gdalReadBlock is GDAL's own line for the same failure, which names the
// block by its position in the grid of blocks.
var gdalReadBlock = regexp.MustCompile(`IReadBlock failed at X offset (\d+), Y offset (\d+)`)

// shortRead says in the user's terms what a libtiff short read means:
// the file is truncated (or a block's offset points past its end). ok is
// false for other messages.
func shortRead(msg string) (string, bool) {
	m := libtiffShortRead.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	block := "a strip"
	switch {
	case m[1] != "":
		block = "tile " + m[1]
	case m[3] != "":
		block = "tile " + m[3]
	case m[2] != "":
		block = "strip " + m[2]
	}
	if b := gdalReadBlock.FindStringSubmatch(msg); b != nil && (m[1] == "" && m[2] == "" && m[3] == "") {
		block = "the block at column " + b[1] + ", row " + b[2] + " of the block grid"
	}
	return fmt.Sprintf("the file is truncated or damaged: %s is cut short (%s of its %s bytes are in the file); upload a complete copy", block, m[4], m[5]), true
}

// anonymous is godal's text for a GDAL call that failed without a message.
var anonymous = regexp.MustCompile(`^unknown (?:cpl )?error(?: \d+)?$`)

// reworded is a GDAL error said in the user's terms; the original stays
// reachable by errors.As for the logs.
type reworded struct {
	msg string
	err error
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.err }
