#!/usr/bin/env bash
# The GDAL Lambda layer for arm64, built without Docker on a Debian/Ubuntu host (make layer).
#
#   layers/gdal/build-layer.sh [arm64]
#
# What it does, each step cached under $GEOMIGRATE_CACHE (default ~/.cache/geomigrate) and
# redone only when its inputs change:
#   1. apt:     a private apt configuration for Debian's arm64 archive at the manifest's suite
#               (APT::Architecture arm64, own Dir::State and Dir::Cache: the host's apt state is
#               never touched), signed by the host's debian-archive-keyring.
#   2. sysroot: the arm64 -dev packages GDAL builds against and every library they need, unpacked
#               with dpkg-deb -x (nothing is installed); their versions must be the manifest's.
#   3. gdal:    GDAL from Debian's source package (the .orig tarball, SHA-256 checked by apt's
#               index), cross-compiled with the manifest's drivers only, GDAL_USE_CURL=OFF, no
#               Arrow/Parquet, no libxml2, no OpenSSL; installed into the sysroot under /opt.
#   4. stage:   /opt as Lambda mounts it: libgdal and libmimalloc, the transitive DT_NEEDED closure from the
#               sysroot (found with readelf, never a hand-kept list), glibc and its loader (Debian's
#               libraries need a newer glibc than AL2023's 2.34), glibc's gconv modules (DBF code
#               pages), GDAL_DATA, PROJ_DATA, gdalinfo/ogrinfo. Every ELF gets DT_RPATH /opt/lib
#               (DT_RPATH, not DT_RUNPATH: Lambda's LD_LIBRARY_PATH starts with /lib64 and
#               RUNPATH is searched after it, so AL2023's older libstdc++ would be loaded);
#               executables get the interpreter /opt/lib/ld-linux-aarch64.so.1.
# Output: build/gdal-layer-arm64/ (the unpacked /opt, for the chroot tests) and
# build/gdal-layer-arm64.zip, whose sizes are printed and checked against the manifest.
# The convert bootstrap is linked against the same sysroot by layers/gdal/build-convert.sh.
set -euo pipefail

ARCH="${1:-arm64}"
if [ "$ARCH" != arm64 ]; then
	echo "build-layer.sh: only arm64 is built without Docker (the stack's default architecture); got $ARCH" >&2
	exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=layers/gdal/layer-env.sh
. "$HERE/layer-env.sh"

log() { printf '[layer] %s\n' "$*"; }
die() { printf 'build-layer.sh: %s\n' "$*" >&2; exit 1; }
for tool in $TRIPLET-gcc $TRIPLET-g++ $TRIPLET-readelf $TRIPLET-strip cmake ninja patchelf zip dpkg-deb qemu-aarch64-static python3; do
	command -v "$tool" >/dev/null || die "$tool not found: run make layer-deps (installs the host packages)"
done
mkdir -p "$CACHE" "$OUT"

# ---- 1. apt ---------------------------------------------------------------------------------
APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/etc/apt/apt.conf.d" "$APTDIR/etc/apt/preferences.d" "$APTDIR/etc/apt/sources.list.d" \
	"$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial"
KEYRING=/usr/share/keyrings/debian-archive-$DEBIAN_SUITE-automatic.gpg
[ -f "$KEYRING" ] || die "$KEYRING not found (debian-archive-keyring too old for $DEBIAN_SUITE?)"
cat >"$APTDIR/etc/apt/sources.list" <<EOF
deb [arch=$DEBIAN_ARCH signed-by=$KEYRING] $DEBIAN_MIRROR $DEBIAN_SUITE main
deb-src [signed-by=$KEYRING] $DEBIAN_MIRROR $DEBIAN_SUITE main
EOF
cat >"$APTDIR/apt.conf" <<EOF
APT::Architecture "$DEBIAN_ARCH";
APT::Architectures { "$DEBIAN_ARCH"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
Dir::Etc "$APTDIR/etc/apt";
Dir::State "$APTDIR/state";
Dir::State::status "$APTDIR/state/status";
Dir::Cache "$APTDIR/cache";
EOF
touch "$APTDIR/state/status"
export APT_CONFIG="$APTDIR/apt.conf"
if [ -z "$(find "$APTDIR/state/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ]; then
	log "apt-get update ($DEBIAN_SUITE, $DEBIAN_ARCH, private state in $APTDIR)"
	apt-get update -qq >/dev/null
fi

# ---- 2. sysroot -----------------------------------------------------------------------------
log "resolving $DEBIAN_ARCH packages: $SYSROOT_PACKAGES"
# shellcheck disable=SC2086
apt-get install -y -qq --download-only $SYSROOT_PACKAGES >/dev/null
# The full set, with versions, is what apt would install on an empty system.
# shellcheck disable=SC2086
PKGS="$(apt-get install -y -s $SYSROOT_PACKAGES | awk '$1 == "Inst" {gsub(/[()]/, "", $3); print $2"_"$3}' | sort)"
[ -n "$PKGS" ] || die "apt resolved no packages"
SYSROOT_KEY="$(printf '%s\n' "$PKGS" "$LAYER_ENV_VERSION" | sha256sum | cut -c1-16)"
if [ "$(cat "$SYSROOT/.key" 2>/dev/null)" != "$SYSROOT_KEY" ]; then
	log "unpacking $(printf '%s\n' "$PKGS" | wc -l) packages into $SYSROOT"
	rm -rf "$SYSROOT" "$CACHE/gdal.key"
	mkdir -p "$SYSROOT"
	while read -r pv; do
		name="${pv%%_*}"; ver="${pv#*_}"
		deb="$(find "$APTDIR/cache/archives" -maxdepth 1 -name "${name}_$(printf '%s' "$ver" | sed 's/:/%3a/')_*.deb" | head -n1)"
		[ -n "$deb" ] || die "no downloaded .deb for $name $ver"
		dpkg-deb -x "$deb" "$SYSROOT"
	done <<<"$PKGS"
	# Debian is merged-/usr: the linker scripts name /lib/<triplet>/libc.so.6.
	[ -e "$SYSROOT/lib" ] || ln -s usr/lib "$SYSROOT/lib"
	# The runtime packages have no unversioned link for the C++ runtime (the -dev package of
	# GCC 14 would bring headers the host's cross GCC cannot use).
	ln -sf libstdc++.so.6 "$SYSROOT/usr/lib/$TRIPLET/libstdc++.so"
	# libgcc_s.so is left to the cross GCC's own linker script, which adds libgcc.a (the
	# outline atomics, __aarch64_ldadd4_acq_rel and friends, live only there).
	# CMake package files carry absolute /usr paths: point them into the sysroot.
	find "$SYSROOT/usr/lib/$TRIPLET/cmake" -name '*.cmake' -exec sed -i -E "s#([\" ;])/(usr|lib)/#\1$SYSROOT/\2/#g" {} +
	printf '%s\n' "$PKGS" >"$SYSROOT/.packages"
	printf '%s\n' "$SYSROOT_KEY" >"$SYSROOT/.key"
fi
# The versions the manifest pins are the ones the archive gave.
pkgver() { awk -v p="$1" -F_ '$1 == p {print $2}' "$SYSROOT/.packages"; }
check_version() { # name debian-package manifest-version
	local got; got="$(pkgver "$2")"
	case "$got" in
	"$3" | "$3"-* | "$3"+* | *:"$3"-* | *:"$3"+*) ;;
	*) die "$1: the archive has $2 $got, the manifest pins $3 (update layers/gdal/manifest.json or the suite)" ;;
	esac
}
check_version PROJ libproj-dev "$PROJ_VERSION"
check_version GEOS libgeos-dev "$GEOS_VERSION"

# ---- 3. GDAL from Debian's source package ---------------------------------------------------
SRC="$CACHE/src"
mkdir -p "$SRC"
read -r uri file _size hash < <(apt-get source --print-uris -qq "gdal=$GDAL_DEBIAN_VERSION" | tr -d "'" | grep '\.orig\.tar\.')
[ -n "${hash:-}" ] || die "apt has no source of gdal $GDAL_DEBIAN_VERSION in $DEBIAN_SUITE"
want="${hash#SHA256:}"
if [ ! -f "$SRC/$file" ] || [ "$(sha256sum "$SRC/$file" | cut -d' ' -f1)" != "$want" ]; then
	log "downloading $file"
	curl -fsSL -o "$SRC/$file.part" "$uri"
	[ "$(sha256sum "$SRC/$file.part" | cut -d' ' -f1)" = "$want" ] || die "$file: SHA-256 differs from apt's Sources index"
	mv "$SRC/$file.part" "$SRC/$file"
fi
GDAL_SRC="$SRC/gdal-$GDAL_VERSION"
if [ ! -f "$GDAL_SRC/.unpacked-$want" ]; then
	rm -rf "$GDAL_SRC"
	tar -xf "$SRC/$file" -C "$SRC"
	# Debian's +dfsg tarball drops two non-free coordinate system tables that GDAL's CMake still
	# copies into GDAL_DATA; Debian's packaging ships neither. Empty files keep the install step
	# (no driver in the layer reads them).
	for f in ogr/data/cubewerx_extra.wkt ogr/data/ecw_cs.wkt; do [ -e "$GDAL_SRC/$f" ] || : >"$GDAL_SRC/$f"; done
	touch "$GDAL_SRC/.unpacked-$want"
fi

cat >"$CACHE/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER $TRIPLET-gcc)
set(CMAKE_CXX_COMPILER $TRIPLET-g++)
set(CMAKE_SYSROOT $SYSROOT)
set(CMAKE_LIBRARY_ARCHITECTURE $TRIPLET)
set(CMAKE_FIND_ROOT_PATH $SYSROOT)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_EXE_LINKER_FLAGS_INIT "$SYSROOT_LDFLAGS")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "$SYSROOT_LDFLAGS")
EOF
# Optional drivers off, then exactly the manifest's on; external libraries off, then exactly the
# ones the layer links on. CURL, OpenSSL, libxml2, Arrow and Parquet are found in the sysroot
# (other packages depend on them) and stay off.
GDAL_FLAGS=(
	-DCMAKE_TOOLCHAIN_FILE="$CACHE/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release
	-DCMAKE_INSTALL_PREFIX=/opt -DCMAKE_INSTALL_LIBDIR=lib
	-DBUILD_TESTING=OFF -DBUILD_APPS=ON -DBUILD_PYTHON_BINDINGS=OFF -DBUILD_JAVA_BINDINGS=OFF -DBUILD_CSHARP_BINDINGS=OFF
	-DGDAL_BUILD_OPTIONAL_DRIVERS=OFF -DOGR_BUILD_OPTIONAL_DRIVERS=OFF $DRIVER_FLAGS
	-DGDAL_USE_EXTERNAL_LIBS=OFF -DGDAL_USE_INTERNAL_LIBS=WHEN_NO_EXTERNAL
	-DGDAL_USE_ZLIB=ON -DGDAL_USE_ZSTD=ON -DGDAL_USE_DEFLATE=ON -DGDAL_USE_OPENJPEG=ON -DGDAL_USE_NETCDF=ON -DGDAL_USE_HDF5=ON
	-DGDAL_USE_ICONV=ON -DGDAL_USE_GEOS=ON -DGDAL_USE_SQLITE3=ON -DGDAL_USE_EXPAT=ON -DGDAL_USE_PNG=ON -DGDAL_USE_JPEG=ON -DGDAL_USE_TIFF=ON -DGDAL_USE_GEOTIFF=ON
	-DGDAL_USE_CURL=OFF -DGDAL_USE_ARROW=OFF -DGDAL_USE_PARQUET=OFF -DGDAL_USE_LIBXML2=OFF -DGDAL_USE_OPENSSL=OFF -DGDAL_USE_CRYPTOPP=OFF
	-DHDF5_C_COMPILER_EXECUTABLE=/bin/false -DHDF5_ROOT="$SYSROOT/usr/lib/$TRIPLET/hdf5/serial" -DHDF5_INCLUDE_DIRS="$SYSROOT/usr/include/hdf5/serial"
)
GDAL_KEY="$(printf '%s\n' "$SYSROOT_KEY" "$want" "${GDAL_FLAGS[@]}" | sha256sum | cut -c1-16)"
if [ "$(cat "$CACHE/gdal.key" 2>/dev/null)" != "$GDAL_KEY" ] || [ ! -f "$SYSROOT/opt/lib/libgdal.so" ]; then
	BUILD="$CACHE/build-gdal"
	log "configuring GDAL $GDAL_VERSION (log: $BUILD.configure.log)"
	rm -rf "$BUILD" "$SYSROOT/opt"
	export PKG_CONFIG_SYSROOT_DIR="$SYSROOT" PKG_CONFIG_LIBDIR="$SYSROOT_PKG_CONFIG_LIBDIR"
	cmake -S "$GDAL_SRC" -B "$BUILD" -G Ninja "${GDAL_FLAGS[@]}" >"$BUILD.configure.log" 2>&1 ||
		{ tail -n 40 "$BUILD.configure.log" >&2; die "GDAL configure failed"; }
	log "building GDAL with $(nproc) jobs (cold: about 9 min on 2 cores; log: $BUILD.log)"
	ninja -C "$BUILD" -j"$(nproc)" >"$BUILD.log" 2>&1 || { tail -n 40 "$BUILD.log" >&2; die "GDAL build failed"; }
	DESTDIR="$SYSROOT" cmake --install "$BUILD" >"$BUILD.install.log" 2>&1 || die "GDAL install failed"
	printf '%s\n' "$GDAL_KEY" >"$CACHE/gdal.key"
fi

# ---- 4. stage /opt --------------------------------------------------------------------------
STAGE="$OUT/gdal-layer-$ARCH"
log "staging /opt in $STAGE"
rm -rf "$STAGE"
mkdir -p "$STAGE/lib" "$STAGE/bin" "$STAGE/share/gdal-layer" "$STAGE/share/licenses"
cp -a "$SYSROOT"/opt/lib/libgdal.so* "$STAGE/lib/"
cp -L "$SYSROOT/opt/bin/gdalinfo" "$SYSROOT/opt/bin/ogrinfo" "$STAGE/bin/"
cp -a "$SYSROOT/opt/share/gdal" "$STAGE/share/gdal"
# PROJ_DATA: proj.db and Debian's proj-data (grids included: without them PROJ falls back to
# less accurate transformations without saying so).
cp -a "$SYSROOT/usr/share/proj" "$STAGE/share/proj"
# The DT_NEEDED closure, resolved in the sysroot as the loader will resolve it in /opt/lib.
LIBDIRS=("$SYSROOT/opt/lib" "$SYSROOT/usr/lib/$TRIPLET" "$SYSROOT/usr/lib/$TRIPLET/hdf5/serial")
needed() { $TRIPLET-readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# mimalloc, the C allocator of every program that links internal/gdal (docs/decisions/0118): the
# convert bootstrap and the container CLI load it from here, before libc.
cp -L "$SYSROOT/usr/lib/$TRIPLET/libmimalloc.so.3" "$STAGE/lib/"
declare -A seen=()
queue=("$STAGE/bin/gdalinfo" "$STAGE/bin/ogrinfo" "$(readlink -f "$STAGE/lib/libgdal.so")" "$STAGE/lib/libmimalloc.so.3")
while [ "${#queue[@]}" -gt 0 ]; do
	f="${queue[0]}"; queue=("${queue[@]:1}")
	for so in $(needed "$f"); do
		[ -n "${seen[$so]:-}" ] && continue
		seen[$so]=1
		[ -e "$STAGE/lib/$so" ] && continue
		src=""
		for d in "${LIBDIRS[@]}"; do if [ -e "$d/$so" ]; then src="$d/$so"; break; fi; done
		[ -n "$src" ] || die "$so (needed by $(basename "$f")) is in no sysroot library directory"
		cp -L "$src" "$STAGE/lib/$so"
		queue+=("$STAGE/lib/$so")
	done
done
cp -L "$SYSROOT/usr/lib/$TRIPLET/$LOADER" "$STAGE/lib/$LOADER"
# glibc's iconv modules: GDAL recodes DBF and other legacy code pages through iconv, and the
# bundled glibc cannot use AL2023's modules (GCONV_PATH=/opt/lib/gconv, set by the stack).
cp -a "$SYSROOT/usr/lib/$TRIPLET/gconv" "$STAGE/lib/gconv"
# Debug sections out; the sysroot's libraries are already stripped by Debian, GDAL is not.
find "$STAGE/lib" "$STAGE/bin" -type f \( -name '*.so*' -o -perm -u+x \) -exec $TRIPLET-strip --strip-unneeded {} + 2>/dev/null || true
for f in "$STAGE"/lib/*.so* "$STAGE"/lib/gconv/*.so "$STAGE"/bin/*; do
	[ -L "$f" ] && continue
	case "$(basename "$f")" in
	"$LOADER" | libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libmvec.so.1 | libresolv.so.2) continue ;;
	esac
	patchelf --force-rpath --set-rpath /opt/lib "$f"
done
for f in "$STAGE"/bin/*; do patchelf --set-interpreter "/opt/lib/$LOADER" "$f"; done
for d in "$SYSROOT"/usr/share/doc/*/; do
	[ -f "$d/copyright" ] && cp "$d/copyright" "$STAGE/share/licenses/$(basename "$d").copyright"
done
cp "$GDAL_SRC/LICENSE.TXT" "$STAGE/share/licenses/gdal-$GDAL_VERSION.LICENSE.TXT"
cp "$MANIFEST" "$STAGE/share/gdal-layer/manifest.json"
{
	echo "gdal $GDAL_VERSION from Debian $DEBIAN_SUITE source gdal_$GDAL_DEBIAN_VERSION ($file, sha256 $want)"
	echo "cmake flags: ${GDAL_FLAGS[*]}"
	echo "packages ($DEBIAN_SUITE $DEBIAN_ARCH):"
	sed 's/^/  /' "$SYSROOT/.packages"
} >"$STAGE/share/gdal-layer/build-info.txt"
(cd "$STAGE/lib" && find . -maxdepth 1 -name '*.so*' | sed 's|^\./||' | LC_ALL=C sort) >"$STAGE/share/gdal-layer/libraries.txt"
if find "$STAGE/lib" -maxdepth 1 -name 'libcurl*' | grep -q .; then
	log "note: libcurl is in the closure through Debian's $(for l in "$STAGE"/lib/*.so*; do needed "$l" | grep -q '^libcurl' && basename "$l"; done | tr '\n' ' ')(GDAL itself has no curl; make test proves no connect)"
fi

# drivers.txt and the version, from the layer's own tools run the way Lambda runs them.
"$HERE/lambda-chroot.sh" --opt "$STAGE" -- /opt/bin/gdalinfo --version >"$STAGE/share/gdal-layer/version.txt"
{
	"$HERE/lambda-chroot.sh" --opt "$STAGE" -- /opt/bin/gdalinfo --formats
	"$HERE/lambda-chroot.sh" --opt "$STAGE" -- /opt/bin/ogrinfo --formats
} >"$STAGE/share/gdal-layer/drivers.txt"
grep -q "^GDAL $GDAL_VERSION," "$STAGE/share/gdal-layer/version.txt" || die "the layer's gdalinfo says $(cat "$STAGE/share/gdal-layer/version.txt")"
# Exactly the manifest's drivers: one more is attack surface nobody reviewed, one fewer fails on
# Lambda only.
got="$(sed -n 's/^  \(.*\) -[a-z].*/\1/p' "$STAGE/share/gdal-layer/drivers.txt" | LC_ALL=C sort -u)"
want_drivers="$(manifest "'\\n'.join(d['name'] for d in m['drivers'])" | LC_ALL=C sort -u)"
if [ "$got" != "$want_drivers" ]; then
	diff <(printf '%s\n' "$want_drivers") <(printf '%s\n' "$got") | sed 's/^</  manifest only:/; s/^>/  layer only:/' >&2 || true
	die "the layer's drivers differ from layers/gdal/manifest.json"
fi

ZIP="$OUT/gdal-layer-$ARCH.zip"
rm -f "$ZIP"
# Reproducible zip: fixed timestamps, sorted entries, symlinks kept.
(cd "$STAGE" && find . -exec touch -h -d '2000-01-01T00:00:00Z' {} + && find . -type f -o -type l | LC_ALL=C sort | sed 's|^\./||' | zip -X -9 --symlinks -q "$ZIP" -@)
"$HERE/layer-report.py" "$ZIP" "$MANIFEST"
