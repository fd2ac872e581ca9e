#!/usr/bin/env bash
# Build the GDAL Lambda layer (and the convert function against it) with Docker.
#   layers/gdal/build.sh [arm64|x86_64]      (default arm64; run from anywhere)
# Produces build/gdal-layer-<arch>.zip (unzips to /opt: lib/, share/gdal, share/proj) and
# build/convert/bootstrap, then checks the layer against layers/gdal/manifest.json. Inside the image
# (the Dockerfile's check stage, in the unmodified Lambda base image): ldd finds every library of the
# layer and of the bootstrap, the manifest's drivers are present, curl and Arrow are absent. Here: the
# unzipped and zipped sizes are within budget and the /opt layout is complete.
set -euo pipefail

ARCH="${1:-arm64}"
case "$ARCH" in
  arm64) PLATFORM=linux/arm64 ;;
  x86_64 | amd64) ARCH=x86_64; PLATFORM=linux/amd64 ;;
  *) echo "usage: $0 [arm64|x86_64]" >&2; exit 2 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MANIFEST="$HERE/manifest.json"
OUT="$ROOT/build"
command -v docker >/dev/null || { echo "layer build needs Docker (with buildx); see layers/gdal/README.md" >&2; exit 2; }
command -v python3 >/dev/null || { echo "layer build needs python3 (reads manifest.json)" >&2; exit 2; }

# Versions and the driver switches come from the manifest, so the manifest is the single source.
read_manifest() { python3 -c "import json,sys; m=json.load(open('$MANIFEST')); print($1)"; }
GDAL_VERSION=$(read_manifest "m['versions']['gdal']")
PROJ_VERSION=$(read_manifest "m['versions']['proj']")
GEOS_VERSION=$(read_manifest "m['versions']['geos']")
BASE_IMAGE=$(read_manifest "m['base_image']")
DRIVER_FLAGS=$(read_manifest "' '.join(sorted({'-D'+d['cmake']+'=ON' for d in m['drivers'] if d['cmake']!='core'}))")
# Names the check stage looks for in `gdalinfo --formats` / `ogrinfo --formats` ('|'-separated:
# driver names contain spaces).
DRIVER_NAMES=$(read_manifest "'|'.join(d['name'] for d in m['drivers'])")

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
echo "building GDAL $GDAL_VERSION layer for $ARCH ($PLATFORM)"
docker buildx build \
  --platform "$PLATFORM" \
  --file "$HERE/Dockerfile" \
  --target export \
  --build-arg BASE_IMAGE="$BASE_IMAGE" \
  --build-arg GDAL_VERSION="$GDAL_VERSION" \
  --build-arg PROJ_VERSION="$PROJ_VERSION" \
  --build-arg GEOS_VERSION="$GEOS_VERSION" \
  --build-arg DRIVER_FLAGS="$DRIVER_FLAGS" \
  --build-arg DRIVER_NAMES="$DRIVER_NAMES" \
  --build-arg JOBS="$(nproc)" \
  --output "type=local,dest=$TMP" \
  "$ROOT"

mkdir -p "$OUT"
ZIP="$OUT/gdal-layer-$ARCH.zip"
rm -f "$ZIP"
# Reproducible zip: fixed timestamps, sorted entries, symlinks kept.
(cd "$TMP/opt" && find . -exec touch -h -d '2000-01-01T00:00:00Z' {} + && find . -type f -o -type l | LC_ALL=C sort | sed 's|^\./||' | zip -X -9 --symlinks -q "$ZIP" -@)
if [ -f "$TMP/convert/bootstrap" ]; then
  mkdir -p "$OUT/convert" && cp "$TMP/convert/bootstrap" "$OUT/convert/bootstrap"
  echo "convert: $OUT/convert/bootstrap"
fi

# Size budget (also asserted by infra/layer_manifest_test.go when the zip exists).
python3 - "$ZIP" "$MANIFEST" <<'PY'
import json, os, sys, zipfile
zpath, mpath = sys.argv[1], sys.argv[2]
m = json.load(open(mpath))
b = m["size_budget"]
z = zipfile.ZipFile(zpath)
unzipped = sum(i.file_size for i in z.infolist())
zipped = os.path.getsize(zpath)
print(f"layer: {zpath}: {zipped/2**20:.1f} MiB zipped, {unzipped/2**20:.1f} MiB unzipped "
      f"(budget {b['layer_unzipped_max_bytes']/2**20:.0f} MiB; Lambda limit {b['lambda_unzipped_limit_bytes']/2**20:.0f} MiB incl. function)")
if unzipped > b["layer_unzipped_max_bytes"] or zipped > b["layer_zip_max_bytes"]:
    sys.exit("layer over its size budget")
names = set(z.namelist())
for p in m["layout"]:
    if not any(n.startswith(p) for n in names):
        sys.exit(f"layer lacks {p}")
PY
