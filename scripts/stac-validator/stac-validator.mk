# Outside judge of the STAC tree geomigrate writes (npm stac-node-validator,
# pinned in package-lock.json), run offline by internal/stac/stactest's
# NodeValidate against the schemas vendored in
# internal/stac/stactest/testdata/schemas. Include from the Makefile after
# infra/infra.mk (Node 22):
#   include scripts/stac-validator/stac-validator.mk
STAC_VALIDATOR_DIR := scripts/stac-validator
STAC_VALIDATOR_STAMP := $(STAC_VALIDATOR_DIR)/node_modules/.installed

.PHONY: stac-validator
stac-validator: $(STAC_VALIDATOR_STAMP) ## install stac-node-validator 2.0.0 into scripts/stac-validator/node_modules (idempotent)

$(STAC_VALIDATOR_STAMP): $(STAC_VALIDATOR_DIR)/package.json $(STAC_VALIDATOR_DIR)/package-lock.json $(INFRA_NODE_STAMP)
	cd $(STAC_VALIDATOR_DIR) && PATH="$(INFRA_NODE_BIN):$$PATH" npm ci --no-audit --no-fund --loglevel=error
	@touch $@
