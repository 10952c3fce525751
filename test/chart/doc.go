// Package chart holds the tests that keep the Helm chart (charts/memory-adapter-operator) and
// the kustomize installer (config/, rendered by hack/render-install.sh) from drifting apart:
// both are rendered, default and renamed, with the monitoring namespace, with cert-manager and
// with the Prometheus Operator's objects, and compared object by object; the differences a
// Helm install has by nature are listed, each with its reason, and everything else must be
// equal. They also check that the chart's verbatim copies of config/ files are current.
//
// They need helm (hack/helm.sh builds it from the Go module proxy) and kubectl for kustomize
// ($KUBEBUILDER_ASSETS/kubectl, or hack/k8s-binaries.sh's); without either they fail, never
// skip.
package chart
