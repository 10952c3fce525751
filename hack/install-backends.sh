#!/usr/bin/env bash
# Installs (or checks) the PostgreSQL and Redis server packages the live tests and the e2e
# suite's host servers start, by starting and stopping one server of each through the same
# scripts they use (hack/postgres-server.sh, hack/redis-server.sh install with apt when a
# server is missing), and the packages the Patroni image is built from
# (hack/patroni-rootfs.sh --packages).
#
# Why a step of its own: those scripts run from many places at once (the test packages run in
# parallel, and `make ci` runs the e2e suite beside the unit tests), and on a fresh machine two
# concurrent apt-get runs fight over dpkg's lock. Callers run this once, before anything that
# starts servers concurrently.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/lib/heartbeat.sh
. hack/lib/heartbeat.sh
# shellcheck source=hack/estimates.sh
. hack/estimates.sh

probe_dir=$(mktemp -d /tmp/mao-probe.XXXXXX)
chmod 755 "$probe_dir"
trap 'rm -rf "$probe_dir"' EXIT
# One && chain, not separate lines: heartbeat_run tests the function's status, and bash
# ignores `set -e` inside a function run that way.
install_backends() {
  hack/postgres-server.sh start "$probe_dir/pg" >/dev/null &&
    hack/postgres-server.sh stop "$probe_dir/pg" &&
    hack/redis-server.sh start "$probe_dir/redis" >/dev/null &&
    hack/redis-server.sh stop "$probe_dir/redis" &&
    hack/patroni-rootfs.sh --packages
}
heartbeat_run -v "installing or checking" -e "$EST_BACKENDS" \
  "postgresql, redis-server and patroni" install_backends
