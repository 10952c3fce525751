#!/usr/bin/env bash
# Throwaway Redis server for tests, from Debian's redis-server package.
#
#   hack/redis-server.sh start <dir>   start a server on a free loopback port with its data,
#                                      log and pid in <dir>; prints MAO_TEST_REDIS_ADDR=127.0.0.1:PORT
#   hack/redis-server.sh stop <dir>    stop it (SHUTDOWN NOSAVE, then SIGTERM) and wait
#   hack/redis-server.sh kill <dir>    SIGKILL it (a crash), for recovery tests
#
# A second `start` on the same <dir> reuses its port and data (and its listen address and
# password, below), so a test can kill and restart the server behind a running adapter.
#
# LISTEN_ADDR=<ip> (start) makes the server listen on that address too, for clients that
# cannot reach the host's loopback: pods of the local cluster reach it through a Service
# without a selector whose EndpointSlice names the node's address (test/e2e does this). A
# server reachable beyond loopback requires a password: a random one, kept in <dir>/password
# (mode 0600); start then also prints MAO_TEST_REDIS_URL=redis://:PASSWORD@127.0.0.1:PORT/0
# and MAO_TEST_REDIS_LISTEN_URL=redis://:PASSWORD@<ip>:PORT/0. Unset (the default), the
# server listens on 127.0.0.1 only with no password, as before. The server persists with AOF (appendfsync everysec)
# and no RDB snapshots; the adapter's docs explain what that setting can lose.
set -euo pipefail
# shellcheck source=lib/closefds.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/closefds.sh"

usage() { echo "usage: $0 start|stop|kill <dir>" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1 dir=$2

ensure_installed() {
  if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
    return
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "redis-server.sh: redis-server is not installed; install the Debian package 'redis-server' (apt-get install redis-server)" >&2
    exit 1
  fi
  echo "redis-server.sh: installing the Debian package redis-server" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Debian's postinst may try to start the packaged service; a throwaway test setup wants
  # only its own servers, so deny service starts during the install.
  local policy=/usr/sbin/policy-rc.d created=
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  { apt-get update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq redis-server; } >&2 || {
    [[ -n $created ]] && rm -f "$policy"
    echo "redis-server.sh: apt-get install redis-server failed" >&2
    exit 1
  }
  [[ -n $created ]] && rm -f "$policy"
  return 0
}

# alive is kill -0 that also treats a zombie (an exited child not yet reaped) as dead.
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo "?")
  [[ $state != Z ]]
}

# redis-cli takes the password from REDISCLI_AUTH, so it never shows on a command line.
if [[ -f $dir/password ]]; then
  REDISCLI_AUTH=$(cat "$dir/password")
  export REDISCLI_AUTH
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_ready() {
  local port=$1 pid=$2
  for _ in $(seq 1 200); do
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      return 0
    fi
    if ! alive "$pid"; then
      return 1
    fi
    sleep 0.05
  done
  return 1
}

# print_addrs prints start's result lines for the server on port $1.
print_addrs() {
  echo "MAO_TEST_REDIS_ADDR=127.0.0.1:$1"
  if [[ -f $dir/listen_addr ]]; then
    local pw
    pw=$(cat "$dir/password")
    echo "MAO_TEST_REDIS_URL=redis://:$pw@127.0.0.1:$1/0"
    echo "MAO_TEST_REDIS_LISTEN_URL=redis://:$pw@$(cat "$dir/listen_addr"):$1/0"
  fi
}

start() {
  ensure_installed
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ -f $dir/redis.pid ]] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
    print_addrs "$(cat "$dir/port")"
    return
  fi
  if [[ -n ${LISTEN_ADDR:-} && ! -f $dir/listen_addr ]]; then
    if [[ ! $LISTEN_ADDR =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
      echo "redis-server.sh: LISTEN_ADDR=$LISTEN_ADDR is not an IPv4 address" >&2
      exit 1
    fi
    (umask 077 && head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/password")
    echo "$LISTEN_ADDR" >"$dir/listen_addr"
    REDISCLI_AUTH=$(cat "$dir/password")
    export REDISCLI_AUTH
  fi
  local bind=(127.0.0.1) auth=()
  if [[ -f $dir/listen_addr ]]; then
    bind+=("$(cat "$dir/listen_addr")")
    # The password goes in a config file read from stdin ("-"), not on the command line,
    # where ps would show it to every user of the machine.
    auth=(-)
  fi
  local tries=0 port
  while :; do
    if [[ -f $dir/port ]]; then
      port=$(cat "$dir/port")
    else
      port=$((20000 + RANDOM % 20000))
      port_free "$port" || continue
    fi
    { [[ ${#auth[@]} -eq 0 ]] || printf 'requirepass %s\n' "$(cat "$dir/password")"; } |
      (close_inherited_fds; exec redis-server "${auth[@]}" --bind "${bind[@]}" --port "$port" --dir "$dir" \
        --daemonize no --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
        --appendonly yes --appendfsync everysec --save "" \
        --protected-mode yes --databases 1) >/dev/null 2>&1 &
    local pid=$!
    echo "$pid" >"$dir/redis.pid"
    if wait_ready "$port" "$pid"; then
      echo "$port" >"$dir/port"
      disown "$pid" 2>/dev/null || true
      print_addrs "$port"
      return
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [[ -f $dir/port ]] || ((tries >= 10)); then
      echo "redis-server.sh: redis-server did not start on port $port; log follows" >&2
      tail -n 20 "$dir/redis.log" >&2 || true
      exit 1
    fi
  done
}

stop_server() {
  local sig=$1
  [[ -f $dir/redis.pid ]] || return 0
  local pid
  pid=$(cat "$dir/redis.pid")
  if kill -0 "$pid" 2>/dev/null; then
    if [[ $sig == TERM && -f $dir/port ]]; then
      redis-cli -h 127.0.0.1 -p "$(cat "$dir/port")" shutdown nosave >/dev/null 2>&1 || true
    fi
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/redis.pid"
}

case $cmd in
  start) start ;;
  stop) stop_server TERM ;;
  kill) stop_server KILL ;;
  *) usage ;;
esac
