# Outside judges of the ASL definitions (npm asl-validator and @wmfs/statelint,
# pinned in package-lock.json), used by internal/asljudge and the statemachine
# and infra tests. Include from the Makefile after infra/infra.mk (Node 22):
#   include scripts/asl-judges/asl-judges.mk
ASL_JUDGES_DIR := scripts/asl-judges
ASL_JUDGES_STAMP := $(ASL_JUDGES_DIR)/node_modules/.installed

.PHONY: asl-judges
asl-judges: $(ASL_JUDGES_STAMP) ## install asl-validator 4.0.0 and @wmfs/statelint 1.30.0 into scripts/asl-judges/node_modules (idempotent)

$(ASL_JUDGES_STAMP): $(ASL_JUDGES_DIR)/package.json $(ASL_JUDGES_DIR)/package-lock.json $(INFRA_NODE_STAMP)
	cd $(ASL_JUDGES_DIR) && PATH="$(INFRA_NODE_BIN):$$PATH" npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# cfn-lint judges every synthesized template (infra/judges_test.go); it is a
# pip package, not installed here.
CFN_LINT_VERSION := 1.51.0

.PHONY: cfn-lint-check
cfn-lint-check:
	@command -v cfn-lint >/dev/null || { echo "cfn-lint not found: install it with  pip install cfn-lint==$(CFN_LINT_VERSION)"; exit 1; }
	@v="$$(cfn-lint --version 2>&1)"; case "$$v" in *$(CFN_LINT_VERSION)*) ;; *) echo "note: $$v; the tests were written against cfn-lint $(CFN_LINT_VERSION) (pip install cfn-lint==$(CFN_LINT_VERSION))";; esac
