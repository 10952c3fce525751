#!/usr/bin/env bash
# Assembles the root of the Redis image the e2e Sentinel spec runs (test/e2e/ha_redis_test.go
# packs it with hack/images' %/dir form):
#
#   hack/redis-rootfs.sh OUT_DIR
#
# OUT_DIR then holds Debian's redis-server (/usr/bin/redis-check-rdb and the redis-server
# link to it: the binary picks its mode from the name it was started as, and runs as a
# sentinel with `redis-server CONF --sentinel`), redis-cli (from redis-tools, for probes and
# SENTINEL commands through kubectl exec), every shared library `ldd` reports for both
# (libjemalloc, liblzf, libssl, libcrypto, libsystemd and its own, libc, ...), the dynamic
# loader and the merged-/usr links (bin, lib, lib64 -> usr/...). /etc/passwd, /tmp and the
# user (65532) come from hack/images. There is no shell: pods that need one run a step in
# the cluster's busybox helper image.
#
# The binaries are the host's Debian ones; when redis-server or redis-cli is missing the
# script installs them through hack/redis-server.sh's installer path (the Debian package
# redis-server, which brings redis-tools; as root). It rebuilds OUT_DIR from scratch in a
# temporary directory beside it and swaps it in; hack/images dates every entry to the epoch,
# so an unchanged tree gives the same image digest. As root it ends by running the tree's
# redis-server --version in a chroot as 65532; otherwise it says it skipped that check.
# It prints the server's version (e.g. 7.0.15) on stdout, for the image's tag.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

say() { echo "redis-rootfs.sh: $*" >&2; }
[[ $# -eq 1 && -n $1 ]] || { echo "usage: hack/redis-rootfs.sh OUT_DIR" >&2; exit 2; }
out=$1
[[ $out == /* ]] || out="$PWD/$out"

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    say "redis-server is not installed; install the Debian package 'redis-server' (apt-get install redis-server)"
    exit 1
  fi
  say "installing the Debian package redis-server"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's postinst may start the packaged service; deny service starts during the install.
  policy=/usr/sbin/policy-rc.d created=
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq redis-server; } >&2 || {
    [[ -n $created ]] && rm -f "$policy"
    say "apt-get install redis-server failed"
    exit 1
  }
  [[ -n $created ]] && rm -f "$policy"
fi
command -v ldd >/dev/null || { say "ldd (Debian's libc-bin) is missing"; exit 1; }
server=$(command -v redis-server) cli=$(command -v redis-cli)
[[ $server == /usr/bin/* && $cli == /usr/bin/* ]] || { say "redis-server ($server) or redis-cli ($cli) is not Debian's /usr/bin one"; exit 1; }

tmp=$(mktemp -d "$(dirname "$out")/.$(basename "$out").XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
ROOTFS_TREE=$tmp
# shellcheck source=lib/rootfs.sh
source hack/lib/rootfs.sh

mkdir -p "$tmp/usr/bin" "$tmp/usr/lib" "$tmp/usr/lib64"
for l in bin lib lib64; do ln -s "usr/$l" "$tmp/$l"; done
for b in "$server" "$cli"; do
  copy_path "$b"
  libs_of "$(realpath "$b")"
done

rm -rf "$out.old"
[[ -e $out ]] && mv "$out" "$out.old"
mv "$tmp" "$out"
rm -rf "$out.old"
trap - EXIT
version=$("$server" --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p')
say "assembled $out ($(du -sh "$out" | cut -f1); Redis $version, $(find "$out/usr/lib/x86_64-linux-gnu" -type f | wc -l) shared libraries)"

if [[ $(id -u) -eq 0 ]]; then
  got=$(chroot --userspec=65532:65532 "$out" /usr/bin/redis-server --version) || {
    say "the tree's redis-server does not run (chroot $out /usr/bin/redis-server --version)"
    exit 1
  }
  chroot --userspec=65532:65532 "$out" /usr/bin/redis-cli --version >/dev/null || {
    say "the tree's redis-cli does not run"
    exit 1
  }
  say "checked: the tree's redis-server and redis-cli run as 65532 ($got)"
else
  say "not root: skipped the chroot check of the tree's binaries"
fi
echo "$version"
