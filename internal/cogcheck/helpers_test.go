package cogcheck

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The external judge: GDAL's own validator, run with Debian's python3-gdal.
const (
	refPython = "/usr/bin/python3"
	refScript = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_cloud_optimized_geotiff.py"
)

var refAvailable = sync.OnceValue(func() string {
	if _, err := os.Stat(refScript); err != nil {
		return "reference script not installed (" + refScript + "): install python3-gdal"
	}
	if out, err := exec.Command(refPython, "-c", "from osgeo import gdal").CombinedOutput(); err != nil {
		return "python3-gdal not importable by " + refPython + ": " + strings.TrimSpace(string(out))
	}
	return ""
})

type refResult struct {
	valid    bool
	crashed  bool // exception or traceback: only the verdict is comparable
	errors   []string
	warnings []string
	out      string
}

// refHarness loads the reference script as a module and calls its own main()
// for each request, so a batch costs one Python start-up. An exception
// escaping main() is what makes the command-line script exit 1.
const refHarness = `
import sys, io, json, contextlib, importlib.util, traceback
spec = importlib.util.spec_from_file_location("validate_cog", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
res = []
for line in sys.stdin:
    if not line.strip():
        continue
    flag, path = json.loads(line)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            rc = m.main(["validate_cloud_optimized_geotiff.py", flag, path])
        except Exception:
            traceback.print_exc(file=buf)
            rc = 1
    res.append({"rc": rc, "out": buf.getvalue()})
print(json.dumps(res))
`

type refKey struct {
	path string
	full bool
}

// runRefBatch runs the reference script on every path, with and without
// the full check.
func runRefBatch(t *testing.T, paths []string) map[refKey]refResult {
	t.Helper()
	var in bytes.Buffer
	var keys []refKey
	for _, p := range paths {
		for _, full := range []bool{true, false} {
			flag := "--full-check=no"
			if full {
				flag = "--full-check=yes"
			}
			line, _ := json.Marshal([]string{flag, p})
			in.Write(append(line, '\n'))
			keys = append(keys, refKey{p, full})
		}
	}
	cmd := exec.Command(refPython, "-c", refHarness, refScript)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference harness: %v\n%s", err, stderr.String())
	}
	var raw []struct {
		RC  int    `json:"rc"`
		Out string `json:"out"`
	}
	if err := json.Unmarshal(out, &raw); err != nil || len(raw) != len(keys) {
		t.Fatalf("reference harness output (%v, %d results for %d requests):\n%s", err, len(raw), len(keys), out)
	}
	res := make(map[refKey]refResult, len(keys))
	for i, k := range keys {
		res[k] = parseRef(raw[i].RC, raw[i].Out)
	}
	return res
}

func parseRef(rc int, out string) refResult {
	r := refResult{valid: rc == 0, out: out}
	r.crashed = strings.Contains(out, "Traceback") || strings.Contains(out, "NOT a valid cloud optimized GeoTIFF :")
	var cur *[]string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "The following warnings were found:"):
			cur = &r.warnings
		case strings.HasPrefix(line, "The following errors were found:"):
			cur = &r.errors
		case strings.HasPrefix(line, " - ") && cur != nil:
			*cur = append(*cur, strings.TrimPrefix(line, " - "))
		case line == "":
			cur = nil
		}
	}
	return r
}

// assertAgree checks path with this package, with and without the full
// check, and fails when the verdict differs from the reference script's.
// With exact, the error and warning messages must also be identical (when
// the script did not crash).
func assertAgree(t *testing.T, path string, exact bool, refs map[refKey]refResult) {
	t.Helper()
	for _, full := range []bool{true, false} {
		rep, err := CheckFile(path, FullCheck(full))
		ref, ok := refs[refKey{path, full}]
		if !ok {
			t.Fatalf("no reference result for %s", path)
		}
		ours := err == nil && rep.Valid()
		if ours != ref.valid {
			t.Errorf("full=%v: cogcheck valid=%v (err=%v, errors=%q) but the reference script says valid=%v:\n%s",
				full, ours, err, rep.Errors, ref.valid, ref.out)
			continue
		}
		if exact && !ref.crashed {
			if !slices.Equal(rep.Errors, ref.errors) {
				t.Errorf("full=%v: errors differ\n cogcheck: %q\n script:   %q", full, rep.Errors, ref.errors)
			}
			if !slices.Equal(rep.Warnings, ref.warnings) {
				t.Errorf("full=%v: warnings differ\n cogcheck: %q\n script:   %q", full, rep.Warnings, ref.warnings)
			}
		}
	}
}

func writeTemp(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tagLoc finds tag in the IFD at ifdOff and returns where its values are in
// the file, their element size and count.
func tagLoc(t testing.TB, data []byte, ifdOff int64, tag uint16) (pos, elem, count int) {
	t.Helper()
	rd := &reader{r: bytes.NewReader(data), size: int64(len(data))}
	h, err := parseHeader(rd)
	if err != nil {
		t.Fatal(err)
	}
	rd.bo, rd.big = h.order, h.bigTIFF
	entLen, cntLen, inline := 12, 2, 4
	var n int
	if h.bigTIFF {
		entLen, cntLen, inline = 20, 8, 8
		n = int(rd.bo.Uint64(data[ifdOff:]))
	} else {
		n = int(rd.bo.Uint16(data[ifdOff:]))
	}
	for i := range n {
		start := int(ifdOff) + cntLen + i*entLen
		e := data[start:]
		if rd.bo.Uint16(e) != tag {
			continue
		}
		elem = int(typeSize(rd.bo.Uint16(e[2:])))
		var valField []byte
		valPos := start + 8
		if h.bigTIFF {
			count = int(rd.bo.Uint64(e[4:]))
			valField = e[12:20]
			valPos = start + 12
		} else {
			count = int(rd.bo.Uint32(e[4:]))
			valField = e[8:12]
		}
		if elem*count <= inline {
			return valPos, elem, count
		}
		if h.bigTIFF {
			return int(rd.bo.Uint64(valField)), elem, count
		}
		return int(rd.bo.Uint32(valField)), elem, count
	}
	t.Fatalf("tag %d not found in IFD at %d", tag, ifdOff)
	return
}

// swapBlocks exchanges the offsets and byte counts of blocks a and b of the
// IFD at ifdOff, so that each still points at its own, intact data but the
// order is no longer row-major.
func swapBlocks(t testing.TB, data []byte, ifdOff int64, a, b int) {
	t.Helper()
	for _, tag := range []uint16{tagTileOffsets, tagTileByteCounts} {
		pos, elem, count := tagLoc(t, data, ifdOff, tag)
		if a >= count || b >= count {
			t.Fatalf("IFD at %d has %d blocks", ifdOff, count)
		}
		pa, pb := pos+a*elem, pos+b*elem
		tmp := slices.Clone(data[pa : pa+elem])
		copy(data[pa:pa+elem], data[pb:pb+elem])
		copy(data[pb:pb+elem], tmp)
	}
}

func byteOrder(data []byte) binary.ByteOrder {
	if string(data[:2]) == "MM" {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// patchFirstIFD points the header at off.
func patchFirstIFD(data []byte, off uint64) {
	bo := byteOrder(data)
	if bo.Uint16(data[2:]) == 43 {
		bo.PutUint64(data[8:], off)
	} else {
		bo.PutUint32(data[4:], uint32(off))
	}
}

func firstIFD(data []byte) int64 {
	bo := byteOrder(data)
	if bo.Uint16(data[2:]) == 43 {
		return int64(bo.Uint64(data[8:]))
	}
	return int64(bo.Uint32(data[4:]))
}

func checkBytes(t testing.TB, data []byte, opts ...Option) (Report, error) {
	t.Helper()
	return Check(bytes.NewReader(data), int64(len(data)), opts...)
}
