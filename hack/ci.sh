#!/usr/bin/env bash
# The test command: `make ci` runs this, and .ci/run runs `make ci`. It does all of its own
# set-up, so it works on a fresh machine with Go, gcc, git, make and Debian's apt.
#
# Stages (docs/development.md describes what each one checks):
#
#   1. make verify                 generated files current, gofmt-clean, estimates in sync
#   2. set-up the later stages share: the Kubernetes binaries (envtest's and the local
#      cluster's), the PostgreSQL and Redis packages, and Debian's Prometheus binaries
#   3. make lint and make test,    side by side: the first two at the lowest CPU priority,
#      make test-e2e                the single-node end-to-end suite at normal priority
#   4. make test-e2e-multinode     the three-node stage, beside whatever remains of lint and
#                                  the tests (their output is printed when they end)
#
# Why stage 3 runs side by side: lint and the race-enabled tests keep both cores busy for
# about 7 minutes, while the end-to-end suite spends most of its time waiting on a real cluster
# (a 3-minute outage, a manager's lease, a node's grace period). Run one after the other, the
# machine idles through most of the suite. The end-to-end specs measure timing (how long
# Available is False, whether an evidence read was late), so they keep the CPU: `nice -n 19`
# gives lint and the tests only what the suite leaves. The unit tests' own timeouts were set
# on a machine at load 11-31 (hack/test.sh), so they tolerate waiting.
#
# What stage 2 prevents: both sides of stage 3 start PostgreSQL servers (the live tests, the
# suite's host backends), need Kubernetes binaries (envtest, the cluster) and run Prometheus's
# binaries (promtool, the Prometheus spec); on a fresh machine each would install, fetch or
# build them at the same moment. After it, apt is the e2e suite's alone (the cluster's host
# packages, busybox, npm for the PostgreSQL upgrade). And make deploy, which the
# suite runs, regenerates the CRDs that envtest reads: MANIFESTS_CHECKED=1 (set once stage 1
# has proven them current) makes it use them as they are.
#
# Environment: everything hack/test.sh and the e2e suite read (SHUFFLE, FUZZTIME, E2E_PROCS,
# KEEP_CLUSTER, ...) passes through.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/lib/heartbeat.sh
. hack/lib/heartbeat.sh

printf -v ci_start '%(%s)T' -1
# A digest left by an earlier run would be printed as this run's (print_digests, below).
rm -f bin/e2e-*-failures.txt
stage() {
  local now
  printf -v now '%(%s)T' -1
  printf '\n======== make ci, %s: %s ========\n' "$(heartbeat_fmt $((now - ci_start)))" "$*"
}

stage "1/4 make verify"
make verify

stage "2/4 set-up shared by the stages"
KUBEBUILDER_ASSETS=$(hack/k8s-binaries.sh etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
export KUBEBUILDER_ASSETS
hack/install-backends.sh
# promtool and prometheus (Debian's package, fetched with apt-get download): the test stage's
# alert-rule check and the e2e suite's Prometheus spec both ask for them, and on a fresh
# machine two fetches would race each other's apt-get update and cache directory.
hack/prometheus-bin.sh >/dev/null
export MANIFESTS_CHECKED=1

stage "3/4 make lint and make test (lowest CPU priority, output below when done) beside make test-e2e"
mkdir -p bin
checks_log=bin/ci-lint-test.log
# setsid: its own process group, so the EXIT trap can stop all of it (make, go test, the
# servers its tests start) if this script ends early. make test is hack/test.sh after
# `make manifests generate`, which stage 1 has just run; running it again here would rewrite
# files the e2e suite's builds read.
setsid bash -c '
  nice -n 19 bash -c "make lint && hack/test.sh" >"$1" 2>&1
  s=$?
  if [ $s -eq 0 ]; then echo "[lint+test] passed (output in $1, printed when the end-to-end stage beside them ends)" >&2
  else echo "[lint+test] FAILED, exit status $s (output in $1, printed when the end-to-end stage beside them ends)" >&2; fi
  exit $s' _ "$checks_log" &
checks_pid=$!
trap 'kill -- -"$checks_pid" 2>/dev/null || true' EXIT
echo "[lint+test] started (pid $checks_pid), writing to $checks_log"

e2e_status=0
make test-e2e || e2e_status=$?
checks_status=0

# finish_checks waits for lint and the tests, prints their output, and says how they ended.
finish_checks() {
  if kill -0 "$checks_pid" 2>/dev/null; then
    echo "[lint+test] still running; waiting for it"
  fi
  wait "$checks_pid" || checks_status=$?
  stage "the output of make lint and make test (exit status $checks_status)"
  cat "$checks_log"
}

# print_digests repeats the end-to-end stages' failure digests (bin/e2e-*-failures.txt, one
# line per failed spec with its message) as the log's last lines: a report that keeps only a
# log's tail still says why a spec failed, not only where.
print_digests() {
  local f
  for f in bin/e2e-*-failures.txt; do
    [ -s "$f" ] && { echo; echo "$f:"; cat "$f"; }
  done
  return 0
}

# With the suite passed and lint and the tests still running, the three-node stage starts
# beside them: it waits on node grace periods even more than the suite does, and how long the
# nice-19 side takes depends on how much CPU the suite left it (10.8 to 13 minutes measured on
# 2026-12-05), so waiting for it here would idle the machine again. A failure anywhere still
# fails make ci; the three-node stage only runs once everything before it has passed or,
# for lint and the tests, not yet failed.
if [ "$e2e_status" -ne 0 ] || ! kill -0 "$checks_pid" 2>/dev/null; then
  finish_checks
  if [ "$checks_status" -ne 0 ] || [ "$e2e_status" -ne 0 ]; then
    stage "FAILED: make lint and make test exited $checks_status, make test-e2e exited $e2e_status"
    print_digests
    exit 1
  fi
  stage "4/4 make test-e2e-multinode"
  make test-e2e-multinode
else
  stage "4/4 make test-e2e-multinode, beside the rest of make lint and make test"
  multinode_status=0
  make test-e2e-multinode || multinode_status=$?
  finish_checks
  if [ "$checks_status" -ne 0 ] || [ "$multinode_status" -ne 0 ]; then
    stage "FAILED: make lint and make test exited $checks_status, make test-e2e-multinode exited $multinode_status"
    print_digests
    exit 1
  fi
fi

stage "all stages passed"
