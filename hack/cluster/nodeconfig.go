package main

import (
	"fmt"
	"path/filepath"
)

// cniBinDir is where Debian's containernetworking-plugins installs the plugins.
const cniBinDir = "/usr/lib/cni"

// writeNodeConfigs renders containerd's, the CNI network's, the kubelet's and kube-proxy's
// configuration into the state directory. Every path points inside it so the cluster never
// touches /etc/containerd, /etc/cni, /var/lib/kubelet or /run/netns of the host.
func (c *cluster) writeNodeConfigs(n node) error {
	cd := filepath.Join(n.dir, "containerd")
	// restrict_oom_score_adj: machines without CAP_SYS_RESOURCE cannot lower a container's
	// oom_score_adj below the parent's, and runc then fails to start any container.
	// netns_mounts_under_state_dir keeps pod network namespaces inside the state directory.
	containerd := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
`, filepath.Join(cd, "root"), filepath.Join(cd, "state"), n.containerdSock(), n.containerdSock()+".ttrpc",
		filepath.Join(cd, "opt"), c.images.pause, filepath.Join(cd, "runc"), cniBinDir, filepath.Join(n.dir, "cni", "net.d"))
	if err := writeFileAtomic(filepath.Join(cd, "config.toml"), []byte(containerd), 0o644); err != nil {
		return err
	}

	// ipMasq stays off: pods only talk to the node and to each other; kube-proxy's
	// masqueradeAll covers Service traffic. Fewer rules means less to clean up.
	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "mao",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, bridgeName, filepath.Join(n.dir, "cni", "ipam"), n.podCIDR)
	if err := writeFileAtomic(filepath.Join(n.dir, "cni", "net.d", "10-mao.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}

	pki := c.pkiDir()
	// cgroupRoot: every node's kubelet owns the pods under its own root and removes any
	// other pod cgroup it finds there, so nodes sharing the host's cgroups need one each.
	// failCgroupV1: false because these machines run cgroup v1. Image GC and disk eviction
	// are off: there is no registry to pull an evicted image back from. syncFrequency 10s
	// (default 1m, jittered up to 1.5m) bounds how late a changed Secret reaches a mounted
	// volume to about 15 s, so the e2e suite can renew an adapter certificate with a lifetime
	// of seconds and still prove the renewal lands before the old certificate ends.
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[10]s
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s
imageServiceEndpoint: unix://%[1]s
address: 0.0.0.0
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
tlsCertFile: %[4]s
tlsPrivateKeyFile: %[5]s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[6]s
authorization:
  mode: Webhook
clusterDomain: %[7]s
clusterDNS:
- %[9]s
podLogsDir: %[8]s
localStorageCapacityIsolation: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
serializeImagePulls: false
syncFrequency: 10s
maxPods: 110
staticPodPath: ""
resolvConf: /etc/resolv.conf
`, n.containerdSock(), kubeletPort, kubeletHealth,
		filepath.Join(pki, n.certStem("kubelet")+".crt"), filepath.Join(pki, n.certStem("kubelet")+".key"), filepath.Join(pki, "ca.crt"),
		clusterDomain, filepath.Join(n.dir, "pod-logs"), clusterDNSIP, n.cgroupRoot())
	if err := writeFileAtomic(filepath.Join(n.dir, "kubelet-config.yaml"), []byte(kubelet), 0o644); err != nil {
		return err
	}

	// masqueradeAll: pod -> Service -> pod on the same bridge only works without
	// br_netfilter if the reply is forced back through the host (SNAT).
	// conntrack maxPerCore 0 leaves the host's conntrack sysctls alone.
	proxy := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %[1]s
hostnameOverride: %[2]s
bindAddress: %[3]s
healthzBindAddress: %[3]s:%[4]d
metricsBindAddress: %[3]s:%[5]d
clientConnection:
  kubeconfig: %[6]s
iptables:
  masqueradeAll: true
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.podCIDR, n.name, n.proxyAddr(), proxyHealth, proxyMetrics, filepath.Join(c.dir, "kube-proxy.kubeconfig"))
	return writeFileAtomic(filepath.Join(n.dir, "kube-proxy-config.yaml"), []byte(proxy), 0o644)
}
