#!/usr/bin/env bash
# Assembles the root of the Python agent image (make images packs it with hack/images as
# PY_AGENT_IMG):
#
#   hack/python-agent-rootfs.sh OUT_DIR
#
# OUT_DIR then holds Debian's python3 (/usr/bin/python3.11 from python3.11-minimal, and the
# /usr/bin/python3 link), its standard library from /usr/lib/python3.11 (without the test
# suite, idlelib, tkinter, turtledemo, ensurepip, lib2to3, pydoc_data, config-*, bytecode
# caches and Debian's sitecustomize link to /etc), the lib-dynload extensions an agent can
# use (not the test modules, nor curses, readline, dbm, nis and ossaudiodev, which load
# libraries the image does not carry), every shared library `ldd` reports for the
# interpreter and for each extension kept (libssl, libcrypto, libffi, libexpat, libz, libm,
# libc, ...), the dynamic loader, the merged-/usr links (bin, lib, lib64 -> usr/...), and
# clients/python's package in /usr/lib/python3/dist-packages, where Debian's python3 looks
# without PYTHONPATH. /etc/passwd, /tmp, the CA bundle and the user come from hack/images.
#
# The interpreter is the host's Debian one, never a pyenv or other python3 on PATH: when
# /usr/bin/python3.11 is missing the script installs the Debian package python3 (as root;
# apt-get update first). It rebuilds OUT_DIR from scratch every run (a few seconds) in a
# temporary directory beside it and swaps it in, so OUT_DIR always matches the host's
# packages and the package source; hack/images dates every entry to the epoch, so an
# unchanged tree gives the same image digest. It ends by running the tree's interpreter in
# a chroot as the image's user (65532) importing ssl, asyncio, decimal, json and the package,
# when it runs as root (chroot needs root); otherwise it says it skipped that check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

say() { echo "python-agent-rootfs.sh: $*" >&2; }
[[ $# -eq 1 && -n $1 ]] || { echo "usage: hack/python-agent-rootfs.sh OUT_DIR" >&2; exit 2; }
out=$1
[[ $out == /* ]] || out="$PWD/$out"

PY_VERSION=3.11
PY=/usr/bin/python$PY_VERSION
STDLIB=/usr/lib/python$PY_VERSION
PKG_SRC=clients/python/src/memory_adapter_client

ensure_python() {
  if [[ -x $PY && -d $STDLIB/lib-dynload ]]; then
    return
  fi
  if [[ $(id -u) -ne 0 ]]; then
    say "$PY is not installed; install the Debian package 'python3' (apt-get install python3)"
    exit 1
  fi
  say "installing the Debian package python3 (for $PY)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3; } >&2 || {
    say "apt-get install python3 failed"
    exit 1
  }
  [[ -x $PY ]] || { say "the Debian package python3 did not bring $PY (another Debian release?)"; exit 1; }
}
ensure_python
command -v ldd >/dev/null || { say "ldd (Debian's libc-bin) is missing"; exit 1; }

tmp=$(mktemp -d "$(dirname "$out")/.$(basename "$out").XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# copy_path and libs_of (hack/lib/rootfs.sh) fill the tree named by ROOTFS_TREE.
ROOTFS_TREE=$tmp
# shellcheck source=lib/rootfs.sh
source hack/lib/rootfs.sh

mkdir -p "$tmp/usr/bin" "$tmp/usr/lib" "$tmp/usr/lib64"
for l in bin lib lib64; do ln -s "usr/$l" "$tmp/$l"; done

copy_path "$PY"
ln -s "python$PY_VERSION" "$tmp/usr/bin/python3"
libs_of "$PY"

tar -C /usr/lib -cf - \
  --exclude="python$PY_VERSION/test" --exclude="python$PY_VERSION/idlelib" \
  --exclude="python$PY_VERSION/tkinter" --exclude="python$PY_VERSION/turtledemo" \
  --exclude="python$PY_VERSION/turtle.py" --exclude="python$PY_VERSION/ensurepip" \
  --exclude="python$PY_VERSION/lib2to3" --exclude="python$PY_VERSION/pydoc_data" \
  --exclude="python$PY_VERSION/config-*" --exclude="python$PY_VERSION/sitecustomize.py" \
  --exclude="python$PY_VERSION/lib-dynload" --exclude="python$PY_VERSION/site-packages" \
  --exclude="python$PY_VERSION/dist-packages" --exclude=__pycache__ \
  "python$PY_VERSION" | tar -C "$tmp/usr/lib" -xf -

mkdir -p "$tmp$STDLIB/lib-dynload"
kept=0
for so in "$STDLIB"/lib-dynload/*.so; do
  case $(basename "$so") in
    _test* | _xx* | xx* | _ctypes_test* | _curses* | readline* | _dbm* | nis* | ossaudiodev* | _tkinter*) continue ;;
  esac
  cp -p "$so" "$tmp$STDLIB/lib-dynload/"
  libs_of "$so"
  kept=$((kept + 1))
done

site="$tmp/usr/lib/python3/dist-packages"
mkdir -p "$site"
tar -C "$(dirname "$PKG_SRC")" -cf - --exclude=__pycache__ "$(basename "$PKG_SRC")" | tar -C "$site" -xf -

rm -rf "$out.old"
[[ -e $out ]] && mv "$out" "$out.old"
mv "$tmp" "$out"
rm -rf "$out.old"
trap - EXIT
say "assembled $out ($(du -sh "$out" | cut -f1); $kept extensions, $(find "$out/usr/lib/x86_64-linux-gnu" -type f | wc -l) shared libraries)"

if [[ $(id -u) -eq 0 ]]; then
  check="import ssl, asyncio, decimal, json, urllib.request, http.server, memory_adapter_client.agent; print(ssl.OPENSSL_VERSION)"
  got=$(chroot --userspec=65532:65532 "$out" /usr/bin/python3 -c "$check") || {
    say "the tree's python3 cannot import what the agent needs (chroot $out /usr/bin/python3 -c '$check')"
    exit 1
  }
  say "checked: the tree's python3 runs as 65532 and imports the agent ($got)"
else
  say "not root: skipped the chroot check of the tree's python3"
fi
