#!/usr/bin/env bash
# The newcomer's tour (`make demo`, README "Try it"): the operator loop end to end on the
# local cluster, with nothing faked and no status edited by hand.
#
#   hack/demo.sh up     start (or reuse) the cluster, build and load the images, make deploy,
#                       then in namespace mao-demo: the SQLite sample going Deployed ->
#                       Conformant -> Available, its conformance results, one item stored and
#                       read back through the Service with the binding Secret's url and token,
#                       and a PostgreSQL adapter losing Available when its (throwaway, host)
#                       server stops and regaining it when the server returns. Leaves the
#                       cluster running and prints how to explore it.
#   hack/demo.sh down   remove what `up` made: the namespace, the PostgreSQL server, the
#                       operator (make undeploy), and the cluster (hack/cluster-down.sh);
#                       then lists what stays for the next run (cluster state, built
#                       binaries, tools: about 1-2 GB) with its size and how to remove it.
#
# Idempotent: a second `up` deletes the previous run's namespace and PostgreSQL server and
# starts them afresh, so every run shows the whole story from the first condition on.
# Ctrl-C stops the PostgreSQL server this run started and says how to remove the rest.
# Runs as root (the cluster needs it). Env: MAO_CLUSTER_DIR (default /var/tmp/mao-cluster),
# MAO_DEMO_DIR (the PostgreSQL server's directory, default /var/tmp/mao-demo), MAKE.
set -euo pipefail
cd "$(dirname "$0")/.."

export MAO_CLUSTER_DIR="${MAO_CLUSTER_DIR:-/var/tmp/mao-cluster}"
# Outside the checkout and under a world-traversable parent: the PostgreSQL server runs as the
# postgres user, which must be able to enter its directory.
DEMO_DIR="${MAO_DEMO_DIR:-/var/tmp/mao-demo}"
PG_DIR="$DEMO_DIR/postgres"
NS=mao-demo
SQLITE=sqlite-memory
PG=pg-memory
AGENT=sqlite-agent
PG_SVC="host-postgres"
OPERATOR_NS=memory-adapter-operator-system
MANAGER=memory-adapter-operator-controller-manager
MAKE="${MAKE:-make}"
export KUBECONFIG="$MAO_CLUSTER_DIR/admin.kubeconfig"

# shellcheck source=hack/lib/heartbeat.sh
. hack/lib/heartbeat.sh
# shellcheck source=hack/estimates.sh
. hack/estimates.sh

printf -v DEMO_START '%(%s)T' -1
say() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# The project's kubectl, built by hack/cluster-up.sh to match the server's version; known only
# once the cluster is up (it writes bin-dir).
kc() { "$KUBECTL" "$@"; }

cluster_running() {
  [ -f "$MAO_CLUSTER_DIR/bin-dir" ] && [ -f "$KUBECONFIG" ] &&
    "$(cat "$MAO_CLUSTER_DIR/bin-dir")/kubectl" get --raw /readyz >/dev/null 2>&1
}

pg_running() {
  [ -f "$PG_DIR/port" ] && [ -f "$PG_DIR/data/postmaster.pid" ]
}

# stop_pg stops the throwaway PostgreSQL server when one is running from $PG_DIR; the
# directory (data, password) stays until remove_pg.
stop_pg() {
  if pg_running; then
    hack/postgres-server.sh stop "$PG_DIR" || true
  fi
}

remove_pg() {
  stop_pg
  rm -rf "$PG_DIR"
}

# ---------------------------------------------------------------------------------------------
# Condition watching. The operator writes five conditions; the demo prints each change of a
# condition's status or reason as it happens, with its message, so the reader sees the loop
# move instead of a single wait that returns at the end.

# conditions NAME prints one line per condition: TYPE<TAB>STATUS<TAB>REASON<TAB>MESSAGE.
conditions() {
  kc get madp "$1" -n "$NS" -o json 2>/dev/null |
    jq -r '.status.conditions // [] | .[] | [.type, .status, .reason, (.message // "")] | @tsv'
}

# watch_until NAME TYPE WANT TIMEOUT_SECONDS polls NAME's conditions every two seconds, prints
# every change, and returns 0 once condition TYPE matches WANT, 1 at the timeout. WANT is a
# status (True) or a status and reason (False/EvidenceInvalidatesManifest). Meant to run under
# heartbeat_run, which says it is alive while nothing changes.
declare -A SEEN=()
watch_until() {
  local name=$1 want_type=$2 want_status=$3 timeout=$4 start now line t s r m
  printf -v start '%(%s)T' -1
  while :; do
    while IFS=$'\t' read -r t s r m; do
      [ -n "$t" ] || continue
      line="$s/$r"
      if [ "${SEEN[$name/$t]:-}" != "$line" ]; then
        SEEN[$name/$t]=$line
        printf -v now '%(%s)T' -1
        printf '    [+%3ds] %-13s %-7s %-28s %s\n' $((now - start)) "$t" "$s" "$r" "$m"
      fi
      if [ "$t" = "$want_type" ] && { [ "$s" = "$want_status" ] || [ "$line" = "$want_status" ]; }; then
        return 0
      fi
    done < <(conditions "$name")
    printf -v now '%(%s)T' -1
    if [ $((now - start)) -ge "$timeout" ]; then
      printf '    timed out after %ds waiting for %s=%s on %s\n' "$timeout" "$want_type" "$want_status" "$name" >&2
      return 1
    fi
    sleep 2
  done
}

# condition_of NAME TYPE prints "STATUS REASON: MESSAGE" of one condition.
condition_of() {
  kc get madp "$1" -n "$NS" -o json |
    jq -r --arg t "$2" '.status.conditions[] | select(.type == $t) | "\(.status) \(.reason): \(.message)"'
}

# ---------------------------------------------------------------------------------------------
# Ctrl-C stops what this run started: the PostgreSQL server, and the cluster when the cluster
# was not running before this run (a cluster someone else started, or an earlier demo left
# running for exploring, is theirs and stays, with the namespace, named so it can be removed).
# The step in progress is the foreground child; it gets the same ^C from the terminal, and
# heartbeat tickers end within a second of their parent.
STARTED_CLUSTER=0
on_interrupt() {
  trap - INT TERM
  printf '\ndemo: interrupted; stopping what this run started\n' >&2
  stop_pg
  if [ "$STARTED_CLUSTER" = 1 ]; then
    printf 'demo: stopping the cluster this run started (hack/cluster-down.sh; the built binaries stay cached)\n' >&2
    hack/cluster-down.sh >&2 || printf 'demo: cluster-down failed; run make demo-down\n' >&2
    remove_pg
    rmdir "$DEMO_DIR" 2>/dev/null || true
  else
    printf 'demo: the cluster was running before this run, so it and namespace %s stay; remove everything with: make demo-down\n' "$NS" >&2
  fi
  exit 130
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (the local cluster needs it)"
  command -v jq >/dev/null || die "jq is needed to read conditions; apt-get install -y jq"
  command -v curl >/dev/null || die "curl is needed to call the adapter; apt-get install -y curl"
  cluster_running || STARTED_CLUSTER=1
  trap on_interrupt INT TERM

  say "1/7 the local cluster (hack/cluster-up.sh: builds only what is missing, reuses a running cluster)"
  local export_line
  export_line=$(heartbeat_run -v "starting or reusing" -e "$EST_CLUSTER_WARM warm; $EST_CLUSTER_COLD the first time on 2 cores (Kubernetes, CoreDNS and local-path-provisioner built from source)" \
    cluster-up hack/cluster-up.sh)
  KUBECTL="$(cat "$MAO_CLUSTER_DIR/bin-dir")/kubectl"
  info "$export_line"

  say "2/7 the images (make images: built without Docker, loaded into the cluster's containerd)"
  heartbeat_run -v building -e "$EST_IMAGES" images "$MAKE" --no-print-directory images

  say "3/7 the operator (make deploy: CRD, RBAC, the manager Deployment)"
  heartbeat_run -v deploying -e "$EST_DEPLOY" deploy "$MAKE" --no-print-directory deploy
  heartbeat_run -v "waiting for the manager" -e "$EST_ROLLOUT" rollout \
    "$KUBECTL" rollout status -n "$OPERATOR_NS" "deployment/$MANAGER" --timeout=5m

  # A fresh namespace each run, so the conditions start from nothing and the transitions are
  # real; the previous run's PostgreSQL server goes with it.
  if kc get namespace "$NS" >/dev/null 2>&1; then
    info "removing the previous run's namespace $NS and PostgreSQL server"
    remove_pg
    heartbeat_run -v deleting -e "$EST_NAMESPACE_DELETE" "namespace $NS" "$KUBECTL" delete namespace "$NS" --wait=true --timeout=5m >/dev/null
  fi
  remove_pg
  # Restricted Pod Security: the adapter and conformance pods are built to pass it, and the
  # demo shows that they do.
  kc create namespace "$NS" >/dev/null
  kc label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null
  info "namespace $NS (Pod Security: restricted)"

  say "4/7 an agent first: a gated Job that needs what the SQLite adapter will offer"
  agent_gated

  say "5/7 the SQLite sample: Deployed -> Conformant -> Available, as the operator writes them"
  kc apply -n "$NS" -f config/samples/memory_v1alpha1_memoryadapter_sqlite.yaml
  info "  elapsed  condition     status  reason                       message"
  heartbeat_run -v "watching conditions" -e "$EST_DEMO_ADAPTER" "$SQLITE" \
    watch_until "$SQLITE" Available True 600 || die "$SQLITE did not become Available; see: kubectl describe madp -n $NS $SQLITE"
  echo
  kc get madp -n "$NS"
  echo
  local job
  job=$(kc get madp "$SQLITE" -n "$NS" -o jsonpath='{.status.conformance.jobName}')
  info "conformance run $job (kubectl logs -n $NS job/$job has the full table):"
  kc get madp "$SQLITE" -n "$NS" -o json |
    jq -r '.status.conformance.cases[] | "      \(.id)\t\(.outcome)"' | column -t -s $'\t'
  kc get madp "$SQLITE" -n "$NS" -o json |
    jq -r '.status.conformance | "    passed \(.passed), failed \(.failed), not applicable \(.notApplicable)"'

  agent_released

  say "6/7 one item through the adapter's Service, with nothing but the binding Secret"
  item_roundtrip

  say "7/7 a real outage: a PostgreSQL adapter, its server stopped and resumed"
  postgres_outage

  trap - INT TERM
  local end
  printf -v end '%(%s)T' -1
  say "done in $(heartbeat_fmt $((end - DEMO_START))); the cluster keeps running"
  kc get madp -n "$NS"
  cat <<EOF

Use the cluster from this shell:
  $export_line
  export PATH="$(cat "$MAO_CLUSTER_DIR/bin-dir"):\$PATH"   # the project's kubectl, matching the server

Explore:
EOF
  explore "kubectl get madp -n $NS" "Backend, Consistency, Conformant, Available"
  explore "kubectl describe madp -n $NS $SQLITE" "the five conditions and their events"
  explore "kubectl get madp -n $NS $SQLITE -o jsonpath='{.status.conformance.cases}'" "every case"
  explore "kubectl get jobs,pods,svc,secrets -n $NS" "what the operator made"
  explore "kubectl logs -n $NS job/$job" "the conformance table"
  explore "kubectl logs -n $NS job/$AGENT" "the released agent's round trip"
  explore "kubectl logs -n $OPERATOR_NS deployment/$MANAGER" "the operator's log"
  explore "hack/postgres-server.sh stop $PG_DIR" "(then resume) and watch $PG go and return"
  cat <<EOF

Remove everything (namespace, PostgreSQL server, operator, cluster):
  make demo-down
EOF
}

# explore COMMAND WHY prints one line of the closing "Explore" list.
# agent_gated applies the gated agent sample before its adapter exists: the operator's webhook
# gates the pod and projects the binding; deploy order does not matter.
agent_gated() {
  kc apply -n "$NS" -f config/samples/agent_gated_job.yaml >/dev/null
  info "applied config/samples/agent_gated_job.yaml (Job $AGENT), requiring:"
  info "  $(kc get job "$AGENT" -n "$NS" -o jsonpath="{.spec.template.metadata.annotations['memory\.agentmem\.io/requires']}")"
  local pod="" i
  for i in $(seq 1 60); do
    pod=$(kc get pods -n "$NS" -l "job-name=$AGENT" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
    [[ -n $pod ]] && break
    sleep 1
  done
  [[ -n $pod ]] || die "the agent Job made no pod; see: kubectl describe job -n $NS $AGENT"
  info "pod $pod: gates $(kc get pod "$pod" -n "$NS" -o jsonpath='{.spec.schedulingGates[*].name}'), PodScheduled=$(kc get pod "$pod" -n "$NS" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')"
  info "binding projected at $(kc get pod "$pod" -n "$NS" -o jsonpath='{.spec.containers[0].volumeMounts[?(@.name=="memory-binding-'"$SQLITE"'")].mountPath}')"
}

# agent_released waits for the gate controller to release the agent and shows its result.
agent_released() {
  say "   the agent: released once $SQLITE is Available and its verified manifest qualifies"
  heartbeat_run -v "waiting for it to complete" -e "$EST_DEMO_AGENT" "Job $AGENT" \
    "$KUBECTL" wait --for=condition=complete "job/$AGENT" -n "$NS" --timeout=5m >/dev/null ||
    die "the agent did not complete; see: kubectl describe pod -n $NS -l job-name=$AGENT"
  kc get events -n "$NS" --field-selector "involvedObject.kind=Pod" -o json |
    jq -r '.items[] | select(.reason=="WaitingForAdapter" or .reason=="AdapterReady") | "    event \(.reason): \(.message)"' | tail -3
  kc logs -n "$NS" "job/$AGENT" | sed 's/^/    agent: /'
}

explore() { printf '  %-72s # %s\n' "$1" "$2"; }

# item_roundtrip stores one item and reads it back from the host. The binding Secret's url
# names the Service by its cluster DNS name, which the host cannot resolve; curl --resolve
# points that name at the Service's ClusterIP (kube-proxy answers it on the node), so the
# request still goes to the url exactly as the Secret gives it.
item_roundtrip() {
  local binding="$SQLITE-binding" url token hostport host port ip id created body status out cafile
  url=$(kc get secret "$binding" -n "$NS" -o jsonpath='{.data.url}' | base64 -d)
  token=$(kc get secret "$binding" -n "$NS" -o jsonpath='{.data.token}' | base64 -d)
  # The adapter serves TLS with the operator's certificate; the binding's ca.crt is what a
  # client trusts, so curl verifies the adapter exactly as a bound agent does.
  cafile=$(mktemp)
  kc get secret "$binding" -n "$NS" -o jsonpath='{.data.ca\.crt}' | base64 -d >"$cafile"
  [ -s "$cafile" ] || die "secret $binding has no ca.crt: the adapter is expected to serve TLS"
  hostport=${url#*://}
  hostport=${hostport%%/*}
  host=${hostport%:*}
  port=${hostport##*:}
  ip=$(kc get service "${host%%.*}" -n "$NS" -o jsonpath='{.spec.clusterIP}')
  info "secret $binding: url=$url token=<${#token} characters, not shown>"
  info "the host has no cluster DNS: $host resolves to the Service's ClusterIP $ip for curl"
  info "curl trusts only the binding's ca.crt ($(openssl x509 -noout -subject -in "$cafile" 2>/dev/null || echo 'the operator CA'))"

  id=$(cat /proc/sys/kernel/random/uuid)
  # Unix seconds with microseconds, the resolution the contract keeps.
  created=$(date +%s.%6N)
  body=$(jq -cn --arg id "$id" --argjson ts "$created" '{
    id: $id, created_at: $ts,
    metadata: {source: "make-demo", branch_id: "main"},
    content: {text: "remember: the demo stored this through the binding Secret"},
    tags: ["demo"]}')
  info "POST $url/v1/items  $body"
  out=$(mktemp)
  # kube-proxy programs a new Service within seconds; retry briefly rather than fail on that.
  for _ in $(seq 1 15); do
    status=$(curl -sS -o "$out" -w '%{http_code}' --cacert "$cafile" --resolve "$host:$port:$ip" \
      -H 'Content-Type: application/json' -H "Authorization: Bearer $token" \
      --data "$body" "$url/v1/items" 2>/dev/null) || status=000
    [ "$status" = 000 ] || break
    sleep 2
  done
  info "HTTP $status  $(cat "$out")"
  [ "$status" = 201 ] || { rm -f "$out"; die "storing the item failed with HTTP $status"; }
  status=$(curl -sS -o "$out" -w '%{http_code}' --cacert "$cafile" --resolve "$host:$port:$ip" \
    -H "Authorization: Bearer $token" "$url/v1/items/$id")
  info "GET  $url/v1/items/$id"
  info "HTTP $status  $(cat "$out")"
  [ "$status" = 200 ] || { rm -f "$out"; die "reading the item back failed with HTTP $status"; }
  status=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$cafile" --resolve "$host:$port:$ip" "$url/v1/items/$id")
  info "the same GET without the token: HTTP $status"
  rm -f "$out" "$cafile"
}

# postgres_outage runs a PostgreSQL adapter against a throwaway server on the host and stops
# the server: the cause is real, the operator sees it only through the adapter's evidence.
# Pods reach the host through a Service without a selector whose EndpointSlice names the
# node's address, as they would reach an external database on a real cluster.
postgres_outage() {
  local node node_ip listen_url port dsn
  node=$(kc get nodes -o jsonpath='{.items[0].metadata.name}')
  node_ip=$(kc get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}')
  [ -n "$node_ip" ] || die "node $node has no InternalIP"
  mkdir -p "$DEMO_DIR"
  chmod 0755 "$DEMO_DIR"
  info "starting a throwaway PostgreSQL server in $PG_DIR, listening on loopback and $node_ip"
  listen_url=$(LISTEN_ADDR="$node_ip" hack/postgres-server.sh start "$PG_DIR" | sed -n 's/^MAO_TEST_POSTGRES_LISTEN_URL=//p')
  [ -n "$listen_url" ] || die "hack/postgres-server.sh start printed no listen URL"
  port=$(cat "$PG_DIR/port")
  # The same URL with the in-cluster Service name in place of the node's address.
  dsn=${listen_url/@$node_ip:$port/@$PG_SVC.$NS.svc.cluster.local:$port}
  info "exposing it as $PG_SVC.$NS.svc.cluster.local:$port (a Service without a selector + an EndpointSlice on $node_ip)"
  kc apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: $PG_SVC
spec:
  ports:
    - {name: tcp, port: $port, targetPort: $port, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $PG_SVC
  labels:
    kubernetes.io/service-name: $PG_SVC
    # Not the endpointslice controller's, so it leaves this slice alone.
    endpointslice.kubernetes.io/managed-by: demo.memory.agentmem.io
addressType: IPv4
endpoints:
  - addresses: ["$node_ip"]
    conditions: {ready: true}
    nodeName: $node
ports:
  - {name: tcp, port: $port, protocol: TCP}
EOF
  # The DSN holds the server's password: it goes into the Secret through stdin, never argv.
  printf '%s' "$dsn" | kc create secret generic "$PG-conn" -n "$NS" --from-file=dsn=/dev/stdin >/dev/null
  info "secret $PG-conn holds the DSN (password not shown)"
  # The sample's manifest, with health read every 3 s and two failures to react, so the outage
  # shows within seconds rather than the sample's minute and a half.
  kc apply -n "$NS" -f - <<EOF
apiVersion: memory.agentmem.io/v1alpha1
kind: MemoryAdapter
metadata:
  name: $PG
spec:
  manifest:
    adapter: postgres
    nativeItemFields: [id, created_at, metadata, content, tags]
    supportedFilters: [branch_id, source]
    searchConsistency: immediate
    retrieveFidelity: full
    searchFidelity: full
    searchReturnsTags: true
    preservesMetadata: true
  backend:
    type: Postgres
    connectionSecretRef: {name: $PG-conn, key: dsn}
    scope: agents
  health:
    period: 3s
    failureThreshold: 2
EOF
  heartbeat_run -v "watching conditions" -e "$EST_DEMO_ADAPTER" "$PG" \
    watch_until "$PG" Available True 600 || die "$PG did not become Available; see: kubectl describe madp -n $NS $PG"

  echo
  info "stopping the PostgreSQL server (hack/postgres-server.sh stop $PG_DIR)"
  hack/postgres-server.sh stop "$PG_DIR"
  heartbeat_run -v "watching conditions" -e "$EST_DEMO_OUTAGE" "$PG" \
    watch_until "$PG" Available False 180 || die "$PG stayed Available with its server stopped"
  # Healthy names the cause as the last evidence read saw it: usually the failed "reachable"
  # probe (CapabilityProbeFailed), sometimes the adapter's own verdict that its manifest is
  # unavailable (EvidenceInvalidatesManifest, "backend unreachable: ..."). Both say the same.
  info "Healthy:   $(condition_of "$PG" Healthy)"
  info "Available: $(condition_of "$PG" Available)"
  info "conformance Jobs for $PG: $(kc get jobs -n "$NS" -l "memory.agentmem.io/adapter=$PG,app.kubernetes.io/component=conformance" --no-headers | wc -l) (an outage is not a new version: no new run)"

  echo
  info "resuming it on the same port (hack/postgres-server.sh resume $PG_DIR)"
  hack/postgres-server.sh resume "$PG_DIR"
  heartbeat_run -v "watching conditions" -e "$EST_DEMO_RECOVERY" "$PG" \
    watch_until "$PG" Available True 300 || die "$PG did not regain Available after the server returned"
  info "Available: $(condition_of "$PG" Available)"
  info "conformance Jobs for $PG: $(kc get jobs -n "$NS" -l "memory.agentmem.io/adapter=$PG,app.kubernetes.io/component=conformance" --no-headers | wc -l)"
}

down() {
  say "removing the demo: namespace $NS, its PostgreSQL server, the operator, the cluster"
  if cluster_running; then
    KUBECTL="$(cat "$MAO_CLUSTER_DIR/bin-dir")/kubectl"
    heartbeat_run -v deleting -e "$EST_NAMESPACE_DELETE" "namespace $NS" \
      "$KUBECTL" delete namespace "$NS" --ignore-not-found --wait=true --timeout=5m
    heartbeat_run -v undeploying -e "$EST_DEPLOY" undeploy "$MAKE" --no-print-directory undeploy
  else
    info "no cluster running: nothing to delete in it"
  fi
  remove_pg
  rmdir "$DEMO_DIR" 2>/dev/null || true
  heartbeat_run -v stopping -e "$EST_CLUSTER_DOWN" cluster-down "$MAKE" --no-print-directory cluster-down
  kept_caches
}

# kept_caches says what stays on the machine after `down` so the next run is fast, how large
# it is, and the commands that remove it (docs/local-cluster.md, "Caches and removing them").
kept_caches() {
  local cache="${MAO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-adapter-operator}"
  du_of() { if [ -e "$1" ]; then du -sh "$1" 2>/dev/null | cut -f1; else echo "absent"; fi; }
  say "kept for the next run (without them the next make demo is a cold one, $EST_DEMO_COLD on 2 cores); to free the space:"
  info "$(printf '%-6s %s' "$(du_of "$MAO_CLUSTER_DIR")" "$MAO_CLUSTER_DIR: the stopped cluster's certificates, imported images and logs")"
  info "         rm -rf $MAO_CLUSTER_DIR"
  info "$(printf '%-6s %s' "$(du_of "$cache")" "$cache: Kubernetes, CoreDNS and other binaries built from source (MAO_CACHE_DIR)")"
  info "         rm -rf $cache"
  info "$(printf '%-6s %s' "$(du_of bin)" "$PWD/bin: controller-gen, golangci-lint, kal, logcheck, crd-ref-docs, the project's binaries")"
  info "         rm -rf $PWD/bin"
  info "Go's own build and module caches are shared with all Go work on this machine: go clean -cache -modcache"
  info "Debian packages the scripts installed when missing stay too: containerd, runc, containernetworking-plugins, iptables, iproute2, postgresql (make ci also redis-server and npm)"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 [up|down]" ;;
esac
