// Package buildinfo names the build of geomigrate, which enters the recipe
// hash: a new release that may write different bytes re-migrates sources.
package buildinfo

// Version is set at link time (-ldflags "-X …/buildinfo.Version=v1.2.3").
var Version = "0.1.0-dev"
