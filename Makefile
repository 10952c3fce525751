# The memory adapter operator. `make ci` is the one test command (see README.md): it builds or
# reuses every tool it needs, so it works on a fresh machine with only Go installed.

# Tools are installed into ./bin, named with their version so a version bump reinstalls them.
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
CRD_REF_DOCS_VERSION ?= v0.3.0
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
LOGCHECK_VERSION ?= v0.11.0
LOGCHECK ?= $(LOCALBIN)/logcheck-$(LOGCHECK_VERSION)
# kube-api-linter is built by hack/tools/kal, a module of its own; its version is the one
# hack/tools/go.mod requires, read from there so that the two cannot disagree.
KUBE_API_LINTER_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kube-api-linter" { print $$2 }' hack/tools/go.mod)
KAL ?= $(LOCALBIN)/kal-$(KUBE_API_LINTER_VERSION)
# The ginkgo CLI runs the end-to-end suite on parallel processes (go test cannot); its version
# is the library's in go.mod, so the CLI and the suite it drives always agree.
GINKGO_VERSION := $(shell awk '$$1 == "github.com/onsi/ginkgo/v2" { print $$2 }' go.mod)
GINKGO ?= $(LOCALBIN)/ginkgo-$(GINKGO_VERSION)
# cyclonedx-gomod writes the release's SBOMs (make release).
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
CYCLONEDX_GOMOD ?= $(LOCALBIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)

# The one version of a build (docs/releasing.md): the binaries' main.version (make build, make
# images, the Dockerfile's VERSION, make release) and the images' tag (IMG, ADAPTER_IMG below).
# dev is a development build, the tag the local cluster and the end-to-end suite use; a release
# is cut with VERSION=vX.Y.Z, which make release checks against CHANGELOG.md.
VERSION ?= dev

# Recipes run in bash with pipefail so a failing command in a pipe fails the target.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@# Colour only on a terminal: a log or a pipe gets plain text.
	@if [ -t 1 ]; then c=$$'\033[36m' b=$$'\033[1m' r=$$'\033[0m'; else c= b= r=; fi; \
	awk -v c="$$c" -v b="$$b" -v r="$$r" 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make %s<target>%s\n", c, r} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %s%-15s%s %s\n", c, $$1, r, $$2 } /^##@/ { printf "\n%s%s%s\n", b, substr($$0, 5), r } ' $(MAKEFILE_LIST)

##@ Development

# The contract and the conformance suite are Go modules of their own (no Kubernetes module in
# their graph, for adapter authors); `./...` stops at their boundary, so targets name them.
CONTRACT_MODULES := api/memory conformance
CONTRACT_PKGS = $(shell go list github.com/agentmem/memory-adapter-operator/api/memory/... github.com/agentmem/memory-adapter-operator/conformance/...)

.PHONY: manifests
manifests: controller-gen caseids ## Generate ClusterRole, CustomResourceDefinition and webhook objects.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

# The Helm chart renders the CRD, the manager's roles, the webhook configuration, the admission
# policies and the monitoring objects from copies of their config/ files (helm reads only the
# chart's directory); test/chart fails when a copy is stale.
.PHONY: chart-files
chart-files: ## Copy the config/ files the Helm chart renders verbatim into charts/memory-adapter-operator/files.
	charts/sync-files.sh

.PHONY: caseids
caseids: ## Generate the API's conformance case ids (type, admission enum, constants) from the conformance registry.
	go run ./hack/gen-caseids

.PHONY: generate
generate: controller-gen crd-ref-docs caseids ## Generate DeepCopy methods for the API types and the API reference (docs/reference/api.md).
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."
	$(CRD_REF_DOCS) --log-level=ERROR --source-path=api/v1alpha1 --config=hack/crd-ref-docs.yaml --renderer=markdown --output-path=docs/reference/api.md

.PHONY: fmt
fmt: ## Run gofmt over the module.
	gofmt -w $$(git ls-files --cached --others --exclude-standard '*.go')

.PHONY: vet
vet: ## Run go vet over the operator's module and the contract modules (api/memory, conformance).
	go vet ./... $(CONTRACT_PKGS)
	go vet -tags scalebench ./adapters/...
	go vet -tags scale ./internal/controller/...

.PHONY: test
test: manifests generate ## Run vet, unit tests, envtest tests (race detector on) and every fuzz target briefly.
	hack/test.sh

# kube-api-linter gets -test=false: the API's tests hold no API types, and with them loaded
# every finding would print twice (once per package variant).
.PHONY: lint
lint: golangci-lint kube-api-linter logcheck ## Run golangci-lint, kube-api-linter (API types), logcheck (log calls), then check that no import runs back up the floors (hack/layers).
	. hack/lib/heartbeat.sh; . hack/estimates.sh; heartbeat_run -v linting -e "$$EST_LINT" golangci-lint \
	  $(GOLANGCI_LINT) run --allow-parallel-runners ./...
	for m in $(CONTRACT_MODULES) examples/go-author hack/tools; do (cd $$m && $(GOLANGCI_LINT) run --allow-parallel-runners ./...) || exit 1; done
	. hack/lib/heartbeat.sh; . hack/estimates.sh; heartbeat_run -v linting -e "$$EST_LINT_KAL" kube-api-linter \
	  $(KAL) -config hack/kube-api-linter.yaml -test=false ./api/v1alpha1/...
	. hack/lib/heartbeat.sh; . hack/estimates.sh; heartbeat_run -v linting -e "$$EST_LINT_LOGCHECK" logcheck \
	  $(LOGCHECK) -config=hack/logcheck.conf ./...
	go run ./hack/layers

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: verify
verify: controller-gen crd-ref-docs ## Check that generated files are current, Go sources are gofmt-clean, every time estimate comes from hack/estimates.sh, and no tracked file over 1 MiB is missing from hack/large-files.allow.
	CONTROLLER_GEN="$(CONTROLLER_GEN)" hack/verify-generated.sh
	hack/check-estimates.sh
	hack/check-large-files.sh

.PHONY: ci
ci: ## THE test command (README.md): verify; lint and test beside the single-node end-to-end suite; then the three-node stage (hack/ci.sh).
	hack/ci.sh

##@ Build

.PHONY: build
build: manifests generate ## Build both binaries: the manager (bin/manager) and the adapter server and conformance tool (bin/memory-adapter).
	go build -ldflags "-X main.version=$(VERSION)" -o $(LOCALBIN)/manager ./cmd/main.go
	go build -ldflags "-X main.version=$(VERSION)" -o $(LOCALBIN)/memory-adapter ./cmd/memory-adapter

# The Dockerfile's two targets, for real registries (no engine runs on the project's own
# machines; there `make images` builds the same images without one).
CONTAINER_TOOL ?= docker

.PHONY: docker-build
docker-build: ## Build the manager (IMG) and adapter (ADAPTER_IMG) images with CONTAINER_TOOL (default docker).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --target manager -t $(IMG) .
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --target memory-adapter -t $(ADAPTER_IMG) .

.PHONY: docker-push
docker-push: ## Push IMG and ADAPTER_IMG with CONTAINER_TOOL.
	$(CONTAINER_TOOL) push $(IMG)
	$(CONTAINER_TOOL) push $(ADAPTER_IMG)

# Multi-platform images, built and pushed by buildx (kubebuilder's docker-buildx): the
# Dockerfile's builder stage runs on this machine's platform and cross-compiles for each of
# PLATFORMS from BuildKit's TARGETOS/TARGETARCH. The builder is made once and reused by name,
# without `buildx use`, so the user's default builder stays theirs. Each image's pushed digest
# is written to bin/buildx-<target>.json (containerimage.digest), for pinning a release's
# installers (docs/releasing.md).
PLATFORMS ?= linux/amd64,linux/arm64
BUILDX_BUILDER ?= memory-adapter-operator-builder

.PHONY: docker-buildx
docker-buildx: | $(LOCALBIN) ## Build and push IMG and ADAPTER_IMG for PLATFORMS (default linux/amd64,linux/arm64) with docker buildx.
	$(CONTAINER_TOOL) buildx inspect $(BUILDX_BUILDER) >/dev/null 2>&1 || $(CONTAINER_TOOL) buildx create --name $(BUILDX_BUILDER)
	$(CONTAINER_TOOL) buildx build --builder $(BUILDX_BUILDER) --push --platform=$(PLATFORMS) --build-arg VERSION=$(VERSION) \
	  --target manager --tag $(IMG) --metadata-file $(LOCALBIN)/buildx-manager.json .
	$(CONTAINER_TOOL) buildx build --builder $(BUILDX_BUILDER) --push --platform=$(PLATFORMS) --build-arg VERSION=$(VERSION) \
	  --target memory-adapter --tag $(ADAPTER_IMG) --metadata-file $(LOCALBIN)/buildx-memory-adapter.json .

.PHONY: run
# A manager outside the cluster has no webhook certificate and no POD_NAMESPACE: the webhook is
# left out (bound pods then fail admission if the webhook configuration is installed) and the
# token key lives in RUN_TOKEN_KEY_SECRET.
RUN_TOKEN_KEY_SECRET ?= default/memory-adapter-operator-token-key
run: manifests generate ## Run the manager against the cluster in the current kubeconfig (no webhook; token key in RUN_TOKEN_KEY_SECRET).
	ENABLE_WEBHOOKS=false go run ./cmd/main.go --token-key-secret=$(RUN_TOKEN_KEY_SECRET)

##@ Deployment (kustomize through kubectl; cluster = current KUBECONFIG)

# Your kubectl on PATH when it is within one minor of the tested Kubernetes version, else one
# hack/k8s-binaries.sh builds from the Go module proxy (cached by version; not a download).
# hack/kubectl.sh says which on stderr. Set KUBECTL=/path/to/kubectl to choose yourself.
# Evaluated only inside recipes that use it.
KUBECTL ?= "$$(hack/kubectl.sh)"
# Server-side apply: the CRD is too large for client-side apply's last-applied annotation to
# stay comfortable, and the field manager makes re-deploys converge.
APPLY = apply --server-side --force-conflicts --field-manager=memory-adapter-operator
ignore-not-found ?= true

.PHONY: install
install: manifests ## Install the CRDs into the cluster in KUBECONFIG.
	kubectl=$(KUBECTL); $$kubectl kustomize config/crd | $$kubectl $(APPLY) -f -

.PHONY: uninstall
uninstall: manifests ## Remove the CRDs (and with them every MemoryAdapter) from the cluster in KUBECONFIG.
	kubectl=$(KUBECTL); $$kubectl kustomize config/crd | $$kubectl delete --ignore-not-found=$(ignore-not-found) -f -

# make deploy regenerates the CRDs and RBAC first, so an edited API type is what gets installed.
# MANIFESTS_CHECKED=1 skips that: hack/ci.sh sets it once make verify has proven them current,
# because its e2e suite runs make deploy while envtest suites beside it read the CRD files.
DEPLOY_MANIFESTS = $(if $(MANIFESTS_CHECKED),,manifests)

# INSTALL_NAMESPACE and INSTALL_PREFIX rename the installation (config/default's namespace and
# namePrefix; docs/operator.md#renaming-the-installation): make deploy INSTALL_NAMESPACE=agent-memory INSTALL_PREFIX=mao-.
# undeploy must be given the same.
# MONITORING_NAMESPACE adds config/monitoring: that namespace may scrape every adapter's metrics
# port, and the Grafana dashboard ships as a ConfigMap (docs/operator.md#scraping-the-adapters).
RENDER_ENV = ADAPTER_IMG="$(ADAPTER_IMG)" INSTALL_NAMESPACE="$(INSTALL_NAMESPACE)" INSTALL_PREFIX="$(INSTALL_PREFIX)" \
	MONITORING_NAMESPACE="$(MONITORING_NAMESPACE)"

.PHONY: deploy
deploy: $(DEPLOY_MANIFESTS) ## Install CRDs, RBAC and the manager (image IMG, adapters ADAPTER_IMG) into the cluster in KUBECONFIG; checked-in files stay as they are.
	kubectl=$(KUBECTL); MAO_KUBECTL="$$kubectl" $(RENDER_ENV) hack/render-install.sh "$(IMG)" | $$kubectl $(APPLY) -f -

.PHONY: undeploy
undeploy: ## Remove everything deploy installed, CRDs included, from the cluster in KUBECONFIG.
	kubectl=$(KUBECTL); MAO_KUBECTL="$$kubectl" $(RENDER_ENV) hack/render-install.sh "$(IMG)" | $$kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: build-installer
build-installer: manifests ## Render CRDs, RBAC and the manager (image IMG, adapters ADAPTER_IMG) into dist/install.yaml, as deploy applies them.
	mkdir -p dist
	kubectl=$(KUBECTL); MAO_KUBECTL="$$kubectl" $(RENDER_ENV) hack/render-install.sh "$(IMG)" >dist/install.yaml.tmp
	mv dist/install.yaml.tmp dist/install.yaml
	@echo "wrote dist/install.yaml (manager image $(IMG), adapter image $(ADAPTER_IMG))"

##@ Release

# hack/release.sh checks VERSION (semver, a CHANGELOG.md section) before it builds anything;
# IMG and ADAPTER_IMG follow VERSION unless given, for example as NAME@sha256:... once pushed.
.PHONY: release
release: cyclonedx-gomod ## Write a release into dist/ for VERSION=vX.Y.Z: installers, CRDs, Helm chart, linux/amd64 and arm64 binaries, SBOMs, checksums, notes (docs/releasing.md).
	kubectl=$(KUBECTL); MAO_KUBECTL="$$kubectl" VERSION="$(VERSION)" IMG="$(IMG)" ADAPTER_IMG="$(ADAPTER_IMG)" \
	  CYCLONEDX_GOMOD="$(CYCLONEDX_GOMOD)" hack/release.sh

##@ Dependencies

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin.
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION),EST_TOOL_INSTALL)

.PHONY: crd-ref-docs
crd-ref-docs: $(CRD_REF_DOCS) ## Install crd-ref-docs (the API reference generator) into ./bin.
$(CRD_REF_DOCS): | $(LOCALBIN)
	$(call go-install-tool,$(CRD_REF_DOCS),github.com/elastic/crd-ref-docs,$(CRD_REF_DOCS_VERSION),EST_TOOL_INSTALL)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into ./bin.
$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION),EST_TOOL_GOLANGCI)

.PHONY: ginkgo
ginkgo: $(GINKGO) ## Install the ginkgo CLI (the end-to-end suite's parallel runner) into ./bin.
$(GINKGO): | $(LOCALBIN)
	$(call go-install-tool,$(GINKGO),github.com/onsi/ginkgo/v2/ginkgo,$(GINKGO_VERSION),EST_TOOL_INSTALL)

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Install cyclonedx-gomod (the release's SBOMs) into ./bin.
$(CYCLONEDX_GOMOD): | $(LOCALBIN)
	$(call go-install-tool,$(CYCLONEDX_GOMOD),github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod,$(CYCLONEDX_GOMOD_VERSION),EST_TOOL_INSTALL)

.PHONY: logcheck
logcheck: $(LOGCHECK) ## Install logcheck (structured logging checks) into ./bin.
$(LOGCHECK): | $(LOCALBIN)
	$(call go-install-tool,$(LOGCHECK),sigs.k8s.io/logtools/logcheck,$(LOGCHECK_VERSION),EST_TOOL_INSTALL)

# kube-api-linter is a golangci-lint module plugin, and `golangci-lint custom` clones
# golangci-lint from GitHub; hack/tools/kal runs the same analyzers without it, built from the
# Go module proxy. The driver's source is a prerequisite, so an edit to it rebuilds the tool,
# and its tests (nothing else runs that module's) pass before the build is used.
.PHONY: kube-api-linter
kube-api-linter: $(KAL) ## Build kube-api-linter (hack/tools/kal, API conventions) into ./bin.
$(KAL): hack/tools/go.mod hack/tools/go.sum $(wildcard hack/tools/kal/*.go) | $(LOCALBIN)
	@set -e; \
	rm -f "$@"; \
	. hack/lib/heartbeat.sh; . hack/estimates.sh; \
	heartbeat_run -v building -e "$$EST_TOOL_INSTALL; compiled from source" \
	  "sigs.k8s.io/kube-api-linter@$(KUBE_API_LINTER_VERSION)" \
	  bash -c 'go -C hack/tools test ./kal && go -C hack/tools build -o "$$1" ./kal' kal "$@"; \
	ln -sf "$$(basename "$@")" "$(LOCALBIN)/kal"

# go-install-tool installs package $2 at version $3 into ./bin as $1 (the versioned name) and
# links the plain name to it, so scripts and editors find the tool either way. The install
# compiles the tool from source, minutes on a cold 2-core machine, so it runs with a heartbeat
# that says so up front ($4: the name of its expected time in hack/estimates.sh).
define go-install-tool
@set -e; \
package=$(2)@$(3); \
rm -f "$(1)"; \
. hack/lib/heartbeat.sh; . hack/estimates.sh; \
heartbeat_run -v installing -e "$$$(4); compiled from source" "$${package}" \
  env GOBIN="$(LOCALBIN)" go install "$${package}"; \
mv "$(LOCALBIN)/$$(basename "$(2)")" "$(1)"; \
ln -sf "$$(basename "$(1)")" "$(LOCALBIN)/$$(basename "$(2)")"
endef

##@ Local cluster and end-to-end tests (cluster engineer's block; see docs/local-cluster.md)

# Image names: the Dockerfile's targets and hack/images produce the same ones.
IMG ?= ghcr.io/agentmem/memory-adapter-operator:$(VERSION)
ADAPTER_IMG ?= ghcr.io/agentmem/memory-adapter:$(VERSION)
# PY_AGENT_IMG: the Python agent image (no Dockerfile target; make images only): Debian's
# python3 and clients/python's package, run as `python3 -m memory_adapter_client.agent`; its
# root is assembled by hack/python-agent-rootfs.sh and packed by hack/images' %/DIR form.
PY_AGENT_IMG ?= ghcr.io/agentmem/python-agent:dev
MAO_CLUSTER_DIR ?= /var/tmp/mao-cluster
export MAO_CLUSTER_DIR

# NODES: 1 (the default: make demo, make ci's main stage) to 3; see docs/local-cluster.md.
NODES ?= $(or $(MAO_NODES),1)

.PHONY: cluster-up
cluster-up: ## Start (or reuse) the local cluster of NODES nodes (default 1; CoreDNS, default StorageClass local-path; versions in hack/versions.env); prints export KUBECONFIG=...
	MAO_NODES=$(NODES) hack/cluster-up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove every process, mount, rule and bridge it made.
	hack/cluster-down.sh

.PHONY: images
images: ## Build the adapter (ADAPTER_IMG), manager (IMG) and Python agent (PY_AGENT_IMG) images without Docker; load them into the local cluster when it runs.
	hack/python-agent-rootfs.sh "$(MAO_CLUSTER_DIR)/images/python-agent-rootfs"
	sock="$(MAO_CLUSTER_DIR)/containerd/containerd.sock"; load=""; \
	if ctr -a "$$sock" version >/dev/null 2>&1; then load="-load $$($(MAO_CLUSTER_DIR)/tools/cluster sockets)"; fi; \
	go run ./hack/images -out "$(MAO_CLUSTER_DIR)/images" -version "$(VERSION)" $$load \
	  "$(ADAPTER_IMG)=./cmd/memory-adapter:/memory-adapter" "$(IMG)=./cmd:/manager" \
	  "$(PY_AGENT_IMG)=%$(MAO_CLUSTER_DIR)/images/python-agent-rootfs:/usr/bin/python3"

.PHONY: demo
demo: ## The tour (README "Try it"): cluster, images, operator, the SQLite sample to Available, an item through its Service, a real PostgreSQL outage and recovery; leaves the cluster running.
	hack/demo.sh up

.PHONY: demo-down
demo-down: ## Remove what make demo made: its namespace, its PostgreSQL server, the operator, and the cluster; then print the caches it keeps (about 1-2 GB) and how to remove them.
	hack/demo.sh down

# The suite runs on E2E_PROCS Ginkgo processes: most specs wait on the cluster (a conformance
# run, an outage held for minutes), so three share two cores, lint and the tests of make ci
# beside them; the specs that disrupt the manager or a node are Serial and run alone at the
# end (docs/development.md has the measurements at two, three and four).
E2E_PROCS ?= 3
# A step that runs past 45s reports what it is waiting on every 30s, so no wait is silent.
# Ginkgo colours its report unless told not to; a log or a pipe gets plain text. Each stage
# also leaves a JSON report in bin/ (every spec's start, end and Ginkgo process), to see where
# a run's time went.
# A failed stage ends with its failure digest (each failed spec's message, written by the
# suite to bin/e2e-<stage>-failures.txt), after Ginkgo's summary, which names only lines.
# $(call e2e_run,STAGE,GINKGO ARGS)
e2e_run = rm -f $(LOCALBIN)/e2e-$(1)-failures.txt; [ -t 1 ] || export GINKGO_NO_COLOR=TRUE; \
	export MAO_E2E_FAILURES=$(LOCALBIN)/e2e-$(1)-failures.txt; \
	$(GINKGO) run --tags=e2e --timeout=90m -v --poll-progress-after=45s --poll-progress-interval=30s --output-dir=$(LOCALBIN) --json-report=e2e-$(1).json $(2) ./test/e2e \
	|| { s=$$?; echo; cat $(LOCALBIN)/e2e-$(1)-failures.txt 2>/dev/null || echo "(no failure digest: the suite did not reach its report)"; exit $$s; }

.PHONY: test-e2e
test-e2e: ginkgo ## End-to-end suite on the single-node local cluster, on E2E_PROCS parallel processes: brings the cluster up (or reuses it), tears down what it started unless KEEP_CLUSTER=1.
	export MAO_NODES=1; $(call e2e_run,single-node,--procs=$(E2E_PROCS) --label-filter='!multinode && !upgrade')

.PHONY: test-e2e-upgrade
test-e2e-upgrade: ginkgo ## Opt-in, outside make ci: the upgrade from the previous build (built in a git worktree) to this one on a one-node local cluster, with SQLite, PostgreSQL and Redis adapters and an agent (test/e2e/upgrade_test.go).
	export MAO_NODES=1 MAO_E2E_INSTALL=none; $(call e2e_run,upgrade,--label-filter='upgrade')

.PHONY: test-e2e-multinode
test-e2e-multinode: ginkgo ## The multi-node stage: the specs labelled multinode on a three-node local cluster (a running one-node cluster must be stopped first), the operator installed with the Helm chart. They stop and cut nodes, so they run one at a time.
	export MAO_NODES=3 MAO_E2E_INSTALL=helm; $(call e2e_run,multinode,--label-filter='multinode')
