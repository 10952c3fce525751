// Package e2e holds the end-to-end suite that runs on the real single-node cluster of
// hack/cluster-up.sh: pods run in containerd through a real kubelet, Services answer
// through kube-proxy, and the scheduler is the real one. The suite is behind the e2e build
// tag so the unit run (go test ./...) does not start a cluster; run it with make test-e2e.
package e2e
