# External GeoParquet judges (npm hyparquet, @duckdb/node-api, parquet-wasm:
# read.mjs, duckdb.mjs, parquet-wasm.mjs); include from the Makefile:
#   include scripts/hyparquet/hyparquet.mk
HYPARQUET_DIR := scripts/hyparquet

.PHONY: hyparquet
hyparquet: ## install the GeoParquet judges (hyparquet, DuckDB, parquet-wasm) into scripts/hyparquet/node_modules (idempotent)
	@if [ -f $(HYPARQUET_DIR)/node_modules/.package-lock.json ] && \
	   [ $(HYPARQUET_DIR)/node_modules/.package-lock.json -nt $(HYPARQUET_DIR)/package.json ]; then \
	  echo "hyparquet judge already installed"; \
	else \
	  command -v npm >/dev/null || { echo "npm not found: install Node.js 20+"; exit 1; }; \
	  npm ci --prefix $(HYPARQUET_DIR) --no-audit --no-fund --loglevel=error && \
	  touch $(HYPARQUET_DIR)/node_modules/.package-lock.json; \
	fi
