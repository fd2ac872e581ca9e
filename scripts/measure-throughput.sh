#!/bin/sh
# Re-measures the conversion throughput per source format on this machine
# (internal/gdal TestMeasureThroughput: CPU time of one GDAL thread, and the
# ranged reads of sources read by range) into internal/cost/throughput.json,
# which `geomigrate plan` embeds, then regenerates docs/scale.md from it
# (TestScaleDocIsCurrent fails until it is). Takes a few minutes; the less
# else runs on the machine, the better. Commit both files.
set -eu
cd "$(dirname "$0")/.."
out="$(pwd)/internal/cost/throughput.json"
GEOMIGRATE_MEASURE_THROUGHPUT="$out" go test -count=1 -timeout 30m -run '^TestMeasureThroughput$' -v ./internal/gdal/
go run ./tools/scaledoc > docs/scale.md
echo "wrote $out and docs/scale.md"
