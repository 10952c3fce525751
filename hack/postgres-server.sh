#!/usr/bin/env bash
# Throwaway PostgreSQL server for tests, from Debian's packages.
#
#   hack/postgres-server.sh start  <dir>   init a cluster in <dir>, start it on a free loopback
#                                          port, print MAO_TEST_POSTGRES_URL=postgres://...
#   hack/postgres-server.sh stop   <dir>   stop it (fast shutdown); <dir> is left for the caller
#   hack/postgres-server.sh crash  <dir>   kill it the hard way (immediate shutdown, no checkpoint)
#   hack/postgres-server.sh resume <dir>   start the same cluster again on the same port
#
# When the server binaries are missing they are installed with apt-get if we run as root;
# otherwise the script fails naming the package. PostgreSQL refuses to run as root, so as root
# the server runs as the "postgres" user (created if missing). The password is random per
# cluster and lives only in <dir>; the URL is printed once on stdout for the caller.
set -euo pipefail

die() { echo "postgres-server.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || die "usage: $0 start|stop|crash|resume <dir>"

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

pg_start() {
  run_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $1 -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null
}

case "$cmd" in
  start)
    ensure_binaries
    setup_user
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
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
  *)
    die "unknown command $cmd (want start, stop, crash or resume)"
    ;;
esac
