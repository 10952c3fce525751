// Package controller holds the memory adapter operator's reconcilers. Its envtest suite runs
// them against a real kube-apiserver and etcd (see suite_test.go for how the binaries are
// found).
package controller
