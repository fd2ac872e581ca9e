#!/usr/bin/env bash
# The arm64 programs that link GDAL, cross-compiled with cgo against the layer's own /opt and the
# sysroot build-layer.sh made (so what the chroot test runs is what ships):
#
#   layers/gdal/build-convert.sh [arm64]
#
#   build/convert/bootstrap              the Convert Lambda (lambda.norpc), what CDK deploys
#   build/convert-container-arm64/geomigrate   the CLI for the convert container (geomigrate task convert)
#
# Both get the interpreter /opt/lib/ld-linux-aarch64.so.1 and DT_RPATH /opt/lib (see
# build-layer.sh for why DT_RPATH), and the pure-Go resolvers (netgo, osusergo): the bundled glibc
# has no NSS modules, and DNS never needs them.
set -euo pipefail
ARCH="${1:-arm64}"
[ "$ARCH" = arm64 ] || { echo "build-convert.sh: only arm64 (got $ARCH)" >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=layers/gdal/layer-env.sh
. "$HERE/layer-env.sh"
[ -f "$SYSROOT/opt/lib/libgdal.so" ] || { echo "build-convert.sh: no GDAL in $SYSROOT/opt: run layers/gdal/build-layer.sh first (make layer)" >&2; exit 1; }

export CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$TRIPLET-gcc" CXX="$TRIPLET-g++"
export PKG_CONFIG_SYSROOT_DIR="$SYSROOT" PKG_CONFIG_LIBDIR="$SYSROOT_PKG_CONFIG_LIBDIR"
export CGO_CFLAGS="--sysroot=$SYSROOT -O2" CGO_CXXFLAGS="--sysroot=$SYSROOT -O2"
export CGO_LDFLAGS="--sysroot=$SYSROOT $SYSROOT_LDFLAGS"
rev="$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || true)"
build() { # package output [tags]
	echo "[convert] $2 (linux/arm64, cgo against $SYSROOT/opt)"
	(cd "$ROOT" && go build -tags "netgo,osusergo${3:+,$3}" -trimpath \
		-ldflags "-s -w -X github.com/geomigrate/geomigrate/internal/buildinfo.Revision=$rev" -o "$2.tmp" "$1")
	patchelf --set-interpreter "/opt/lib/$LOADER" --force-rpath --set-rpath /opt/lib "$2.tmp"
	mv "$2.tmp" "$2"
}
mkdir -p "$OUT/convert" "$OUT/convert-container-$ARCH"
build ./functions/convert "$OUT/convert/bootstrap" lambda.norpc
build ./cmd/geomigrate "$OUT/convert-container-$ARCH/geomigrate"
