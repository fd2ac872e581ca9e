package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/geomigrate/geomigrate/internal/migration"
)

// routeClashes makes the run's HashCheck route every source that shares a
// predicted output key with another (a/dem.tif and b/dem.tif given as two
// source roots both become dest/dem.tif; so do dem.tif and dem.img side by
// side) to remediation, DestinationConflict, each naming all the others;
// every other source migrates. Promote never overwrites another source's
// output, so without this one of them would end in remediation and which
// one was a race between workers. It says on stderr how many were found.
func routeClashes(hc *migration.HashCheck, inputs []migration.Source, dest string, stderr io.Writer) {
	clashes := hc.FindClashes(inputs)
	hc.WithClashes(clashes, destWhere(dest))
	if len(clashes) == 0 {
		return
	}
	n := 0
	for _, c := range clashes {
		n += len(c.Sources)
	}
	fmt.Fprintf(stderr, "geomigrate: %d source(s) would share %d output key(s) (run geomigrate plan to list them): they are routed to remediation (DestinationConflict), the rest migrates\n", n, len(clashes))
}

// destWhere shows an output key under dest as the user gave it: a path
// under a local directory, a key under an s3:// location.
func destWhere(dest string) func(key string) string {
	return func(key string) string {
		if strings.HasPrefix(dest, "s3://") {
			return strings.TrimSuffix(dest, "/") + "/" + key
		}
		return filepath.Join(dest, filepath.FromSlash(key))
	}
}
