package cogcheck

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"testing"
)

// FuzzCheck: any input is checked without panic, and the only error a
// bytes.Reader can produce is ErrNotTIFF.
//
//	go test ./internal/cogcheck -run '^$' -fuzz FuzzCheck -fuzztime 60s
func FuzzCheck(f *testing.F) {
	for _, c := range synthCases() {
		f.Add(c.build(f))
	}
	for _, c := range corruptCases() {
		f.Add(c.mutate(f, goodCOG().encode()))
	}
	// GDAL-written files, small enough to fuzz quickly, when GDAL is here and
	// we are fuzzing (a plain go test already checks them in TestAgreementGDAL).
	if fz := flag.Lookup("test.fuzz"); fz != nil && fz.Value.String() != "" && haveGDALTools() {
		for _, p := range buildGDALFixtures(f, f.TempDir(), 640, 600) {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, full := range []bool{false, true} {
			rep, err := Check(bytes.NewReader(data), int64(len(data)), FullCheck(full))
			if err != nil {
				if !errors.Is(err, ErrNotTIFF) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if rep.Valid() != (len(rep.Errors) == 0) {
				t.Fatal("Valid() inconsistent with Errors")
			}
		}
	})
}
