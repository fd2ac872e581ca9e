# infra/infra.mk — CDK, GDAL layer and SAM targets. Included by the root Makefile
# (`include infra/infra.mk`); every path is relative to the repository root.
# Tools go into $(TOOLS) (default .tools/, gitignored), never globally.

TOOLS ?= .tools
INFRA_NODE_VERSION ?= 22.23.5
INFRA_CDK_VERSION ?= 2.1148.1
INFRA_UNAME_M := $(shell uname -m)
INFRA_NODE_PKG := node-linux-$(if $(filter aarch64 arm64,$(INFRA_UNAME_M)),arm64,x64)
INFRA_NODE_BIN := $(abspath $(TOOLS))/node22/node_modules/$(INFRA_NODE_PKG)/bin
INFRA_NODE_STAMP := $(TOOLS)/node22/.installed-$(INFRA_NODE_PKG)-$(INFRA_NODE_VERSION)
INFRA_CDK_STAMP := $(TOOLS)/cdk/.installed-$(INFRA_CDK_VERSION)
CDK := $(abspath $(TOOLS))/cdk/node_modules/.bin/cdk
STACK ?= Geomigrate
LAYER_ARCH ?= arm64
# Node 22 first on PATH (CDK CLI and jsii warn on Node 20); no telemetry, no notices (offline).
INFRA_ENV := PATH="$(INFRA_NODE_BIN):$$PATH" CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1
CDK_FLAGS ?= --no-notices
CDK_CONTEXT ?=

.PHONY: tools-infra synth deploy diff destroy sam-invoke test-infra rehearse

$(INFRA_NODE_STAMP):
	@mkdir -p $(TOOLS)/node22
	npm install --prefix $(TOOLS)/node22 --no-audit --no-fund --no-save --loglevel=error $(INFRA_NODE_PKG)@$(INFRA_NODE_VERSION)
	@touch $@

$(INFRA_CDK_STAMP): $(INFRA_NODE_STAMP)
	@mkdir -p $(TOOLS)/cdk
	$(INFRA_ENV) npm install --prefix $(TOOLS)/cdk --no-audit --no-fund --loglevel=error aws-cdk@$(INFRA_CDK_VERSION)
	@touch $@

tools-infra: $(INFRA_NODE_STAMP) $(INFRA_CDK_STAMP) ## install Node 22 (npm node-linux-*@22) and the AWS CDK CLI into .tools/ (idempotent)

synth: tools-infra ## synthesize cdk.out/ offline, no AWS credentials; stand-ins for missing build/ outputs (review only)
	$(INFRA_ENV) $(CDK) synth $(CDK_FLAGS) --quiet -c placeholderAssets=true $(CDK_CONTEXT)
	@echo "templates: cdk.out/$(STACK).template.json"

deploy: tools-infra ## deploy the stack (needs `make build layer` or -c gdalLayerArn=..., AWS credentials, a bootstrapped account)
	$(INFRA_ENV) $(CDK) deploy $(CDK_FLAGS) --require-approval broadening $(CDK_CONTEXT) $(STACK)

diff: tools-infra ## show what deploy would change in the account (needs AWS credentials and the build outputs)
	$(INFRA_ENV) $(CDK) diff $(CDK_FLAGS) $(CDK_CONTEXT) $(STACK)

destroy: tools-infra ## delete the stack (buckets, table and queues are retained; see docs/deploy.md)
	$(INFRA_ENV) $(CDK) destroy $(CDK_FLAGS) -c placeholderAssets=true $(CDK_CONTEXT) $(STACK)


# sam-invoke: the names SAM should give the functions for Ref/GetAtt-valued variables (SAM itself
# passes logical IDs such as StateTable9728C7E5). First to last: SAM_SET (VAR=value), SAM_STATE_TABLE /
# SAM_DEST_BUCKET / SAM_NAMES (ConstructID=physical-name), SAM_STACK_RESOURCES (`aws cloudformation
# describe-stack-resources --stack-name Geomigrate > f.json` of a deployed stack), names fixed by context
# (sourceBucketName, destBucketName, ...), else "<stack>-<construct-id>" (printed). See docs/local-testing.md.
SAM_ENV_FILE ?= cdk.out/sam-env.json
SAM_REGION ?= $(or $(AWS_REGION),$(AWS_DEFAULT_REGION),us-east-1)
SAM_ACCOUNT ?= 123456789012
SAM_NAMES ?=
SAM_SET ?=
SAM_STATE_TABLE ?=
SAM_DEST_BUCKET ?=
SAM_STACK_RESOURCES ?=
SAM_ENV_FLAGS = -template $(CURDIR)/cdk.out/$(STACK).template.json -function $(FN) -event $(abspath $(EVENT)) \
	-env-out $(abspath $(SAM_ENV_FILE)) -region $(SAM_REGION) -account $(SAM_ACCOUNT) -stack-name $(STACK) \
	$(if $(SAM_STACK_RESOURCES),-resources $(abspath $(SAM_STACK_RESOURCES))) \
	$(if $(SAM_STATE_TABLE),-name StateTable=$(SAM_STATE_TABLE)) $(if $(SAM_DEST_BUCKET),-name DestinationBucket=$(SAM_DEST_BUCKET)) \
	$(if $(SAM_NAMES),-name '$(SAM_NAMES)') $(if $(SAM_SET),-set '$(SAM_SET)')

# Order matters: the cheap checks (arguments, sam, Docker) come before the synth they would waste.
sam-invoke: ## run one function locally with SAM CLI + Docker: make sam-invoke FN=convert EVENT=events/<file>.json [SAM_STATE_TABLE=... SAM_DEST_BUCKET=...]
	@test -n "$(FN)" || { echo "usage: make sam-invoke FN=hashcheck|convert|classify|promote EVENT=events/<file>.json"; exit 2; }
	@test -n "$(EVENT)" || { echo "usage: make sam-invoke FN=$(FN) EVENT=events/<file>.json"; exit 2; }
	@test -f "$(EVENT)" || { echo "sam-invoke: event file $(EVENT) not found"; exit 2; }
	@command -v sam >/dev/null || { echo "sam-invoke needs the AWS SAM CLI (and Docker); see docs/local-testing.md for the Docker-free paths"; exit 2; }
	@docker info >/dev/null 2>&1 || { echo "sam-invoke needs a running Docker engine; see docs/local-testing.md for the Docker-free paths (local executor, aws-lambda-rie)"; exit 2; }
	$(MAKE) --no-print-directory synth
	@cmd="$$(cd infra && go run ./cmd/sam-env $(SAM_ENV_FLAGS))" || exit 1; echo "$$cmd"; eval "$$cmd"

test-infra: tools-infra asl-judges cfn-lint-check ## run the infra assertion tests (awscdk assertions, cdk-nag AwsSolutions, ASL judges and cfn-lint on every synthesized variant, layer manifest checks)
	cd infra && $(INFRA_ENV) GEOMIGRATE_REQUIRE_JUDGES=1 ../scripts/failures-last.sh go test -count=1 -timeout 15m ./...

rehearse: tools-infra ## deploy rehearsal, offline: the synthesized stack created in moto's CloudFormation, then what exists is checked (GEOMIGRATE_MOTO_ENDPOINT, or a moto_server started and stopped here)
	$(INFRA_ENV) infra/rehearse.sh
