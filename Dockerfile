# Builds both static binaries once and packages each in a distroless, non-root, shell-less
# image. The names match what `make images` (hack/images, for machines without Docker)
# produces and what the Makefile's IMG / ADAPTER_IMG default to:
#   docker build --target memory-adapter -t ghcr.io/agentmem/memory-adapter:dev .
#   docker build --target manager -t ghcr.io/agentmem/memory-adapter-operator:dev .
# The last stage (manager) is the default target, as in the kubebuilder layout.
#
# Multi-platform (make docker-buildx, PLATFORMS=linux/amd64,linux/arm64): the builder stage
# runs on the build machine's own platform and Go cross-compiles for each target, which is
# far faster than building under QEMU emulation; only the distroless stages are per target.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
# BuildKit sets these from the target platform (--platform). Declared without a default on
# purpose: a default takes precedence over BuildKit's value (docker/buildx#510), and the old
# TARGETARCH=amd64 built amd64 binaries into every arm64 image. The Dockerfile therefore needs
# BuildKit (docker's default builder since Engine 23.0, and buildx).
ARG TARGETOS
ARG TARGETARCH
# The adapter version the binary reports (memory-adapter version, /v1/evidence); the operator
# keys conformance runs on it, so release builds must set it (make docker-build and
# docker-buildx pass the Makefile's VERSION).
ARG VERSION=dev
WORKDIR /workspace
# Dependencies first so source edits do not invalidate the module download layer. The
# contract modules' go.mod files come too: go.mod replaces them with these directories.
COPY go.mod go.sum ./
COPY api/memory/go.mod api/memory/go.sum ./api/memory/
COPY conformance/go.mod conformance/go.sum ./conformance/
RUN go mod download
COPY . .
# CGO off: the SQLite driver is pure Go, and static binaries need no libc in the image.
# Both binaries get the same flags as hack/images (its goBuild; hack/images/dockerfile_test.go
# checks they agree) and hack/release.sh, main.version included: both binaries report it.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/memory-adapter ./cmd/memory-adapter \
 && CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/manager ./cmd

FROM gcr.io/distroless/static:nonroot AS memory-adapter
WORKDIR /
COPY --from=builder /out/memory-adapter /memory-adapter
USER 65532:65532
ENTRYPOINT ["/memory-adapter"]

FROM gcr.io/distroless/static:nonroot AS manager
WORKDIR /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
