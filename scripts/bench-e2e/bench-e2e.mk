# The end-to-end figure: 200 small GeoTIFFs through `geomigrate migrate
# --backend aws` on the loopback S3 and DynamoDB stand-ins against the
# source document's Python path (scripts/bench-e2e), paired and alternated;
# prints "figure: e2e-200-small cpu_ratio=… wall_ratio=…" with the servers' CPU per side and the load average,
# each side's S3 and DynamoDB requests per file by operation (from the stand-ins' own request logs) and output bytes
# per file (and, with BENCH_E2E_JSON, the pair and those figures as a report fragment), then the S3
# requests per small file TestRequestsPerSmallFile asserts on 4 files. Servers of its own, stopped after.
BENCH_E2E_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
BENCH_E2E_FILES ?= 200
BENCH_E2E_PAIRS ?= 3
# BENCH_E2E_JSON: where the pair is also written as a report fragment (make bench reads it).
BENCH_E2E_JSON ?=
# BENCH_E2E_WORKERS: geomigrate's --workers (empty: its default for --backend aws).
BENCH_E2E_WORKERS ?=
# Debian's Python peers of the seed (rasterio 1.3, boto3 1.26, tenacity 8.2), and GNU
# time for each side's CPU time.
BENCH_E2E_APT := python3-rasterio python3-boto3 python3-tenacity time

.PHONY: bench-e2e
bench-e2e: deps integration-tools ## end to end on the S3/DynamoDB stand-ins: geomigrate --backend aws vs the seed's Python path, 200 small GeoTIFFs, paired runs, ratio
	@missing=""; for p in $(BENCH_E2E_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	cd $(BENCH_E2E_ROOT) && $(GO) build -o $(BIN)/geomigrate ./cmd/geomigrate
	cd $(BENCH_E2E_ROOT) && AWS_EC2_METADATA_DISABLED=true scripts/with-integration-servers.sh \
		env BENCH_E2E_JSON=$(BENCH_E2E_JSON) BENCH_E2E_WORKERS=$(BENCH_E2E_WORKERS) scripts/bench-e2e/bench-e2e.sh $(BIN)/geomigrate $(BENCH_E2E_FILES) $(BENCH_E2E_PAIRS)
	@# The S3 requests per small file, counted (and asserted) by the integration test.
	@cd $(BENCH_E2E_ROOT) && AWS_EC2_METADATA_DISABLED=true scripts/with-integration-servers.sh \
		$(GO) test -tags integration -count=1 -timeout 10m -run '^TestRequestsPerSmallFile$$' -v ./cmd/geomigrate/ >$(BIN)/requests-per-file.log 2>&1 \
		|| { tail -30 $(BIN)/requests-per-file.log; exit 1; }
	@grep -o 'figure: .*' $(BIN)/requests-per-file.log

# The COG defaults measured on the end-to-end benchmark's small files: the
# seed's conversion (no S3) and Engine.Convert with each candidate's settings
# (internal/gdal BenchmarkSmallRasterCOG), alternated round by round; CPU and
# bytes per file (docs/decisions/0110). COG_DEFAULTS_DTYPE=int16 or float32
# for the other generated sets.
COG_DEFAULTS_FILES  ?= 20
COG_DEFAULTS_ROUNDS ?= 4
COG_DEFAULTS_BENCH  ?= .
COG_DEFAULTS_DTYPE  ?= uint8

.PHONY: bench-cog-defaults
bench-cog-defaults: deps ## COG compression candidates vs the seed's conversion on the e2e small files: CPU and bytes per file, alternated rounds
	@missing=""; for p in $(BENCH_E2E_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	cd $(BENCH_E2E_ROOT) && mkdir -p $(BIN)/bench && $(GO) test -c -o $(BIN)/bench/gdal.test ./internal/gdal
	cd $(BENCH_E2E_ROOT) && scripts/bench-e2e/cog-defaults.sh $(BIN)/bench/gdal.test \
		$(COG_DEFAULTS_FILES) $(COG_DEFAULTS_ROUNDS) '$(COG_DEFAULTS_BENCH)' $(COG_DEFAULTS_DTYPE)
