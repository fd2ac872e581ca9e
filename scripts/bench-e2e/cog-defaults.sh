#!/usr/bin/env bash
# COG defaults on the end-to-end benchmark's small files: N GeoTIFFs from
# bench_e2e.py generate (the same generator as bench-e2e.sh), converted by
# the seed's Python path without S3 (bench_e2e.py convert) and by
# Engine.Convert with each candidate's settings (internal/gdal
# BenchmarkSmallRasterCOG, pixel check included), alternated round by round
# (seed first in odd rounds, last in even ones). Prints each round's lines
# and a table of medians: CPU (user + system) and bytes per file, and each
# candidate's CPU ÷ the seed's in the same round.
#
#   scripts/bench-e2e/cog-defaults.sh GDAL_TEST_BIN [N] [ROUNDS] [BENCH_REGEX] [DTYPE]
#
# DTYPE (uint8, the end-to-end set; int16; float32) picks the generator's
# pixels.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TESTBIN="$(realpath "${1:?usage: cog-defaults.sh GDAL_TEST_BIN [N] [ROUNDS] [BENCH_REGEX] [DTYPE]}")"
N="${2:-20}"
ROUNDS="${3:-3}"
REGEX="${4:-.}"
DTYPE="${5:-uint8}"
PY=/usr/bin/python3
"$PY" -c 'import rasterio, boto3, tenacity' 2>/dev/null ||
	{ echo "cog-defaults: $PY lacks rasterio/boto3/tenacity (apt-get install python3-rasterio python3-boto3 python3-tenacity)" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/geomigrate-cog-defaults.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$PY" "$HERE/bench_e2e.py" generate "$WORK/in" "$N" "$DTYPE"
echo "cog-defaults: $N $DTYPE files of $(stat -c %s "$WORK/in/tile_0000.tif") bytes; $ROUNDS rounds; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"

seed() { # round
	rm -rf "$WORK/seed"
	# GDAL warns once per file that the COG driver ignores the seed's
	# GTiff options (BLOCKXSIZE, TILED …): the seed writes 512² blocks.
	(cd "$HERE" && "$PY" bench_e2e.py convert "$WORK/in" "$WORK/seed" 2>/dev/null) | sed "s/^/round $1 /"
}
engine() { # round
	(cd "$HERE/../../internal/gdal" && GEOMIGRATE_BENCH_SMALL_RASTERS="$WORK/in" \
		"$TESTBIN" -test.run '^$' -test.bench "BenchmarkSmallRasterCOG/($REGEX)" -test.benchtime 1x -test.timeout 60m) |
		grep '^BenchmarkSmallRasterCOG/' | sed "s/^/round $1 /"
}
: >"$WORK/lines"
for ((i = 1; i <= ROUNDS; i++)); do
	if ((i % 2)); then seed "$i" | tee -a "$WORK/lines"; engine "$i" | tee -a "$WORK/lines"
	else engine "$i" | tee -a "$WORK/lines"; seed "$i" | tee -a "$WORK/lines"; fi
done
echo "cog-defaults: load $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$HERE/bench_e2e.py" tabulate "$WORK/lines"
