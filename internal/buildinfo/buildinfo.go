// Package buildinfo names the build of geomigrate, which enters the recipe
// hash: a new release that may write different bytes re-migrates sources.
package buildinfo

import "runtime/debug"

// Version is set at link time (-ldflags "-X …/buildinfo.Version=v1.2.3").
var Version = "0.1.0-dev"

// Revision is the commit, set at link time (`make cli`: -ldflags
// "-X …/buildinfo.Revision=$(git rev-parse --short=12 HEAD)").
var Revision = ""

// Commit is the revision the binary was built from: Revision, else what
// the Go toolchain stamped (vcs.revision, "+dirty" when the tree had local
// changes; not with -buildvcs=false), else "unknown" (go run, go test).
func Commit() string {
	if Revision != "" {
		return Revision
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
