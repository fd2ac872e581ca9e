# Headless Chromium (the Debian package `chromium`) opens the HTML run
# report in cmd/geomigrate TestReportHTMLInChromium: the page must render
# with no console message. Included from the Makefile:
#   include scripts/chromium/chromium.mk
# `make test` installs it (when missing) and passes its path to the tests
# as GEOMIGRATE_CHROMIUM; with GEOMIGRATE_REQUIRE_JUDGES=1 (make test) a
# missing browser fails the test instead of skipping it.
CHROMIUM_PACKAGE := chromium
CHROMIUM_BIN ?= /usr/bin/chromium

.PHONY: chromium
chromium: ## install headless Chromium (Debian package chromium) for the HTML report test; skipped when present
	@if [ -x "$(CHROMIUM_BIN)" ]; then echo "$$($(CHROMIUM_BIN) --version 2>/dev/null) at $(CHROMIUM_BIN)"; else \
	  echo "installing $(CHROMIUM_PACKAGE)"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(CHROMIUM_PACKAGE) >/dev/null && \
	  $(CHROMIUM_BIN) --version 2>/dev/null; \
	fi

test: export GEOMIGRATE_CHROMIUM ?= $(CHROMIUM_BIN)
