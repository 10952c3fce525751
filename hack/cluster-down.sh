#!/usr/bin/env bash
# Stops the local cluster started by hack/cluster-up.sh and removes every process, mount,
# iptables rule, network namespace and bridge it created; fails if anything remains.
# Keeps certificates, imported images and logs in $MAO_CLUSTER_DIR for the next cluster-up.
set -euo pipefail
cd "$(dirname "$0")/.."
export MAO_CLUSTER_DIR="${MAO_CLUSTER_DIR:-/var/tmp/mao-cluster}"
if [ ! -d "$MAO_CLUSTER_DIR" ]; then
  printf '[cluster-down] no cluster state in %s: nothing to do\n' "$MAO_CLUSTER_DIR" >&2
  exit 0
fi
BIN_DIR=""
[ -f "$MAO_CLUSTER_DIR/bin-dir" ] && BIN_DIR=$(cat "$MAO_CLUSTER_DIR/bin-dir")
mkdir -p "$MAO_CLUSTER_DIR/tools"
go build -o "$MAO_CLUSTER_DIR/tools/cluster" ./hack/cluster
exec "$MAO_CLUSTER_DIR/tools/cluster" -bin-dir "$BIN_DIR" down
