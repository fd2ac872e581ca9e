# Hygiene checks run by `make test`: the race detector on the packages with
# concurrency, staticcheck (pinned) on both modules, and a short fuzz run of
# every hand-written parser. Included from the root Makefile.

HYGIENE_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
# Every package with a `go` statement in any of its files, and the ones
# whose state is shared between processes or goroutines (filelock, policy).
# TestRaceListCoversGoroutines (internal/architecture) fails when a package
# starts goroutines and is in none of RACE_PKGS, RACE_SHORT_PKGS and
# RACE_EXCLUDED.
RACE_PKGS ?= ./internal/asl/... ./internal/awsapp ./internal/breaker/... \
	./internal/emf ./internal/filelock/... ./internal/fingerprint \
	./internal/localrun/... ./internal/migration ./internal/objectstore/... ./internal/plan ./internal/policy/... \
	./internal/queue/... ./internal/statestore/...
# Race-checked with -short: their slowest cases are GDAL conversions (C code,
# which the detector does not see), whole CLI runs and GeoParquet files of a
# million rows, 10x slower under -race; test-integration runs them in full
# without it.
RACE_SHORT_PKGS ?= ./cmd/geomigrate ./internal/gdal ./internal/geoparquet
# Packages with goroutines that test-race leaves out, each for a reason:
# functions/lambdatest has no tests of its own and test/sfn only
# integration-tagged ones (test-integration runs both, against servers).
RACE_EXCLUDED := ./functions/lambdatest ./test/sfn
RACE_TIMEOUT ?= 15m

# staticcheck 2026.2.2 is module version v0.8.2 (the newest on the module
# proxy that builds with Go 1.26); installed once into .tools/bin.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(HYGIENE_ROOT)/.tools/bin/staticcheck
STATICCHECK_STAMP := $(HYGIENE_ROOT)/.tools/bin/.staticcheck-$(STATICCHECK_VERSION)

# A count, not a duration: when a duration runs out while a worker is
# mid-input, go test can fail the run with "context deadline exceeded"
# though nothing failed; a count ends between inputs.
FUZZTIME ?= 10000x
FUZZ_TIMEOUT ?= 5m
# package:FuzzName, one `go test -fuzz` per pair (-fuzz takes one target per package run).
FUZZ_TARGETS ?= \
	./internal/asl:FuzzParse \
	./internal/asl:FuzzJSONPath \
	./internal/asl:FuzzIntrinsic \
	./internal/geoparquet:FuzzDecodeWKB \
	./internal/cogcheck:FuzzCheck \
	./internal/budget:FuzzCheckTIFF \
	./internal/budget:FuzzCgroupFiles \
	./internal/recipe:FuzzParse

.PHONY: test-race staticcheck tools-staticcheck fuzz-smoke hygiene

hygiene: test-race staticcheck fuzz-smoke ## race, staticcheck and fuzz smoke runs (part of make test)

test-race: ## go test -race on the packages with concurrency
	cd $(HYGIENE_ROOT) && scripts/failures-last.sh go test -race -count=1 -timeout $(RACE_TIMEOUT) $(RACE_PKGS)
	cd $(HYGIENE_ROOT) && scripts/failures-last.sh go test -race -short -count=1 -timeout $(RACE_TIMEOUT) $(RACE_SHORT_PKGS)

$(STATICCHECK_STAMP):
	@mkdir -p $(HYGIENE_ROOT)/.tools/bin
	GOBIN=$(HYGIENE_ROOT)/.tools/bin go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@touch $@

tools-staticcheck: $(STATICCHECK_STAMP) ## install staticcheck $(STATICCHECK_VERSION) into .tools/bin

staticcheck: tools-staticcheck ## staticcheck the root module (with and without -tags integration) and infra/
	cd $(HYGIENE_ROOT) && $(STATICCHECK) ./...
	cd $(HYGIENE_ROOT) && $(STATICCHECK) -tags integration ./...
	cd $(HYGIENE_ROOT)/infra && $(STATICCHECK) ./...
	cd $(HYGIENE_ROOT)/infra && $(STATICCHECK) -tags integration ./...

fuzz-smoke: ## run each fuzz target for $(FUZZTIME) inputs (its seed corpus in testdata/fuzz/ runs in every go test)
	@set -e; cd $(HYGIENE_ROOT); for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "go test -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg"; \
	  go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -timeout $(FUZZ_TIMEOUT) $$pkg; \
	done
