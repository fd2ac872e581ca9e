# geomigrate — run `make help` for the targets.
SHELL := /bin/bash
# A recipe line stops at its first failing command, an unset variable or a
# failing stage of a pipe (a `go test | tee` that fails fails the target).
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      := bin
TOOLS    := $(CURDIR)/.tools
SAMPLES  ?= samples
OUT      ?= out
# Debian/Ubuntu packages the build and the tests need: GDAL headers for the
# cgo package, gdal-bin and python3-gdal for the external COG judge, and
# mimalloc, the C allocator the cgo package links (docs/decisions/0118).
APT_PACKAGES := libgdal-dev gdal-bin python3-gdal pkg-config libmimalloc-dev

export PATH := $(TOOLS)/bin:$(PATH)
# No SDK client started by a target may wander off to the EC2 instance
# metadata address looking for credentials or a region.
export AWS_EC2_METADATA_DISABLED := true

.PHONY: help
help: ## list the targets (names in colour on a terminal only)
	@if [ -t 1 ]; then on='\033[36m'; off='\033[0m'; else on=''; off=''; fi; \
	grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -v on="$$on" -v off="$$off" 'BEGIN{FS=":.*## "}{printf "  %s%-18s%s %s\n",on,$$1,off,$$2}'

.PHONY: deps
deps: ## install the system packages the build needs (GDAL), when missing
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v gdal-config >/dev/null && echo "GDAL $$(gdal-config --version)"

.PHONY: cli
cli: deps ## build the geomigrate CLI into bin/ (--version names the commit)
	$(GO) build -ldflags "-X github.com/geomigrate/geomigrate/internal/buildinfo.Revision=$$(git rev-parse --short=12 HEAD 2>/dev/null)" -o $(BIN)/geomigrate ./cmd/geomigrate

.PHONY: run
run: cli ## generate sample data (once: your edits under samples/ are kept) and migrate it locally into ./out, printing a summary
	@if [ -e $(SAMPLES) ]; then echo "$(SAMPLES)/ exists: kept as it is (rm -r $(SAMPLES) to get fresh samples)"; \
	else ./$(BIN)/geomigrate sample-data $(SAMPLES); fi
	./$(BIN)/geomigrate migrate $(SAMPLES) --dest $(OUT)
	@echo "./$(BIN)/geomigrate status --dest $(OUT) shows the latest job of each source and the queues"

.PHONY: test
test: export GEOMIGRATE_REQUIRE_JUDGES := 1
test: export GEOMIGRATE_REQUIRE_LAYER := 1
test: deps layer-deps hyparquet asl-judges stac-validator chromium ## install and start what the tests need, run them all, stop what was started
	$(MAKE) --no-print-directory layer build build-native
	$(GO) mod tidy -diff
	cd infra && $(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(MAKE) --no-print-directory hygiene
	$(MAKE) --no-print-directory test-integration
	$(MAKE) --no-print-directory test-infra
	$(MAKE) --no-print-directory rehearse
	$(MAKE) --no-print-directory test-scale

.PHONY: test-unit
test-unit: ## unit tests only (no services), -short: the slowest GDAL and race cases run in make test
	$(GO) test -short -timeout 10m ./...

# make bench: each figure against its anchor, measured alternately in one
# run (cmd/geomigrate-bench). BENCH_QUICK=1: smaller inputs, fewer runs.
# BENCH_INCLUDE: JSON figures of other benchmarks appended to the table.
BENCH_DIR     := $(BIN)/bench
BENCH_JSON    ?= $(BENCH_DIR)/results.json
BENCH_QUICK   ?=
BENCH_INCLUDE ?=
BENCH_FLAGS   ?=

# gpq (planetlabs/gpq at 2baf6be, Apache-2.0), the GeoParquet figures'
# anchor: built from the shared anchors' git archive in a scratch directory
# with its own go.mod (dependencies from the Go module proxy), never linked
# into geomigrate. Without the archive the gpq figures say "not measured".
GPQ_ARCHIVE ?= ../shared/anchors/gpq-2baf6be.tar.gz
GPQ_SHA256  := 29fe3a7b3165bec880bb232ab41035b181462788b35b2ae9cdf439724d9d3fda
GPQ_SCRATCH := build/gpq-2baf6be

.PHONY: bench-gpq
bench-gpq: ## build the GeoParquet anchor bin/bench/gpq from GPQ_ARCHIVE (planetlabs/gpq at 2baf6be), when missing
	@if [ -x $(BENCH_DIR)/gpq ]; then exit 0; fi; \
	if [ ! -f "$(GPQ_ARCHIVE)" ]; then echo "bench-gpq: $(GPQ_ARCHIVE) not found (GPQ_ARCHIVE=…): the gpq figures will not be measured"; exit 0; fi; \
	echo "$(GPQ_SHA256)  $(GPQ_ARCHIVE)" | sha256sum -c --quiet; \
	rm -rf $(GPQ_SCRATCH) && mkdir -p $(GPQ_SCRATCH) $(BENCH_DIR) && tar xzf "$(GPQ_ARCHIVE)" -C $(GPQ_SCRATCH); \
	cd $(GPQ_SCRATCH) && GOWORK=off $(GO) build -o $(CURDIR)/$(BENCH_DIR)/gpq ./cmd/gpq

.PHONY: bench-binaries
bench-binaries: cli bench-gpq ## build what make bench runs: bin/geomigrate, bin/geomigrate-bench, bin/bench/sha256file, bin/bench/gpq, bin/bench/convertfloor and two test binaries
	@# GNU time measures every side; rasterio and numpy run the verified COG anchor (scripts/bench-cog).
	@$(MAKE) --no-print-directory deps APT_PACKAGES="time python3-rasterio python3-numpy" >/dev/null
	$(GO) build -ldflags "-X github.com/geomigrate/geomigrate/internal/buildinfo.Revision=$$(git rev-parse --short=12 HEAD 2>/dev/null)" -o $(BIN)/geomigrate-bench ./cmd/geomigrate-bench
	$(GO) build -o $(BENCH_DIR)/sha256file ./cmd/geomigrate-bench/sha256file
	$(GO) build -o $(BENCH_DIR)/convertfloor ./cmd/geomigrate-bench/convertfloor
	$(GO) test -c -o $(BENCH_DIR)/localrun.test ./internal/localrun
	$(GO) test -c -o $(BENCH_DIR)/geoparquet.test ./internal/geoparquet

.PHONY: bench
bench: bench-binaries ## figures against their anchors, pairs alternated, median and range; the backfill's CPU and peak memory per size (full: ~60 min on 2 busy CPUs; BENCH_QUICK=1: 2 to 5 min)
	@# The end-to-end pair first: its pair and figures go into the same report. A
	@# failed end-to-end run leaves the report without that pair (said, not hidden).
	@rm -f $(BENCH_DIR)/e2e.json
	-$(MAKE) --no-print-directory bench-e2e BENCH_E2E_JSON=$(abspath $(BENCH_DIR))/e2e.json
	@[ -f $(BENCH_DIR)/e2e.json ] || echo "bench: no end-to-end pair in this report (make bench-e2e failed above)" >&2
	./$(BIN)/geomigrate-bench run -json $(BENCH_JSON) $(if $(filter 1 true yes,$(BENCH_QUICK)),-quick) $$([ -f $(BENCH_DIR)/e2e.json ] && echo -include $(BENCH_DIR)/e2e.json) $(foreach f,$(BENCH_INCLUDE),-include $(f)) $(BENCH_FLAGS)

.PHONY: bench-doc
bench-doc: ## put the last make bench's figures (bin/bench/results.json) into docs/benchmarks.json and docs/benchmarks.md
	$(GO) run ./tools/benchdoc -from $(BENCH_JSON)

.PHONY: bench-go
bench-go: deps ## the Go benchmarks of every package (conversion vs gdal_translate in-process, GeoParquet rows/s and memory, cold starts, check/convert)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x -timeout 60m ./...

.PHONY: test-scale
test-scale: deps ## the local backfill over 10,000 files: each ends with exactly one terminal job record (time bound: -timeout)
	GEOMIGRATE_TEST_SCALE=1 $(GO) test -run '^TestBackfillOverTenThousandObjects$$' -count=1 -timeout 45m ./internal/localrun/

.PHONY: bench-backfill
bench-backfill: deps ## the local backfill at 100, 1,000 and 10,000 files: orchestration ms per file (all, first and last tenth), CPU, memory
	GEOMIGRATE_BENCH_BACKFILL=1 $(GO) test -run '^$$' -bench '^BenchmarkBackfillOverhead$$' -benchtime 1x -timeout 90m ./internal/localrun/

# bench-rss: peak RSS of converting a big vector layer and a big raster,
# each migrated by bin/geomigrate in a child process (inputs generated once
# under BENCH_RSS_DIR and kept; outputs removed). Goal: at most 1 GiB each.
# The figure labels name the default sizes.
BENCH_RSS_DIR      ?= build/bench-rss
BENCH_RSS_FEATURES ?= 10000000
BENCH_RSS_PIXELS   ?= 32768
.PHONY: bench-rss
bench-rss: cli ## peak RSS of migrating a 10-million-point FlatGeobuf layer and a 2 GiB GeoTIFF (figure: lines)
	@mkdir -p $(BENCH_RSS_DIR)/vector $(BENCH_RSS_DIR)/raster
	@if [ ! -e $(BENCH_RSS_DIR)/vector/points.fgb ]; then \
	  echo "generating $(BENCH_RSS_FEATURES) points"; \
	  $(GO) run ./tools/rssbench points $(BENCH_RSS_FEATURES) $(BENCH_RSS_DIR)/points.csv && \
	  ogr2ogr -f FlatGeobuf -lco SPATIAL_INDEX=NO -a_srs EPSG:4326 -oo X_POSSIBLE_NAMES=x -oo Y_POSSIBLE_NAMES=y \
	    -oo AUTODETECT_TYPE=YES -nln points $(BENCH_RSS_DIR)/vector/points.fgb $(BENCH_RSS_DIR)/points.csv && \
	  rm -f $(BENCH_RSS_DIR)/points.csv; fi
	@if [ ! -e $(BENCH_RSS_DIR)/raster/big.tif ]; then \
	  echo "generating a $(BENCH_RSS_PIXELS) x $(BENCH_RSS_PIXELS) UInt16 GeoTIFF"; \
	  $(GO) run ./tools/rssbench pgm $(BENCH_RSS_PIXELS) $(BENCH_RSS_DIR)/big.pgm && \
	  gdal_translate -q -of GTiff -co TILED=YES -a_srs EPSG:3857 -a_ullr 0 $(BENCH_RSS_PIXELS)0 $(BENCH_RSS_PIXELS)0 0 \
	    $(BENCH_RSS_DIR)/big.pgm $(BENCH_RSS_DIR)/raster/big.tif && \
	  rm -f $(BENCH_RSS_DIR)/big.pgm; fi
	@rm -rf $(BENCH_RSS_DIR)/out-vector $(BENCH_RSS_DIR)/out-raster
	@$(GO) run ./tools/rssbench run rss-10m-features '$(BENCH_RSS_DIR)/out-vector/*.parquet' -- \
	  ./$(BIN)/geomigrate migrate $(BENCH_RSS_DIR)/vector --dest $(BENCH_RSS_DIR)/out-vector --workers 1 --progress plain
	@$(GO) run ./tools/rssbench run rss-2gib-geotiff '$(BENCH_RSS_DIR)/out-raster/*.tif' -- \
	  ./$(BIN)/geomigrate migrate $(BENCH_RSS_DIR)/raster --dest $(BENCH_RSS_DIR)/out-raster --workers 1 --progress plain
	@rm -rf $(BENCH_RSS_DIR)/out-vector $(BENCH_RSS_DIR)/out-raster

.PHONY: fmt
fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

.PHONY: clean
clean: ## remove build outputs, samples and local runs
	rm -rf $(BIN) build $(SAMPLES) $(OUT)

include test/integration.mk
include test/hygiene.mk
include scripts/hyparquet/hyparquet.mk
include infra/infra.mk
include scripts/asl-judges/asl-judges.mk
include scripts/stac-validator/stac-validator.mk
include functions/functions.mk
include layers/gdal/layer.mk
include scripts/chromium/chromium.mk
include scripts/bench-e2e/bench-e2e.mk
