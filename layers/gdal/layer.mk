# layers/gdal/layer.mk — the GDAL Lambda layer and what links it, built without Docker.
# Included by the root Makefile; paths are relative to the repository root.
#
#   make layer       build/gdal-layer-arm64.zip and build/gdal-layer-arm64/ (the unpacked /opt),
#                    build/convert/bootstrap and build/convert-container-arm64/geomigrate
#   make layer-deps  the host packages the build needs (cross compiler, qemu-user, cmake, ...)
#
# The sysroot and the GDAL build are cached outside the work tree
# (GEOMIGRATE_CACHE, default ~/.cache/geomigrate), so a fresh clone reuses them.

LAYER_ARCH ?= arm64
LAYER_APT_PACKAGES := gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static cmake ninja-build patchelf \
	zip dpkg-dev curl xz-utils debian-archive-keyring util-linux strace file

.PHONY: layer layer-deps layer-drivers

layer-deps: ## install the host packages the Docker-free layer build needs, when missing
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(LAYER_APT_PACKAGES)" >/dev/null

layer: layer-deps ## build the arm64 GDAL layer (Debian's GDAL source, exactly the manifest's drivers) and the convert bootstrap and container CLI against it, without Docker; prints sizes and drivers
	layers/gdal/build-layer.sh $(LAYER_ARCH)
	layers/gdal/build-convert.sh $(LAYER_ARCH)
	@layers/gdal/layer-report.py build/gdal-layer-$(LAYER_ARCH).zip layers/gdal/manifest.json build/convert/bootstrap
	@$(MAKE) --no-print-directory layer-drivers

layer-drivers: ## print the drivers and GDAL version of the built layer (share/gdal-layer/, written by the layer's own gdalinfo/ogrinfo)
	@cat build/gdal-layer-$(LAYER_ARCH)/share/gdal-layer/version.txt
	@sed -n 's/^  \(.*\) -[a-z].*/\1/p' build/gdal-layer-$(LAYER_ARCH)/share/gdal-layer/drivers.txt | LC_ALL=C sort -u > build/gdal-layer-$(LAYER_ARCH).drivers
	@echo "drivers ($$(wc -l < build/gdal-layer-$(LAYER_ARCH).drivers)): $$(paste -sd, build/gdal-layer-$(LAYER_ARCH).drivers | sed 's/,/, /g')"

# The convert container image, assembled without Docker (cmd/geomigrate-image, go-containerregistry)
# from build/gdal-layer-arm64 and build/convert-container-arm64/geomigrate.
IMAGE ?=
.PHONY: image image-push
image: ## write the convert container image as a tarball, build/convert-image-arm64.tar (after make layer)
	go run ./cmd/geomigrate-image save build/convert-image-arm64.tar

image-push: ## push the convert container image to IMAGE=<registry>/<repository>:<tag> (credentials: ~/.docker/config.json, e.g. credHelpers ecr-login); prints the digest reference for -c convertImage
	@[ -n "$(IMAGE)" ] || { echo "make image-push IMAGE=<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>" >&2; exit 2; }
	go run ./cmd/geomigrate-image push $(IMAGE)
