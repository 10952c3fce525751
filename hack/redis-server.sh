#!/usr/bin/env bash
# Throwaway Redis server for tests, from Debian's redis-server package.
#
#   hack/redis-server.sh start <dir>   start a server on a free loopback port with its data,
#                                      log and pid in <dir>; prints MAO_TEST_REDIS_ADDR=127.0.0.1:PORT
#   hack/redis-server.sh stop <dir>    stop it (SHUTDOWN NOSAVE, then SIGTERM) and wait
#   hack/redis-server.sh kill <dir>    SIGKILL it (a crash), for recovery tests
#
# A second `start` on the same <dir> reuses its port and data, so a test can kill and restart
# the server behind a running adapter. The server persists with AOF (appendfsync everysec)
# and no RDB snapshots; the adapter's docs explain what that setting can lose.
set -euo pipefail

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

start() {
  ensure_installed
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ -f $dir/redis.pid ]] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; then
    echo "MAO_TEST_REDIS_ADDR=127.0.0.1:$(cat "$dir/port")"
    return
  fi
  local tries=0 port
  while :; do
    if [[ -f $dir/port ]]; then
      port=$(cat "$dir/port")
    else
      port=$((20000 + RANDOM % 20000))
      port_free "$port" || continue
    fi
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
      --daemonize no --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
      --appendonly yes --appendfsync everysec --save "" \
      --protected-mode yes --databases 1 >/dev/null 2>&1 &
    local pid=$!
    echo "$pid" >"$dir/redis.pid"
    if wait_ready "$port" "$pid"; then
      echo "$port" >"$dir/port"
      disown "$pid" 2>/dev/null || true
      echo "MAO_TEST_REDIS_ADDR=127.0.0.1:$port"
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
