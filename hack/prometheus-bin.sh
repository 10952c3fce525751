#!/usr/bin/env bash
# Prints a directory holding Debian's `prometheus` and `promtool` binaries, fetching them on
# first use: `make test` runs `promtool test rules` on the shipped alert rules, and the e2e
# suite runs a real Prometheus against the local cluster's manager.
#
#   hack/prometheus-bin.sh        print the directory (fetching into the cache if needed)
#
# Why not `apt-get install prometheus`: the package ships an init script and a systemd unit,
# and its postinst starts a Prometheus daemon on :9090 wherever an init system runs it; a test
# run must leave no server behind. So the .deb of the candidate version is fetched with
# `apt-get download` and only its two binaries (Go programs linked against libc alone) are
# extracted, into $MAO_CACHE_DIR/prometheus/<version>/ (default
# ~/.cache/memory-adapter-operator), and reused. When the package lists are missing the
# script runs `apt-get update` as root, like hack/postgres-server.sh's install; it fails,
# naming the step, when the package cannot be had: never a silent skip.
set -euo pipefail

die() { echo "prometheus-bin.sh: $*" >&2; exit 1; }

command -v apt-cache >/dev/null || die "apt-cache not found: Debian's 'prometheus' package is needed for promtool"

candidate() { apt-cache policy prometheus 2>/dev/null | awk '$1 == "Candidate:" { print $2 }'; }
version=$(candidate)
if [[ -z "$version" || "$version" == "(none)" ]]; then
  [[ $(id -u) -eq 0 ]] || die "no candidate for the Debian package 'prometheus' and not root to run apt-get update"
  echo "prometheus-bin.sh: no package list names 'prometheus'; running apt-get update" >&2
  apt-get update >&2 || die "apt-get update failed"
  version=$(candidate)
  [[ -n "$version" && "$version" != "(none)" ]] || die "apt offers no Debian package 'prometheus'"
fi

cache="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}/prometheus/$version"
if [[ -x "$cache/promtool" && -x "$cache/prometheus" ]]; then
  echo "$cache"
  exit 0
fi

mkdir -p "$(dirname "$cache")"
tmp=$(mktemp -d "$(dirname "$cache")/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "prometheus-bin.sh: fetching the Debian package prometheus=$version (about 20 MB)" >&2
# apt-get download writes into the current directory; as root it warns that the _apt user
# cannot write there, which is harmless.
(cd "$tmp" && apt-get download "prometheus=$version" >&2) || {
  # A stale package list names a version the mirror no longer has.
  [[ $(id -u) -eq 0 ]] || die "apt-get download prometheus=$version failed"
  apt-get update >&2 || die "apt-get update failed"
  version=$(candidate)
  cache="$(dirname "$cache")/$version"
  (cd "$tmp" && apt-get download "prometheus=$version" >&2) || die "apt-get download prometheus=$version failed"
}
deb=$(ls "$tmp"/prometheus_*.deb) || die "apt-get download left no .deb"
dpkg-deb -x "$deb" "$tmp/x" || die "dpkg-deb -x $deb failed"
mkdir -p "$tmp/bin"
for b in prometheus promtool; do
  [[ -x "$tmp/x/usr/bin/$b" ]] || die "the package has no usr/bin/$b"
  mv "$tmp/x/usr/bin/$b" "$tmp/bin/$b"
done
"$tmp/bin/promtool" --version >/dev/null 2>&1 || die "the extracted promtool does not run"
rm -rf "$cache"
mv "$tmp/bin" "$cache"
echo "$cache"
