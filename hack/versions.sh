# Sourced, not run: exports every KEY=value of hack/versions.env that the environment does not
# already set, so scripts read the versions from one file and a caller can still override one
# for a single run (K8S_VERSION=v1.x.y hack/k8s-binaries.sh).
# shellcheck shell=bash
mao_versions_file="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/versions.env"
while IFS='=' read -r mao_key mao_value; do
  case "$mao_key" in '' | \#*) continue ;; esac
  if [ -z "${!mao_key:-}" ]; then
    export "$mao_key=$mao_value"
  fi
done <"$mao_versions_file"
unset mao_key mao_value mao_versions_file
