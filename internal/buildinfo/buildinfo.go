// Package buildinfo names the build of geomigrate, which enters the recipe
// hash: a new release that may write different bytes re-migrates sources.
package buildinfo

import "runtime/debug"

// Version is set at link time (-ldflags "-X …/buildinfo.Version=v1.2.3").
var Version = "0.1.0-dev"

// Commit is the VCS revision the binary was built from, as the Go
// toolchain stamps it (vcs.revision, "+dirty" when the tree had local
// changes), or "unknown" (go run, go test, a build outside the repository).
func Commit() string {
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
