#!/bin/sh
# Re-measures the conversion throughput per source format on this machine
# (internal/gdal TestMeasureThroughput) and writes the table `geomigrate plan`
# and docs/scale.md use: internal/cost/throughput.json. Takes a few minutes;
# run it on an idle machine, commit the file, then regenerate docs/scale.md
# (go run ./internal/cost/scaledoc > docs/scale.md).
set -eu
cd "$(dirname "$0")/.."
out="$(pwd)/internal/cost/throughput.json"
GEOMIGRATE_MEASURE_THROUGHPUT="$out" go test -count=1 -timeout 30m -run '^TestMeasureThroughput$' -v ./internal/gdal/
echo "wrote $out"
