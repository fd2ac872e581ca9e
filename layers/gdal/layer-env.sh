# Sourced by the Docker-free layer scripts (build-layer.sh, build-convert.sh, lambda-chroot.sh):
# the values they share, read once from layers/gdal/manifest.json (the single source of versions,
# drivers and Debian packages) and the cache locations.
# shellcheck shell=bash
LAYER_ENV_VERSION=1 # bump to invalidate the cached sysroot
HERE="${HERE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
ROOT="${ROOT:-$(cd "$HERE/../.." && pwd)}"
MANIFEST="$HERE/manifest.json"
OUT="${GEOMIGRATE_BUILD_DIR:-$ROOT/build}"
ARCH="${ARCH:-arm64}"
TRIPLET=aarch64-linux-gnu
DEBIAN_ARCH=arm64
LOADER=ld-linux-aarch64.so.1
QEMU=qemu-aarch64-static
# Outside the work tree, so a fresh clone on the same machine reuses the sysroot and the GDAL build.
CACHE="${GEOMIGRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/geomigrate}/layer-$ARCH"
SYSROOT="$CACHE/sysroot"
SYSROOT_LDFLAGS="-L$SYSROOT/usr/lib/$TRIPLET -Wl,-rpath-link,$SYSROOT/usr/lib/$TRIPLET:$SYSROOT/usr/lib/$TRIPLET/hdf5/serial:$SYSROOT/opt/lib"
SYSROOT_PKG_CONFIG_LIBDIR="$SYSROOT/opt/lib/pkgconfig:$SYSROOT/usr/lib/$TRIPLET/pkgconfig:$SYSROOT/usr/share/pkgconfig"

manifest() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print($1)" "$MANIFEST"; }
GDAL_VERSION="$(manifest "m['versions']['gdal']")"
PROJ_VERSION="$(manifest "m['versions']['proj']")"
GEOS_VERSION="$(manifest "m['versions']['geos']")"
DEBIAN_SUITE="$(manifest "m['debian']['suite']")"
# The Debian archive the host's apt already uses (Origin and Label "Debian"), unless given.
DEBIAN_MIRROR="${GEOMIGRATE_DEBIAN_MIRROR:-$(apt-get indextargets --format '$(ORIGIN)|$(LABEL)|$(REPO_URI)' 2>/dev/null | awk -F'|' '$1 == "Debian" && $2 == "Debian" {print $3; exit}')}"
GDAL_DEBIAN_VERSION="$(manifest "m['debian']['gdal_source']")"
SYSROOT_PACKAGES="$(manifest "' '.join(m['debian']['packages'])")"
DRIVER_FLAGS="$(manifest "' '.join(sorted({'-D'+d['cmake']+'=ON' for d in m['drivers'] if d['cmake']!='core'}))")"
