# functions/functions.mk — the Lambda bootstraps and their emulator tests.
# Included by the root Makefile (`-include functions/functions.mk`); paths are
# relative to the repository root.
#
#   build/<name>/bootstrap         linux/arm64, provided.al2023 (what CDK deploys)
#   build/native/<name>/bootstrap  host arch, for aws-lambda-rie and test/sfn
#
# convert links GDAL through cgo. `make build` compiles the four pure-Go
# functions for linux/arm64 with CGO_ENABLED=0; the arm64 convert is
# cross-compiled against the layer's own /opt by `make layer`
# (layers/gdal/build-convert.sh), so build/convert/bootstrap is left alone
# here and a note is printed.

FUNCTIONS := hashcheck convert classify promote executionfailed
FUNCTIONS_PURE := hashcheck classify promote executionfailed
FUNCTIONS_TOOLS := $(abspath $(or $(TOOLS),.tools))
FUNCTIONS_GOFLAGS := -tags lambda.norpc -trimpath -ldflags "-s -w"
FUNCTIONS_HOST_ARCH := $(shell go env GOARCH)
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := $(FUNCTIONS_TOOLS)/bin/aws-lambda-rie
FUNCTIONS_TEST_PKGS ?= ./functions/... ./events/... ./internal/awsapp/... ./test/sfn/...

.PHONY: build build-native tools-rie test-sfn-tools test-lambda

# `make test` runs every integration-tagged test through test-integration;
# the emulator and cross-check tests need rie and aws-local-stepfunctions too.
integration-tools: tools-rie test-sfn-tools

build: ## build build/<name>/bootstrap for linux/arm64 (provided.al2023, lambda.norpc, trimmed); convert: see functions/functions.mk
	@for f in $(FUNCTIONS_PURE); do \
	  echo "build/$$f/bootstrap (linux/arm64, CGO_ENABLED=0)"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build $(FUNCTIONS_GOFLAGS) -o build/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	@echo "build/convert/bootstrap: cgo against the layer's GDAL, built by make layer (layers/gdal/build-convert.sh)"

build-native: ## build host-arch bootstraps into build/native/<name>/bootstrap (convert against the system GDAL) for the emulator tests
	@for f in $(FUNCTIONS); do \
	  cgo=0; [ $$f = convert ] && cgo=1; \
	  echo "build/native/$$f/bootstrap ($(FUNCTIONS_HOST_ARCH), CGO_ENABLED=$$cgo)"; \
	  CGO_ENABLED=$$cgo go build $(FUNCTIONS_GOFLAGS) -o build/native/$$f/bootstrap ./functions/$$f || exit 1; \
	done

$(RIE):
	@mkdir -p $(FUNCTIONS_TOOLS)/bin
	CGO_ENABLED=0 GOBIN=$(FUNCTIONS_TOOLS)/bin go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

tools-rie: $(RIE) ## install aws-lambda-rie into .tools/bin (skipped when present)

test-sfn-tools: $(INFRA_NODE_STAMP) ## install Node 22 (infra) and test/sfn's aws-local-stepfunctions@3.0.0 into test/sfn/node_modules
	@if [ ! -d test/sfn/node_modules/aws-local-stepfunctions ]; then \
	  cd test/sfn && PATH="$(INFRA_NODE_BIN):$$PATH" npm install --no-audit --no-fund --loglevel=error; \
	fi

test-lambda: tools-rie test-sfn-tools integration-tools build-native ## run the bootstraps under aws-lambda-rie and the aws-local-stepfunctions cross-check, with versitygw + dynalite up
	scripts/with-integration-servers.sh scripts/failures-last.sh go test -tags integration -count=1 -timeout 15m $(FUNCTIONS_TEST_PKGS)
