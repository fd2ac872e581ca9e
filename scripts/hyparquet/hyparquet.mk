# External GeoParquet judge (npm hyparquet); include from the Makefile:
#   include scripts/hyparquet/hyparquet.mk
HYPARQUET_DIR := scripts/hyparquet

.PHONY: hyparquet
hyparquet: ## install the hyparquet GeoParquet judge into scripts/hyparquet/node_modules (idempotent)
	@if [ -f $(HYPARQUET_DIR)/node_modules/.package-lock.json ] && \
	   [ $(HYPARQUET_DIR)/node_modules/.package-lock.json -nt $(HYPARQUET_DIR)/package.json ]; then \
	  echo "hyparquet judge already installed"; \
	else \
	  command -v npm >/dev/null || { echo "npm not found: install Node.js 20+"; exit 1; }; \
	  npm ci --prefix $(HYPARQUET_DIR) --no-audit --no-fund --loglevel=error && \
	  touch $(HYPARQUET_DIR)/node_modules/.package-lock.json; \
	fi
