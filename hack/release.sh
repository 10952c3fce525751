#!/usr/bin/env bash
# Writes one release's artifacts into dist/ (what `make release VERSION=vX.Y.Z` runs; what a
# maintainer then publishes is in docs/releasing.md):
#
#   install.yaml              CRDs, RBAC, policies and the manager, webhook certificate issued
#                             by the manager (config/default)
#   install-certmanager.yaml  the same with cert-manager issuing it (config/certmanager)
#   crds.yaml                 the CRDs alone (config/crd)
#   memory-adapter-operator-X.Y.Z.tgz   the Helm chart (charts/memory-adapter-operator)
#   manager-linux-{amd64,arm64}, memory-adapter-linux-{amd64,arm64}   static binaries
#   sbom-<binary>-linux-<arch>.cdx.json                               CycloneDX, per binary
#   release-notes.md          the version's section of CHANGELOG.md
#   checksums.txt             sha256 of every file above
#
#   VERSION=vX.Y.Z [IMG=...] [ADAPTER_IMG=...] hack/release.sh
#   hack/release.sh --notes vX.Y.Z          print the version's CHANGELOG.md section
#   hack/release.sh --go-build vX.Y.Z ARCH OUT PKG
#                                           print the environment and go command a release
#                                           binary is built with, one word a line (the flag
#                                           parity test holds them to hack/images's)
#
# IMG and ADAPTER_IMG default to ghcr.io/agentmem/{memory-adapter-operator,memory-adapter}:VERSION;
# either may be NAME@sha256:DIGEST instead, to pin the installers to pushed images.
# MAO_KUBECTL is the kubectl to render with (default: hack/kubectl.sh's choice),
# CYCLONEDX_GOMOD the SBOM generator (the Makefile builds it into bin/), HELM the helm binary
# (default: hack/helm.sh's build). RELEASE_ALLOW_DIRTY=1 releases from a checkout with
# uncommitted changes to tracked files, which is otherwise refused: the artifacts would not be
# the tagged sources.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
  printf 'release: %s\n' "$*" >&2
  exit 2
}
log() { printf '[release] %s\n' "$*" >&2; }

# Semantic Versioning 2.0.0 with a leading v, pre-release allowed. No build metadata (+...):
# the version is also the images' tag, and a registry tag cannot hold '+'.
semver_re='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'

check_version() {
  local v=$1
  [ -n "$v" ] || die "VERSION is not set: make release VERSION=vMAJOR.MINOR.PATCH (docs/releasing.md)"
  [[ $v =~ $semver_re ]] || die "VERSION=$v is not vMAJOR.MINOR.PATCH[-PRERELEASE] (for example v0.1.0 or v0.2.0-rc.1; no build metadata, since it is also the images' tag)"
}

# notes prints the body of CHANGELOG.md's "## vX.Y.Z" or "## [vX.Y.Z]" section (a date may
# follow), without the blank lines around it, and fails when there is no such section or it is
# empty: a release without notes is a release nobody can read.
notes() {
  local v=$1 body
  [ -f CHANGELOG.md ] || die "CHANGELOG.md is missing"
  body=$(awk -v v="$v" '
    /^## / {
      if (found) exit
      h = $2; gsub(/^\[|\]$/, "", h)
      if (h == v) { found = 1; next }
    }
    found && /^\[[^]]+\]: / { next }   # link definitions at the end of the file
    found { print }
    END { if (!found) exit 3 }
  ' CHANGELOG.md) || die "CHANGELOG.md has no \"## $v\" (or \"## [$v]\") section: write the release's changes there first (docs/releasing.md)"
  body=$(printf '%s\n' "$body" | sed -e '/./,$!d' | tac | sed -e '/./,$!d' | tac)
  [ -n "$body" ] || die "CHANGELOG.md's $v section is empty"
  printf '%s\n' "$body"
}

# go_build prints, one word a line, the environment and command a release binary is built
# with: hack/images's goBuild for another GOARCH (static, stripped, main.version stamped), so
# the released binaries are the ones the images and the end-to-end suite run.
go_build() {
  local v=$1 arch=$2 out=$3 pkg=$4
  printf '%s\n' CGO_ENABLED=0 GOOS=linux "GOARCH=$arch" \
    go build -trimpath "-ldflags=-s -w -X main.version=$v" -o "$out" "$pkg"
}

case "${1:-}" in
  --notes)
    check_version "${2:-}"
    notes "$2"
    exit 0
    ;;
  --go-build)
    [ $# -eq 5 ] || die "usage: $0 --go-build VERSION ARCH OUT PKG"
    go_build "$2" "$3" "$4" "$5"
    exit 0
    ;;
  '') ;;
  *) die "usage: VERSION=vX.Y.Z $0 | $0 --notes VERSION | $0 --go-build VERSION ARCH OUT PKG" ;;
esac

# Everything that can refuse the release does so before anything is built.
version=${VERSION:-}
check_version "$version"
release_notes=$(notes "$version")

img=${IMG:-ghcr.io/agentmem/memory-adapter-operator:$version}
adapter_img=${ADAPTER_IMG:-ghcr.io/agentmem/memory-adapter:$version}
for i in "$img" "$adapter_img"; do
  # hack/render-install.sh reads NAME@DIGEST or NAME:TAG; NAME:TAG@DIGEST would reach
  # kustomize as a name with a tag in it. A tag other than the version is a mix-up: the
  # binaries in the release say VERSION, so must the images the installers name.
  case "$i" in
    *:*@sha256:*) die "image $i: give NAME@sha256:DIGEST or NAME:$version, not both a tag and a digest" ;;
    *@sha256:*)
      [[ ${i#*@sha256:} =~ ^[0-9a-f]{64}$ ]] || die "image $i: a sha256 digest is 64 lower-case hex digits"
      ;;
    *":$version") ;;
    *) die "image $i: its tag must be the release version ($version), or pin it by digest (NAME@sha256:...)" ;;
  esac
done

chart_dir=charts/memory-adapter-operator
[ -f "$chart_dir/Chart.yaml" ] || die "$chart_dir/Chart.yaml does not exist: the release's Helm chart cannot be packaged, and a release without it is incomplete (docs/releasing.md)"

if [ "${RELEASE_ALLOW_DIRTY:-}" != 1 ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  git status --short --untracked-files=no >&2
  die "tracked files have uncommitted changes (above): release from a clean checkout of the tagged commit, or set RELEASE_ALLOW_DIRTY=1 for a trial run"
fi

# The release runs what it builds to check the version in it (below), so it needs a machine
# one of its binaries runs on.
host_arch=$(go env GOARCH)
[ "$(go env GOOS)" = linux ] && [[ $host_arch == amd64 || $host_arch == arm64 ]] ||
  die "release runs on linux/amd64 or linux/arm64, not $(go env GOOS)/$host_arch: it runs the binaries it builds to check their version"
cdx=${CYCLONEDX_GOMOD:-}
[ -n "$cdx" ] && [ -x "$cdx" ] || die "CYCLONEDX_GOMOD=${cdx:-(unset)} is not an executable: run make release, which builds cyclonedx-gomod into bin/"
kubectl=${MAO_KUBECTL:-$(hack/kubectl.sh)}
helm=${HELM:-$(hack/helm.sh)}

# dist/ holds one release and nothing else, so checksums.txt covers exactly what is published.
dist=dist
rm -rf "$dist"
mkdir -p "$dist"

printf '%s\n' "$release_notes" >"$dist/release-notes.md"

# The installers are the default installation: a renaming or monitoring namespace set in the
# maintainer's shell for make deploy must not leak into what every user applies.
render() {
  env -u INSTALL_NAMESPACE -u INSTALL_PREFIX -u MONITORING_NAMESPACE \
    MAO_KUBECTL="$kubectl" ADAPTER_IMG="$adapter_img" hack/render-install.sh "$img" "$@"
}
log "rendering the installers (manager $img, adapters $adapter_img)"
render >"$dist/install.yaml"
render config/certmanager >"$dist/install-certmanager.yaml"
"$kubectl" kustomize config/crd >"$dist/crds.yaml"
# What the renders must hold; hack/render-install.sh is tested against envtest by test/api,
# this catches a release rendered with the wrong images.
for f in install.yaml install-certmanager.yaml; do
  grep -qF "image: $img" "$dist/$f" || die "$dist/$f does not run the manager image $img"
  grep -qF "$adapter_img" "$dist/$f" || die "$dist/$f does not name the adapter image $adapter_img"
  grep -q '^kind: CustomResourceDefinition$' "$dist/$f" || die "$dist/$f holds no CRD"
done
grep -q '^kind: CustomResourceDefinition$' "$dist/crds.yaml" || die "$dist/crds.yaml holds no CRD"

# Helm wants SemVer without the v; appVersion is the images' tag, as in Chart.yaml.
log "packaging $chart_dir with $helm"
"$helm" package "$chart_dir" --version "${version#v}" --app-version "$version" --destination "$dist" >&2

binaries=(manager=./cmd memory-adapter=./cmd/memory-adapter)
for arch in amd64 arm64; do
  for b in "${binaries[@]}"; do
    name=${b%%=*} pkg=${b#*=}
    log "building $name for linux/$arch"
    mapfile -t cmd < <(go_build "$version" "$arch" "$dist/$name-linux-$arch" "$pkg")
    env "${cmd[@]}"
  done
done
# The version must really be in the binaries: -X names a symbol, and the linker ignores one
# that does not exist, so a renamed variable would ship "dev" without a word. The build for
# this machine's architecture is run and asked.
got=$("$dist/manager-linux-$host_arch" --version) || die "$dist/manager-linux-$host_arch --version failed"
[ "$got" = "$version" ] || die "$dist/manager-linux-$host_arch --version says $got, not $version"
got=$("$dist/memory-adapter-linux-$host_arch" version | sed -n 's/^adapter version: *//p')
[ "$got" = "$version" ] || die "$dist/memory-adapter-linux-$host_arch version says ${got:-nothing}, not $version"

# One SBOM per released binary: the modules linked into it for its platform (app mode follows
# the main package's imports under the binary's GOOS, GOARCH and CGO_ENABLED), the Go standard
# library included, with licenses read from the module cache. No serial number and no
# timestamp, so two runs over the same sources write the same file. The main module's version
# is what git says of HEAD: the tag when HEAD is tagged VERSION, else a pseudo-version.
if [ "$(git describe --tags --exact-match HEAD 2>/dev/null)" != "$version" ]; then
  log "note: HEAD is not tagged $version, so the SBOMs give the module a pseudo-version; tag before releasing (docs/releasing.md)"
fi
for arch in amd64 arm64; do
  for b in "${binaries[@]}"; do
    name=${b%%=*} pkg=${b#*=}
    log "writing the SBOM of $name-linux-$arch"
    GOOS=linux GOARCH=$arch CGO_ENABLED=0 "$cdx" app -json -licenses -std -noserial -notimestamp \
      -main "${pkg#./}" -output "$dist/sbom-$name-linux-$arch.cdx.json" . 2>&1 | sed 's/^/[cyclonedx-gomod] /' >&2
    [ -s "$dist/sbom-$name-linux-$arch.cdx.json" ] || die "cyclonedx-gomod wrote no $dist/sbom-$name-linux-$arch.cdx.json"
  done
done

(cd "$dist" && find . -maxdepth 1 -type f ! -name checksums.txt -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >checksums.txt)

log "wrote $dist/ for $version:"
ls -l "$dist" >&2
