# Integration tests against local stand-ins for AWS: versitygw (S3),
# dynalite (DynamoDB), installed into .tools, and moto_server (SQS, plus a
# second DynamoDB and S3; pip install 'moto[server]==5.2.1'), started on
# free 127.0.0.1 ports. Use on its own (make -f test/integration.mk test-integration) or
# include it from the root Makefile.

INTEGRATION_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
INTEGRATION_STATE ?= $(INTEGRATION_ROOT)/.tools/integration/state.env
INTEGRATION_GOTEST_FLAGS ?= -count=1 -timeout 10m
INTEGRATION_PKGS ?= ./...
# The CLI binary the end-to-end tests run (cmd/geomigrate reads its path
# from GEOMIGRATE_CLI); built here, never inside a test.
INTEGRATION_CLI ?= $(INTEGRATION_ROOT)/bin/geomigrate

.PHONY: integration-tools integration-up integration-down test-integration

integration-tools: ## install versitygw v1.8.0 (.tools/bin) and dynalite 4 (.tools/node_modules); skipped when present
	@$(INTEGRATION_ROOT)/scripts/install-versitygw.sh
	@$(INTEGRATION_ROOT)/scripts/install-dynalite.sh

integration-up: integration-tools ## start versitygw, dynalite and moto_server on free loopback ports; endpoints and PIDs in .tools/integration/state.env
	@$(INTEGRATION_ROOT)/scripts/integration-up.sh $(INTEGRATION_STATE)
	@echo "source $(INTEGRATION_STATE) to use them; make -f test/integration.mk integration-down stops them"

integration-down: ## stop the servers started by integration-up (by PID)
	@$(INTEGRATION_ROOT)/scripts/integration-down.sh $(INTEGRATION_STATE)

test-integration: integration-tools ## go test -tags integration ./... against servers started for this run and always stopped afterwards
	cd $(INTEGRATION_ROOT) && go build -o $(INTEGRATION_CLI) ./cmd/geomigrate
	@cd $(INTEGRATION_ROOT) && GEOMIGRATE_CLI=$(INTEGRATION_CLI) AWS_EC2_METADATA_DISABLED=true scripts/with-integration-servers.sh \
		scripts/failures-last.sh go test -tags integration $(INTEGRATION_GOTEST_FLAGS) $(INTEGRATION_PKGS)

# The crash/fault suite (cmd/geomigrate/chaos_integration_test.go) runs in
# test-integration at a few hundred files; `make chaos N=10000` runs it at
# scale against servers of its own and prints its figures. CHAOS_SEED
# replays the random choices of a run (logged as GEOMIGRATE_CHAOS_SEED).
N ?=
CHAOS_SEED ?=
CHAOS_KILLS ?=
CHAOS_FIGURES := $(INTEGRATION_ROOT)/bin/chaos-figures.txt

.PHONY: chaos
chaos: integration-tools ## the crash/fault suite at scale, e.g. make chaos N=10000: kill -9 (local, aws), S3 faults; prints files, kills, faults, retries, time, per-file overhead
	cd $(INTEGRATION_ROOT) && go build -o $(INTEGRATION_CLI) ./cmd/geomigrate
	@rm -f $(CHAOS_FIGURES)
	@cd $(INTEGRATION_ROOT) && GEOMIGRATE_CLI=$(INTEGRATION_CLI) AWS_EC2_METADATA_DISABLED=true \
		GEOMIGRATE_CHAOS_N=$(N) GEOMIGRATE_CHAOS_SEED=$(CHAOS_SEED) GEOMIGRATE_CHAOS_KILLS=$(CHAOS_KILLS) GEOMIGRATE_CHAOS_FIGURES=$(CHAOS_FIGURES) \
		scripts/with-integration-servers.sh go test -tags integration -count=1 -timeout 6h -run 'Chaos' -v ./cmd/geomigrate/ || status=$$?; \
		echo; echo "chaos figures:"; cat $(CHAOS_FIGURES) 2>/dev/null || true; exit $${status:-0}
