// Command cluster starts and stops a real single-node Kubernetes cluster on a bare machine:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet and
// kube-proxy as host processes, with pods on a CNI bridge in their own network namespaces.
//
// It exists because the end-to-end tests and the demo need pods that really run, and the
// machines this project is built on have no Docker engine, no registry and no internet: the
// Kubernetes binaries come from the Go module proxy (hack/k8s-binaries.sh) and containerd,
// runc and the CNI plugins from Debian. hack/cluster-up.sh installs those and then runs
// "cluster up"; hack/cluster-down.sh runs "cluster down".
//
// Besides the components, up installs the add-ons every real cluster has: cluster DNS
// (CoreDNS) and a default StorageClass served by local-path-provisioner. Their images are
// built by hack/cluster-up.sh and named by flags (-pause-image, -coredns-image,
// -local-path-image, -local-path-helper-image), whose versions come from hack/versions.env.
//
// Everything it starts is tracked by PID file in the state directory, and "down" removes
// every process, mount, iptables chain, network namespace and bridge the cluster created,
// then "verify-clean" (also used by the e2e suite) reports anything left behind.
package main
